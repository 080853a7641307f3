/**
 * The cluster form of Benchstream's migrations (CLICKHOUSE_CLUSTER), made from the same files as the single-server
 * form, statement by statement:
 *
 *  - a table `t` becomes `t_local` (Replicated*MergeTree, its Keeper path per shard, `{replica}` from the server's
 *    macros, the deduplication window below) and `t` itself, a Distributed table over `t_local`: every reader (the
 *    read model, the views, Grafana, ad hoc SQL) keeps reading `t`, and writers insert into `t_local`
 *    (client.ts writeTable);
 *  - views and SQL functions are the same statements, created ON CLUSTER (views read the Distributed tables);
 *  - ALTERs of columns go to both tables, mutations and TTL to `t_local` only; an INSERT ... SELECT of a migration
 *    writes `t_local`.
 *
 * A statement of any other form is refused (BS_ERR_MIGRATION), never passed through: a new migration that needs
 * another rule fails the integration test (test/integration/clickhouse-cluster-sql.test.ts, which also parses every
 * statement of both forms with ClickHouse's own parser) instead of reaching a cluster half-replicated. Why one set of
 * files and a transform rather than a second set: docs/guides/deploy.md#clickhouse-cluster.
 */
import { BenchstreamError } from '../../core/errors.js'

/** Suffix of the replicated table behind each Distributed table. */
export const LOCAL_SUFFIX = '_local'

/**
 * Insert-deduplication records Keeper keeps per replicated table (and shard): the last this many insert tokens.
 * A processor replays a batch with its first token at most a few minutes after the first attempt (the consumer
 * group's session timeout, 30 s, plus a rebalance and re-reading the range; a held-back batch retries every
 * INSERT_RETRY_MAX_MS); meanwhile every partition inserts into the busiest tables up to about 5 times a second.
 * 100,000 covers 15 minutes of 22 partitions writing flat out (docs/design/exactly-once.md#replicated-tables).
 */
export const REPLICATED_DEDUPLICATION_WINDOW = 100_000
/**
 * ...and for this long, counted back from the newest insert of the table (not from the wall clock: a cluster nobody
 * writes to forgets nothing). 7 days: Kafka's default offsets.retention.minutes, how long a consumer group's
 * committed offsets, the flush intent among them, outlive the group.
 */
export const REPLICATED_DEDUPLICATION_WINDOW_SECONDS = 7 * 86_400

export interface ClusterTarget {
  /** Cluster name as the servers' remote_servers define it (CLICKHOUSE_CLUSTER). */
  cluster: string
  /** Benchstream's database (CLICKHOUSE_DATABASE). */
  database: string
}

/** The Keeper path of a replicated table: one per cluster, shard (a server macro), database and table. */
export function keeperPath(t: ClusterTarget, table: string): string {
  return `/clickhouse/${t.cluster}/tables/{shard}/${t.database}/${table}`
}

/** `db.name` -> `db.name_local`. */
export function localName(qualified: string): string {
  return `${qualified}${LOCAL_SUFFIX}`
}

/** The statements of a cluster for one single-server statement (database name already substituted). */
export function clusterStatements(statement: string, t: ClusterTarget): string[] {
  const sql = statement.trim()
  const db = escapeRegExp(t.database)
  // Benchstream's database or one of its companions (`<db>_meta`, the views query tools read: migration 0013), for
  // CREATE DATABASE and views; tables live in Benchstream's database only.
  const anyDb = `${db}(?:_[A-Za-z0-9]+)?`
  const on = `ON CLUSTER ${ident(t.cluster)}`
  let m: RegExpExecArray | null

  if ((m = new RegExp(`^(CREATE\\s+DATABASE\\s+IF\\s+NOT\\s+EXISTS\\s+${anyDb})$`, 'i').exec(sql)) !== null)
    return [`${m[1]} ${on}`]

  // CREATE [OR REPLACE] FUNCTION [IF NOT EXISTS] name AS ..., CREATE [OR REPLACE] VIEW [IF NOT EXISTS] db.v AS ...
  m = new RegExp(
    `^(CREATE\\s+(?:OR\\s+REPLACE\\s+)?(?:FUNCTION|VIEW)\\s+(?:IF\\s+NOT\\s+EXISTS\\s+)?` +
      `(?:[A-Za-z_]\\w*|${anyDb}\\.[A-Za-z_]\\w*))(\\s+AS\\b[\\s\\S]*)$`,
    'i',
  ).exec(sql)
  if (m !== null) return [`${m[1]} ${on}${m[2]}`]

  m = new RegExp(`^CREATE\\s+TABLE\\s+IF\\s+NOT\\s+EXISTS\\s+(${db}\\.([A-Za-z_]\\w*))\\s*\\(`, 'i').exec(sql)
  if (m !== null) return createTable(sql, m[0].length - 1, m[1]!, m[2]!, t, on)

  m = new RegExp(`^ALTER\\s+TABLE\\s+(${db}\\.[A-Za-z_]\\w*)\\s+([\\s\\S]*)$`, 'i').exec(sql)
  if (m !== null) {
    const [, table, actions] = m as unknown as [string, string, string]
    const local = `ALTER TABLE ${localName(table)} ${on} ${actions}`
    // Mutations, TTL and storage settings concern the data: the replicated table only.
    if (/^(UPDATE|DELETE|MODIFY\s+TTL|REMOVE\s+TTL|MODIFY\s+SETTING|MATERIALIZE)\b/i.test(actions)) return [local]
    if (/^(ADD|DROP|MODIFY|RENAME|COMMENT|CLEAR)\s+COLUMN\b/i.test(actions) && !/\b(UPDATE|DELETE)\b/i.test(actions))
      return [local, `ALTER TABLE ${table} ${on} ${actions}`]
    throw unsupported(sql, 'an ALTER TABLE that is neither column changes nor a mutation, TTL or setting')
  }

  m = new RegExp(`^INSERT\\s+INTO\\s+(${db}\\.[A-Za-z_]\\w*)(\\s[\\s\\S]*)$`, 'i').exec(sql)
  if (m !== null) return [`INSERT INTO ${localName(m[1]!)}${m[2]}`]

  throw unsupported(sql, 'a statement of a form it has no rule for')
}

function createTable(sql: string, open: number, table: string, name: string, t: ClusterTarget, on: string): string[] {
  const close = matchingParen(sql, open)
  const columns = sql.slice(open, close + 1)
  const rest = sql.slice(close + 1).trim()
  const engine = /^ENGINE\s*=\s*(\w*MergeTree)\s*(\(([^()]*)\))?\s*/i.exec(rest)
  if (engine === null) throw unsupported(sql, 'a table whose engine is not of the MergeTree family')
  const args = (engine[3] ?? '').trim()
  const replicated =
    `Replicated${engine[1]}(${sqlString(keeperPath(t, name + LOCAL_SUFFIX))}, '{replica}'` +
    `${args === '' ? '' : `, ${args}`})`
  const dedup =
    `replicated_deduplication_window = ${REPLICATED_DEDUPLICATION_WINDOW}, ` +
    `replicated_deduplication_window_seconds = ${REPLICATED_DEDUPLICATION_WINDOW_SECONDS}`
  let body = rest.slice(engine[0].length)
  const settings = /\bSETTINGS\s+([\s\S]*)$/i.exec(body)
  if (settings === null) body = `${body} SETTINGS ${dedup}`
  else {
    const kept = settings[1]!
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '' && !/^non_replicated_deduplication_window\s*=/i.test(s))
    body = `${body.slice(0, settings.index)}SETTINGS ${[...kept, dedup].join(', ')}`
  }
  return [
    `CREATE TABLE IF NOT EXISTS ${localName(table)} ${on} ${columns} ENGINE = ${replicated} ${body}`,
    `CREATE TABLE IF NOT EXISTS ${table} ${on} AS ${localName(table)} ` +
      `ENGINE = Distributed(${sqlString(t.cluster)}, ${sqlString(t.database)}, ${sqlString(name + LOCAL_SUFFIX)}, ` +
      'rand())',
  ]
}

/** Index of the parenthesis closing the one at `open`, skipping quoted text. */
function matchingParen(sql: string, open: number): number {
  let depth = 0
  for (let i = open; i < sql.length; i++) {
    const c = sql[i]
    if (c === "'" || c === '`' || c === '"') {
      const end = sql.indexOf(c, i + 1)
      if (end === -1) break
      i = end
    } else if (c === '(') depth++
    else if (c === ')' && --depth === 0) return i
  }
  throw unsupported(sql, 'a column list whose parentheses do not close')
}

function unsupported(sql: string, what: string): BenchstreamError {
  const head = sql.replace(/\s+/g, ' ').slice(0, 100)
  return new BenchstreamError(
    'BS_ERR_MIGRATION',
    `no cluster form for ${what}: "${head}". Give services/adapters/clickhouse/cluster-sql.ts a rule for it ` +
      '(and test/integration/clickhouse-cluster-sql.test.ts a case)',
  )
}

/** A cluster name as an identifier (the config allows letters, digits, _ and -). */
function ident(name: string): string {
  return /^[A-Za-z_]\w*$/.test(name) ? name : `\`${name}\``
}

function sqlString(s: string): string {
  return `'${s.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

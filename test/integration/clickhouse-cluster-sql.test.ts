/**
 * The cluster form of the migrations (CLICKHOUSE_CLUSTER, services/adapters/clickhouse/cluster-sql.ts): every
 * statement of both forms, and the statements the processor issues in a cluster, parsed by ClickHouse's own parser
 * (chDB's formatQuerySingleLine, the parser of the ClickHouse release chDB embeds); the cluster form replicated, read
 * through Distributed tables and ON CLUSTER throughout. No ClickHouse server or Keeper runs here: what a real cluster
 * does with these statements is not tested (docs/guides/deploy.md#clickhouse-cluster).
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { queryBind } from 'chdb'
import {
  REPLICATED_DEDUPLICATION_WINDOW,
  REPLICATED_DEDUPLICATION_WINDOW_SECONDS,
  clusterStatements,
} from '../../services/adapters/clickhouse/cluster-sql.js'
import {
  loadMigrations,
  migrationFrame,
  verifiedCountSql,
  writeTable,
} from '../../services/adapters/clickhouse/client.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { BenchstreamError } from '../../services/core/errors.js'

const DB = 'bs'
const CLUSTER = 'bs_cluster'
const ON = ` ON CLUSTER ${CLUSTER}`

/** ClickHouse's canonical one-line text of a statement; throws what the parser says when it is not valid. */
function canonical(sql: string): string {
  return queryBind('SELECT formatQuerySingleLine({q:String})', { q: sql }, 'TSVRaw').replace(/\n$/, '')
}

interface Statement {
  where: string
  sql: string
}

function statements(cluster: string | undefined): Statement[] {
  const frame = migrationFrame(DB, cluster)
  return [
    ...frame.create.map((sql, i) => ({ where: `migrate() create #${i + 1}`, sql })),
    ...loadMigrations(DB, { cluster }).flatMap((m) =>
      m.statements.map((sql, i) => ({ where: `${String(m.version).padStart(4, '0')}-${m.name} #${i + 1}`, sql })),
    ),
    ...[30, 0].flatMap((days) => frame.ttl(days).map((sql) => ({ where: `migrate() TTL ${days} days`, sql }))),
  ]
}

const single = statements(undefined)
/** The cluster form, each statement named after the single-server statement it comes from. */
const cluster = single.flatMap((s) =>
  clusterStatements(s.sql, { cluster: CLUSTER, database: DB }).map((sql) => ({ ...s, sql })),
)

test('migrate() runs the cluster form statement by statement', () => {
  const frame = migrationFrame(DB, CLUSTER)
  assert.deepEqual(
    [
      ...frame.create,
      ...loadMigrations(DB, { cluster: CLUSTER }).flatMap((m) => m.statements),
      ...frame.ttl(30),
      ...frame.ttl(0),
    ],
    cluster.map((s) => s.sql),
  )
})

function parsed(list: Statement[]): Array<Statement & { text: string }> {
  const failed: string[] = []
  const out = list.map((s) => {
    try {
      return { ...s, text: canonical(s.sql) }
    } catch (err) {
      failed.push(`${s.where}: ${(err as Error).message.split('\n')[0] ?? ''}\n  ${s.sql.slice(0, 200)}`)
      return { ...s, text: '' }
    }
  })
  assert.deepEqual(failed, [], `statements ClickHouse's parser refuses:\n${failed.join('\n')}`)
  return out
}

test('every statement of the single-server and the cluster form parses with ClickHouse’s own parser', () => {
  assert.ok(single.length > 50, `${single.length} statements`)
  parsed(single)
  parsed(cluster)
  // The parser is not lenient: a broken statement fails (negative control).
  assert.throws(() => canonical('CREATE TABLE bs.t ON CLUSTER c (a UInt8) ENGINE = ReplicatedMergeTree(ORDER BY a'))
})

test('the cluster form: each table replicated under a Keeper path per shard, read through a Distributed twin', () => {
  const one = parsed(single)
  const many = parsed(cluster)
  const created = (list: typeof one, pattern: RegExp): string[] =>
    list.flatMap((s) => {
      const m = pattern.exec(s.text)
      return m === null ? [] : [m[1]!]
    })
  const tables = created(one, /^CREATE TABLE IF NOT EXISTS bs\.(\w+) \(/)
  assert.ok(tables.includes('ops') && tables.includes('op_windows') && tables.includes('schema_migrations'))
  for (const t of tables) {
    const local = many.filter((s) => s.text.startsWith(`CREATE TABLE IF NOT EXISTS bs.${t}_local${ON} (`))
    assert.equal(local.length, 1, `one replicated table for ${t}`)
    const text = local[0]!.text
    assert.match(
      text,
      new RegExp(
        `ENGINE = Replicated\\w*MergeTree\\('/clickhouse/${CLUSTER}/tables/\\{shard\\}/bs/${t}_local', '\\{replica\\}'`,
      ),
    )
    assert.match(text, new RegExp(`replicated_deduplication_window = ${REPLICATED_DEDUPLICATION_WINDOW}\\b`))
    assert.match(
      text,
      new RegExp(`replicated_deduplication_window_seconds = ${REPLICATED_DEDUPLICATION_WINDOW_SECONDS}\\b`),
    )
    const dist = many.filter((s) => s.text.startsWith(`CREATE TABLE IF NOT EXISTS bs.${t}${ON} AS bs.${t}_local`))
    assert.equal(dist.length, 1, `one Distributed table for ${t}`)
    assert.match(dist[0]!.text, new RegExp(`ENGINE = Distributed\\('${CLUSTER}', 'bs', '${t}_local', rand\\(\\)\\)$`))
  }
  // Engine parameters survive: the version column of a ReplacingMergeTree.
  assert.ok(
    many.some((s) =>
      s.text.includes(
        `ReplicatedReplacingMergeTree('/clickhouse/${CLUSTER}/tables/{shard}/bs/experiments_local', ` +
          `'{replica}', version)`,
      ),
    ),
  )
  for (const s of many) {
    assert.doesNotMatch(s.text, /non_replicated_deduplication_window/, s.where)
    assert.doesNotMatch(s.text, /ENGINE = (Replacing|Summing|Aggregating|Collapsing)?MergeTree\b/, s.where)
    if (/^(CREATE|ALTER) /.test(s.text)) assert.ok(s.text.includes(ON), `${s.where} is not ON CLUSTER: ${s.text}`)
  }
})

test('views and SQL functions are the same statements ON CLUSTER; ALTERs reach both tables, mutations the data', () => {
  const one = parsed(single)
  const many = parsed(cluster)
  let views = 0
  for (const s of one.filter((x) => /^CREATE (OR REPLACE )?(VIEW|FUNCTION) /.test(x.text))) {
    const twin = many.filter((x) => x.where === s.where)
    assert.equal(twin.length, 1, s.where)
    assert.equal(twin[0]!.text.replace(ON, ''), s.text, s.where)
    views++
  }
  assert.ok(views > 20, `${views} views and functions`)
  for (const s of one.filter((x) => x.text.startsWith('ALTER TABLE '))) {
    const twins = many.filter((x) => x.where === s.where).map((x) => x.text)
    const table = /^ALTER TABLE bs\.(\w+)/.exec(s.text)![1]!
    const rest = s.text.slice(`ALTER TABLE bs.${table}`.length)
    const local = `ALTER TABLE bs.${table}_local${ON}${rest}`
    if (/^ \(?(UPDATE|DELETE|MODIFY TTL|REMOVE TTL)\b/.test(rest)) assert.deepEqual(twins, [local], s.where)
    else assert.deepEqual(twins, [local, `ALTER TABLE bs.${table}${ON}${rest}`], s.where)
  }
  // The one INSERT ... SELECT of a migration writes the replicated table.
  const inserts = many.filter((x) => x.text.startsWith('INSERT INTO '))
  assert.ok(inserts.length > 0 && inserts.every((x) => /^INSERT INTO bs\.\w+_local /.test(x.text)))
})

test('a statement the transform has no rule for is refused, never passed through', () => {
  const refused = (sql: string): void =>
    assert.throws(
      () => clusterStatements(sql, { cluster: CLUSTER, database: DB }),
      (err: unknown) =>
        err instanceof BenchstreamError && err.code === 'BS_ERR_MIGRATION' && /no cluster form/.test(err.message),
      sql,
    )
  refused('CREATE TABLE IF NOT EXISTS bs.t (a UInt8) ENGINE = Memory')
  refused('DROP TABLE bs.t')
  refused('ALTER TABLE bs.t ADD INDEX i a TYPE minmax')
  refused('CREATE MATERIALIZED VIEW bs.mv TO bs.t AS SELECT 1')
  refused('RENAME TABLE bs.a TO bs.b')
})

test('in a cluster the processor inserts into replicated tables and counts a verified write on every replica', () => {
  const c = { cluster: CLUSTER }
  const one = { cluster: undefined }
  assert.equal(writeTable(c, 'bs.ops'), 'bs.ops_local')
  assert.equal(writeTable(one, 'bs.ops'), 'bs.ops')
  // The condition of a window step (services/adapters/clickhouse/window-store.ts), with its parameters.
  const where =
    'run_id IN {runs:Array(String)} AND src_partition = {p:UInt16} AND src_first_offset = {a:UInt64} ' +
    'AND src_last_offset = {b:UInt64}'
  assert.equal(
    canonical(verifiedCountSql(one, 'bs.op_windows', where)).startsWith('SELECT count() AS n FROM bs.op_windows WHERE'),
    true,
  )
  const count = canonical(verifiedCountSql(c, 'bs.op_windows', where))
  assert.match(count, new RegExp(`clusterAllReplicas\\('${CLUSTER}', bs, op_windows_local\\)`))
  assert.match(count, /^SELECT max\(c\) AS n FROM \(SELECT hostName\(\) AS h, count\(\) AS c FROM /)
})

test('CLICKHOUSE_CLUSTER needs CLICKHOUSE_URL', () => {
  assert.throws(
    () => readInfraConfig({ CLICKHOUSE_CLUSTER: 'c' }),
    (err: unknown) =>
      err instanceof BenchstreamError && err.code === 'BS_ERR_CONFIG' && /needs CLICKHOUSE_URL/.test(err.message),
  )
  const cfg = readInfraConfig({ CLICKHOUSE_CLUSTER: 'c', CLICKHOUSE_URL: 'http://ch:8123' })
  assert.equal(cfg.clickhouse.cluster, 'c')
  assert.equal(readInfraConfig({}).clickhouse.cluster, undefined)
  assert.throws(
    () => readInfraConfig({ CLICKHOUSE_CLUSTER: 'a b', CLICKHOUSE_URL: 'http://ch:8123' }),
    /CLICKHOUSE_CLUSTER/,
  )
})

/**
 * ClickHouse adapter: one @clickhouse/client for both modes. With
 * CLICKHOUSE_URL unset it runs the embedded chDB engine in this process
 * (chdb/connection); otherwise it talks HTTP to a server. Nothing above this
 * file knows which.
 *
 * chDB binds its data directory to one process: open it once, in the process
 * that runs the processor and the API, and let other processes use the API.
 */
import { spawnSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import {
  ClickHouseLogLevel,
  createClient,
  type ClickHouseClient,
  type ClickHouseClientConfigOptions,
} from '@clickhouse/client'
import { createChdbConnection } from 'chdb/connection'
import { BenchstreamError } from '../../core/errors.js'
import type { ClickHouseConfig } from '../../common/infra-config.js'
import { repoRoot } from '../../common/repo-root.js'
import { clusterStatements, localName } from './cluster-sql.js'

export interface ClickHouse {
  client: ClickHouseClient
  database: string
  mode: 'embedded' | 'server'
  /** The cluster the tables are replicated over (CLICKHOUSE_CLUSTER); undefined on one server or embedded. */
  cluster: string | undefined
  /** Where the data is: the embedded directory or the server URL. */
  location: string
  close(): Promise<void>
}

/**
 * The client's own logger is off: it prints every failed request with a
 * stack to stderr, while our callers get the same error thrown and report it
 * once, in our logger or as a one-line CLI error.
 */
export const QUIET = { level: ClickHouseLogLevel.OFF }

/** The connection port of @clickhouse/client; chDB and HTTP both implement it. */
export type Connection = NonNullable<ClickHouseClientConfigOptions['connection']>

export function openClickHouse(
  cfg: ClickHouseConfig,
  opts: { wrapConnection?: (c: Connection) => Connection } = {},
): ClickHouse {
  if (cfg.url === undefined) {
    ensureWritableDir(cfg.embeddedPath)
    assertNotLocked(cfg.embeddedPath)
    openedHere.add(path.resolve(cfg.embeddedPath))
    // chdb implements the Connection contract of @clickhouse/client-common; the
    // client bundles its own copy of those types, identical in shape.
    const raw = retryReadsRacingMerges(
      explainLockedDirectory(
        createChdbConnection({ path: cfg.embeddedPath }) as unknown as Connection,
        cfg.embeddedPath,
      ),
    )
    const connection = opts.wrapConnection === undefined ? raw : opts.wrapConnection(raw)
    const client = createClient({ connection, log: QUIET })
    return {
      client,
      database: cfg.database,
      mode: 'embedded',
      cluster: undefined,
      location: cfg.embeddedPath,
      close: () => client.close(),
    }
  }
  const client = createClient({
    url: cfg.url,
    username: cfg.user,
    password: cfg.password,
    request_timeout: 60_000,
    log: QUIET,
    ...(cfg.cluster === undefined ? {} : { clickhouse_settings: CLUSTER_SETTINGS }),
    // https:// with a CA of our own (CLICKHOUSE_CA_FILE); without one, Node's trusted CAs verify the server.
    ...(cfg.caPem === undefined ? {} : { tls: { ca_cert: Buffer.from(cfg.caPem) } }),
  })
  return {
    client,
    database: cfg.database,
    mode: 'server',
    cluster: cfg.cluster,
    location: withoutCredentials(cfg.url),
    close: () => client.close(),
  }
}

/**
 * Settings of every request to a cluster. insert_quorum 'auto': an insert returns once a majority of the shard's
 * replicas have its part, so a batch whose offsets are then committed in Kafka cannot be lost with one replica (with
 * the default 1, the replica that took it could fail before any other fetched it, and its token would still drop the
 * replay). distributed_product_mode 'global': an IN or JOIN over a Distributed table inside a query over another
 * (alerts.ts, a migration's INSERT ... SELECT) is evaluated once on the initiator rather than refused once there
 * is more than one shard.
 */
export const CLUSTER_SETTINGS = { insert_quorum: 'auto', distributed_product_mode: 'global' } as const

/**
 * The table a writer inserts into: `db.t` itself on one server or embedded, its replicated local table `db.t_local`
 * in a cluster (`db.t` is then the Distributed table readers read). One shard (migrate() checks), so an insert on
 * any replica lands in the shard's one deduplication log, and a replay on another replica is dropped as well.
 */
export function writeTable(ch: Pick<ClickHouse, 'cluster'>, qualified: string): string {
  return ch.cluster === undefined ? qualified : localName(qualified)
}

/**
 * Counts rows of `db.t` matching `where` where an insert just made is sure to be seen. One server: the table. A
 * cluster: the local table on every replica of the cluster, taking the replica with the most (the one that took the
 * insert has it; another may not have fetched it yet, and a count of 0 from a replica that lags would have the
 * processor's verified write write the batch again). A replica that cannot be reached fails the query, and the
 * write is retried.
 */
export function verifiedCountSql(ch: Pick<ClickHouse, 'cluster'>, qualified: string, where: string): string {
  if (ch.cluster === undefined) return `SELECT count() AS n FROM ${qualified} WHERE ${where}`
  const [db, table] = qualified.split('.') as [string, string]
  return (
    `SELECT max(c) AS n FROM (SELECT hostName() AS h, count() AS c FROM ` +
    `clusterAllReplicas(${sqlQuote(ch.cluster)}, ${db}, ${localName(table)}) WHERE ${where} GROUP BY h)`
  )
}

function sqlQuote(s: string): string {
  return `'${s.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`
}

/** A URL as it may be shown (status, logs, errors): user and password in it are left out. */
export function withoutCredentials(url: string): string {
  try {
    const u = new URL(url)
    if (u.username === '' && u.password === '') return url
    u.username = ''
    u.password = ''
    return u.toString()
  } catch {
    return url.replace(/\/\/[^/@]*@/, '//')
  }
}

/**
 * chDB opens its directory on the first query and fails with a bare
 * "Failed to create connection" when another process holds it (a server,
 * a demo or a test on the same BENCHSTREAM_DATA_DIR). Say that, and the way
 * out, in our own error.
 */
function explainLockedDirectory(raw: Connection, dir: string): Connection {
  const translate = (err: unknown): unknown =>
    (err as Error | undefined)?.constructor.name === 'ChdbConnectionError' ? lockedError(dir, err) : err
  return new Proxy(raw, {
    get(target, prop, receiver) {
      const v: unknown = Reflect.get(target, prop, receiver)
      if (typeof v !== 'function') return v
      return (...args: unknown[]): unknown => {
        try {
          const r: unknown = v.apply(target, args)
          return r instanceof Promise ? r.catch((err: unknown) => Promise.reject(translate(err))) : r
        } catch (err) {
          throw translate(err)
        }
      }
    },
  })
}

/** How often a read is tried again after it raced a merge (see retryReadsRacingMerges). */
export const MERGE_RACE_RETRIES = 2
let mergeRaceRetries = 0
/** Reads tried again after racing a merge, since the process started: counted, never hidden. */
export function mergeRaceRetryCount(): number {
  return mergeRaceRetries
}

/**
 * The embedded engine runs with chDB's old_parts_lifetime = 0: a part merged
 * away is deleted at once, and a read that had already chosen it fails now and
 * then with FILE_DOESNT_EXIST, "Cannot open file <part>/data.bin ... while
 * reading from part" (seen on CI in the alert evaluator's read of
 * run_settings, and in a bench's watch query, each while runs were being
 * written). The data is all there, in the merged part; the same read again
 * sees it. So a query (reads only: inserts and commands go through other
 * methods) that fails exactly so is run again, at most MERGE_RACE_RETRIES
 * times, and counted. Any other error, and a third failure, reach the caller
 * unchanged.
 */
export function retryReadsRacingMerges(raw: Connection): Connection {
  const query = raw.query.bind(raw)
  const wrapped: Connection['query'] = async (params) => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await query(params)
      } catch (err) {
        if (attempt >= MERGE_RACE_RETRIES || !isMergeRace(err)) throw err
        mergeRaceRetries++
      }
    }
  }
  return new Proxy(raw, {
    get: (target, prop, receiver) => (prop === 'query' ? wrapped : (Reflect.get(target, prop, receiver) as unknown)),
  })
}

function isMergeRace(err: unknown): boolean {
  const message = String((err as Error | undefined)?.message ?? '')
  const code = (err as { code?: unknown } | undefined)?.code
  return (
    /while reading from part/.test(message) &&
    (code === '107' || /Cannot open file .*No such file or directory/s.test(message))
  )
}

/** Embedded directories this process has opened. */
const openedHere = new Set<string>()

function lockedError(dir: string, cause?: unknown): BenchstreamError {
  return new BenchstreamError(
    'BS_ERR_CONFIG',
    `cannot open the embedded ClickHouse in ${dir}: another process holds it (a running benchstream ` +
      `server or demo on the same BENCHSTREAM_DATA_DIR?). Read commands reach a running server through ` +
      `its API by themselves; otherwise set BENCHSTREAM_API_URL, stop that process, or use another ` +
      `BENCHSTREAM_DATA_DIR`,
    cause === undefined ? undefined : { cause },
  )
}

/**
 * ClickHouse holds an flock on `<dir>/status` while it runs. Trying the lock
 * first (util-linux flock, without waiting) lets us refuse with our own
 * words before chDB prints its own error to the terminal. Without the flock
 * tool the check is skipped and chDB's error is translated instead.
 */
function assertNotLocked(dir: string): void {
  const status = path.join(dir, 'status')
  // chDB shares one engine per directory inside a process: our own lock is no obstacle.
  if (openedHere.has(path.resolve(dir)) || !existsSync(status)) return
  const r = spawnSync('flock', ['--nonblock', '--conflict-exit-code', '75', status, 'true'], {
    stdio: 'ignore',
    timeout: 5000,
  })
  if (r.status === 75) throw lockedError(dir)
}

/**
 * The embedded engine's directory must exist and be writable before chDB
 * opens it. Created one level at a time: node's recursive mkdir loops
 * forever on some unusable paths (under /proc, for one) instead of failing.
 */
function ensureWritableDir(dir: string): void {
  try {
    const parts = path.resolve(dir).split(path.sep)
    for (let i = 2; i <= parts.length; i++) {
      const p = parts.slice(0, i).join(path.sep)
      try {
        mkdirSync(p)
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
      }
    }
    const probe = path.join(dir, `.benchstream-write-probe-${process.pid}`)
    writeFileSync(probe, '')
    rmSync(probe)
  } catch (err) {
    throw new BenchstreamError(
      'BS_ERR_CONFIG',
      `BENCHSTREAM_DATA_DIR: the embedded ClickHouse directory ${dir} cannot be created or written ` +
        `(${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); set BENCHSTREAM_DATA_DIR ` +
        `to a writable directory`,
      { cause: err },
    )
  }
}

interface Migration {
  version: number
  name: string
  statements: string[]
}

/**
 * Reads schemas/clickhouse/NNNN-name.sql in order; `{db}` becomes the database name. With a cluster, each statement
 * becomes its cluster form (cluster-sql.ts).
 */
export function loadMigrations(
  database: string,
  opts: { cluster?: string | undefined; dir?: string } = {},
): Migration[] {
  const dir = opts.dir ?? path.join(repoRoot(), 'schemas', 'clickhouse')
  const cluster = opts.cluster
  return readdirSync(dir)
    .filter((f) => /^\d{4}-[a-z0-9-]+\.sql$/.test(f))
    .sort()
    .map((file) => {
      const sql = readFileSync(path.join(dir, file), 'utf8')
        .split('\n')
        .filter((l) => !l.trimStart().startsWith('--'))
        .join('\n')
        .replaceAll('{db}', database)
      const statements = sql
        .split(/;\s*(?:\n|$)/)
        .map((s) => s.trim())
        .filter((s) => s !== '')
      return {
        version: Number(file.slice(0, 4)),
        name: file.slice(5, -4),
        statements:
          cluster === undefined ? statements : statements.flatMap((s) => clusterStatements(s, { cluster, database })),
      }
    })
}

/**
 * Applies the migrations not yet recorded in `schema_migrations`. Every
 * statement is idempotent (IF NOT EXISTS), so a migration interrupted half
 * way simply runs again. Returns the versions applied now.
 */
export async function migrate(
  ch: ClickHouse,
  opts: { opsTtlDays: number; lockStaleMs?: number; lockWaitMs?: number },
): Promise<number[]> {
  const db = ch.database
  const frame = migrationFrame(db, ch.cluster)
  const applied: number[] = []
  try {
    if (ch.cluster !== undefined) await checkCluster(ch, ch.cluster)
    await withMigrationLock(ch, opts, async () => {
      for (const query of frame.create) await ch.client.command({ query })
      const rs = await ch.client.query({
        query: `SELECT DISTINCT version FROM ${db}.schema_migrations`,
        format: 'JSONEachRow',
      })
      const done = new Set((await rs.json<{ version: number }>()).map((r) => Number(r.version)))
      for (const m of loadMigrations(db, { cluster: ch.cluster })) {
        if (done.has(m.version)) continue
        for (const statement of m.statements) await ch.client.command({ query: statement })
        await ch.client.insert({
          table: writeTable(ch, `${db}.schema_migrations`),
          values: [{ version: m.version, name: m.name }],
          format: 'JSONEachRow',
        })
        applied.push(m.version)
      }
      // TTL follows the configuration on every start: it can be changed or switched off later.
      for (const query of frame.ttl(opts.opsTtlDays))
        await ch.client.command({ query }).catch((err: unknown) => {
          // REMOVE TTL on a table that has none is an error in ClickHouse; that is the state we want.
          if (opts.opsTtlDays > 0 || !String((err as Error).message).includes('TTL')) throw err
        })
    })
  } catch (err) {
    if (err instanceof BenchstreamError) throw err
    throw new BenchstreamError(
      'BS_ERR_MIGRATION',
      `applying the ClickHouse schema to database ${db} at ${ch.location} failed: ${(err as Error).message}`,
      { cause: err },
    )
  }
  return applied
}

/** A migration lock older than this (by the server's clock) was left by a process that died migrating: taken over. */
export const MIGRATION_LOCK_STALE_MS = 120_000
/** How long migrate() waits for another process's migration before it gives up (BS_ERR_MIGRATION). */
export const MIGRATION_LOCK_WAIT_MS = 300_000
/** The lock's table, beside schema_migrations. */
export const MIGRATION_LOCK_TABLE = 'schema_migrations_lock'

/**
 * Server mode: one process migrates a database at a time. Several servers start at once against one ClickHouse (two
 * replicas, a Deployment's pods), and interleaved, their migrations went wrong: one re-applied an older migration's
 * CREATE OR REPLACE VIEW after the other had applied a newer one, so a later view over it failed (UNKNOWN_IDENTIFIER,
 * 1 start in 8 in a test of two at once), and the older definition could stay. The lock is a table that only one
 * CREATE TABLE (without IF NOT EXISTS) can make, dropped when the migrations are done; one older than
 * MIGRATION_LOCK_STALE_MS, by the server's clock, is renamed away (one waiter wins the rename) and taken. Embedded:
 * one process owns the directory, no lock. A cluster: not locked (a lock on one host would not exclude the others;
 * ON CLUSTER statements queue one by one in Keeper, the migrations as a whole do not): docs/guides/deploy.md.
 */
async function withMigrationLock(
  ch: ClickHouse,
  opts: { lockStaleMs?: number; lockWaitMs?: number },
  fn: () => Promise<void>,
): Promise<void> {
  if (ch.mode !== 'server' || ch.cluster !== undefined) return fn()
  const db = ch.database
  const lock = `${db}.${MIGRATION_LOCK_TABLE}`
  const staleMs = opts.lockStaleMs ?? MIGRATION_LOCK_STALE_MS
  const deadline = Date.now() + (opts.lockWaitMs ?? MIGRATION_LOCK_WAIT_MS)
  await ch.client.command({ query: `CREATE DATABASE IF NOT EXISTS ${db}` })
  for (;;) {
    try {
      await ch.client.command({ query: `CREATE TABLE ${lock} (owner String) ENGINE = Memory` })
      break
    } catch (err) {
      // 57: TABLE_ALREADY_EXISTS, another process migrates.
      if ((err as { code?: unknown }).code !== '57') throw err
    }
    const [held] = await queryRows<{ age_ms: number | string }>(
      ch,
      `SELECT dateDiff('millisecond', metadata_modification_time, now64(3)) AS age_ms FROM system.tables
       WHERE database = {d:String} AND name = {t:String}`,
      { d: db, t: MIGRATION_LOCK_TABLE },
    )
    if (held !== undefined && Number(held.age_ms) > staleMs) {
      const aside = `${lock}_stale_${randomUUID().replaceAll('-', '')}`
      // Only one waiter's rename finds the table; the others' fail and they try to create it again.
      const renamed = await ch.client.command({ query: `RENAME TABLE ${lock} TO ${aside}` }).then(
        () => true,
        () => false,
      )
      if (renamed) await ch.client.command({ query: `DROP TABLE IF EXISTS ${aside}` })
      continue
    }
    if (Date.now() > deadline)
      throw new BenchstreamError(
        'BS_ERR_MIGRATION',
        `another process has been applying the ClickHouse schema to database ${db} at ${ch.location} for longer ` +
          `than this one waited (table ${lock} exists); if no process is migrating, it is taken over once it is ` +
          `${Math.round(staleMs / 1000)} s old, or drop it`,
      )
    await new Promise((r) => setTimeout(r, 250))
  }
  try {
    await fn()
  } finally {
    // A drop that fails (the server gone) leaves a lock the next process takes over once it is stale.
    await ch.client.command({ query: `DROP TABLE IF EXISTS ${lock}` }).catch(() => undefined)
  }
}

/**
 * What migrate() runs around the migrations, for one server or in a cluster's form: the database and the table of
 * applied versions first, the TTL of raw events (BENCHSTREAM_OPS_TTL_DAYS, 0 = none) last.
 */
export function migrationFrame(
  database: string,
  cluster: string | undefined,
): { create: string[]; ttl: (days: number) => string[] } {
  const form = (sql: string): string[] =>
    cluster === undefined ? [sql] : clusterStatements(sql, { cluster, database })
  return {
    create: [
      ...form(`CREATE DATABASE IF NOT EXISTS ${database}`),
      ...form(
        `CREATE TABLE IF NOT EXISTS ${database}.schema_migrations (version UInt32, name String, applied_at ` +
          `DateTime64(3, 'UTC') DEFAULT now64(3)) ENGINE = MergeTree ORDER BY version`,
      ),
    ],
    ttl: (days) =>
      form(
        days > 0
          ? `ALTER TABLE ${database}.ops MODIFY TTL toDateTime(start) + INTERVAL ${days} DAY`
          : `ALTER TABLE ${database}.ops REMOVE TTL`,
      ),
  }
}

/**
 * The cluster must be defined on the server we talk to, and have one shard: the processor's inserts go to the local
 * tables of whichever replica takes them, and only within one shard does a replay meet the first attempt's token
 * (docs/guides/deploy.md#clickhouse-cluster).
 */
async function checkCluster(ch: ClickHouse, cluster: string): Promise<void> {
  const [r] = await queryRows<{ shards: number | string; replicas: number | string; known: string[] }>(
    ch,
    `SELECT uniqExactIf(shard_num, cluster = {c:String}) AS shards, countIf(cluster = {c:String}) AS replicas,
            groupUniqArray(cluster) AS known FROM system.clusters`,
    { c: cluster },
  )
  const shards = Number(r?.shards ?? 0)
  if (shards === 0)
    throw new BenchstreamError(
      'BS_ERR_CONFIG',
      `CLICKHOUSE_CLUSTER=${cluster}: the server at ${ch.location} has no such cluster in its remote_servers ` +
        `(it has: ${(r?.known ?? []).join(', ') || 'none'})`,
    )
  if (shards > 1)
    throw new BenchstreamError(
      'BS_ERR_CONFIG',
      `CLICKHOUSE_CLUSTER=${cluster} has ${shards} shards; Benchstream's exactly-once writes need one shard ` +
        `(any number of replicas): a replayed batch must reach the deduplication log of the first attempt's shard`,
    )
}

/** Runs a query and returns its rows as objects. */
export async function queryRows<T>(ch: ClickHouse, query: string, params: Record<string, unknown> = {}): Promise<T[]> {
  const rs = await ch.client.query({ query, query_params: params, format: 'JSONEachRow' })
  return rs.json<T>()
}

/**
 * `postgres`: a real PostgreSQL server through node-postgres, with YCSB's
 * JDBC layout: one table (the workload's `table`) with a `ycsb_key` primary
 * key and one TEXT column per field (field0 .. field{fieldcount-1}).
 *
 * Every statement is parameterized and named, so each pooled connection
 * parses and plans it once and then only binds and executes. Names are
 * handed out per distinct SQL text: a read of one field and a read of all
 * fields are two statements.
 *
 * The key column is created with COLLATE "C": scans then follow byte order
 * whatever the database's locale, the same order as the redis binding's
 * ZRANGEBYLEX index and the memory binding, so one workload scans the same
 * records on every binding. A table created earlier (by YCSB's JDBC binding,
 * say) is used as it is.
 *
 * Buffer cache hits are the server's business and not visible per
 * statement, so the cache outcome is UNKNOWN; pg_stat_database's blks_hit and
 * blks_read are sampled instead (sampleServerMetrics).
 */
import { Pool, type PoolConfig } from 'pg'
import { BenchstreamError } from '../../core/errors.js'
import type { FieldValues } from '../../core/workload/workload-types.js'
import { statusOf, valuesBytes, type Binding, type OpResult } from '../../core/ports/binding.js'

export const KEY_COLUMN = 'ycsb_key'

export interface PostgresBindingConfig {
  /** Connection string. @default 'postgres://postgres@127.0.0.1:5432/postgres' */
  url: string
  /** Pool connections. @default the driver's thread count */
  poolSize: number
  /** The workload's table, created in init() when missing. @default 'usertable' */
  table: string
  /** Field columns created with the table: fieldNamePrefix + 0 .. fieldCount - 1. */
  fieldCount: number
  /** @default 'field' */
  fieldNamePrefix: string
}

const ok = (bytes: number): OpResult => ({ status: 'OK', cache: 'UNKNOWN', bytes })
const NOT_FOUND: OpResult = { status: 'NOT_FOUND', cache: 'UNKNOWN', bytes: 0 }
const failed = (err: unknown): OpResult => ({ status: statusOf(err), cache: 'UNKNOWN', bytes: 0 })

/** SQLSTATEs of a concurrent CREATE TABLE IF NOT EXISTS losing the race (unique_violation, duplicate_table). */
const CREATE_RACE_CODES = new Set(['23505', '42P07'])

interface Statement {
  name: string
  text: string
}

export class PostgresBinding implements Binding {
  readonly name = 'postgres'
  private pool: Pool | undefined
  /** Statement cache: shape key -> named statement. */
  private readonly statements = new Map<string, Statement>()

  constructor(readonly config: Readonly<PostgresBindingConfig>) {}

  async init(): Promise<void> {
    const c = this.config
    const poolConfig: PoolConfig = { connectionString: c.url, max: c.poolSize }
    const pool = new Pool(poolConfig)
    // An idle connection dropped by the server emits here; without a
    // listener Node would crash the driver. The next query reconnects.
    pool.on('error', () => undefined)
    const columns = Array.from({ length: c.fieldCount }, (_, i) => `${ident(c.fieldNamePrefix + i)} TEXT`)
    try {
      await pool.query(
        `CREATE TABLE IF NOT EXISTS ${ident(c.table)} (${KEY_COLUMN} VARCHAR(255) COLLATE "C" PRIMARY ` +
          `KEY, ${columns.join(', ')})`,
      )
    } catch (err) {
      const code = (err as { code?: unknown }).code
      if (typeof code !== 'string' || !CREATE_RACE_CODES.has(code)) {
        await pool.end().catch(() => undefined)
        throw new BenchstreamError(
          'BS_ERR_BINDING',
          `postgres: cannot use ${redactUrl(c.url)} (table ${c.table}): ${(err as Error).message}; start ` +
            `a server or set postgres.url (or postgres.host, postgres.port, postgres.user, postgres.password, ` +
            `postgres.database)`,
          { cause: err, retryable: true },
        )
      }
    }
    this.pool = pool
  }

  private get db(): Pool {
    if (this.pool === undefined) throw new BenchstreamError('BS_ERR_BINDING', 'postgres binding used before init()')
    return this.pool
  }

  /** The named statement for a shape, built on first use. */
  private statement(shape: string, build: () => string): Statement {
    let s = this.statements.get(shape)
    if (s === undefined) {
      s = { name: `bs_${this.statements.size}`, text: build() }
      this.statements.set(shape, s)
    }
    return s
  }

  async read(table: string, key: string, fields: string[] | undefined): Promise<OpResult> {
    const s = this.statement(
      `r\0${table}\0${fields?.join('\0') ?? '*'}`,
      () => `SELECT ${columnList(fields)} FROM ${ident(table)} WHERE ${KEY_COLUMN} = $1`,
    )
    try {
      const res = await this.db.query<Record<string, unknown>>({ name: s.name, text: s.text, values: [key] })
      const row = res.rows[0]
      return row === undefined ? NOT_FOUND : ok(rowBytes(row))
    } catch (err) {
      return failed(err)
    }
  }

  async scan(table: string, startKey: string, count: number, fields: string[] | undefined): Promise<OpResult> {
    const s = this.statement(
      `s\0${table}\0${fields?.join('\0') ?? '*'}`,
      () =>
        `SELECT ${columnList(fields)} FROM ${ident(table)} WHERE ${KEY_COLUMN} >= $1 ORDER BY ${KEY_COLUMN} LIMIT $2`,
    )
    try {
      const res = await this.db.query<Record<string, unknown>>({
        name: s.name,
        text: s.text,
        values: [startKey, count],
      })
      let bytes = 0
      for (const row of res.rows) bytes += rowBytes(row)
      return ok(bytes)
    } catch (err) {
      return failed(err)
    }
  }

  async update(table: string, key: string, values: FieldValues): Promise<OpResult> {
    const names = Object.keys(values)
    const s = this.statement(
      `u\0${table}\0${names.join('\0')}`,
      () =>
        `UPDATE ${ident(table)} SET ${names.map((f, i) => `${ident(f)} = $${i + 2}`).join(', ')} WHERE ` +
        `${KEY_COLUMN} = $1`,
    )
    try {
      const res = await this.db.query({ name: s.name, text: s.text, values: [key, ...names.map((f) => values[f])] })
      return res.rowCount === 0 ? NOT_FOUND : ok(valuesBytes(values))
    } catch (err) {
      return failed(err)
    }
  }

  async insert(table: string, key: string, values: FieldValues): Promise<OpResult> {
    const names = Object.keys(values)
    const s = this.statement(
      `i\0${table}\0${names.join('\0')}`,
      () =>
        `INSERT INTO ${ident(table)} (${[KEY_COLUMN, ...names.map(ident)].join(', ')}) ` +
        `VALUES (${[KEY_COLUMN, ...names].map((_, i) => `$${i + 1}`).join(', ')})`,
    )
    try {
      await this.db.query({ name: s.name, text: s.text, values: [key, ...names.map((f) => values[f])] })
      return ok(valuesBytes(values))
    } catch (err) {
      return failed(err)
    }
  }

  async delete(table: string, key: string): Promise<OpResult> {
    const s = this.statement(`d\0${table}`, () => `DELETE FROM ${ident(table)} WHERE ${KEY_COLUMN} = $1`)
    try {
      const res = await this.db.query({ name: s.name, text: s.text, values: [key] })
      return res.rowCount === 0 ? NOT_FOUND : ok(0)
    } catch (err) {
      return failed(err)
    }
  }

  /** Cumulative blks_hit and blks_read of the current database from pg_stat_database. */
  async sampleServerMetrics(): Promise<{ source: string; values: Record<string, number> }> {
    const res = await this.db.query<{ blks_hit: string; blks_read: string }>({
      name: 'bs_stat_database',
      text: 'SELECT blks_hit, blks_read FROM pg_stat_database WHERE datname = current_database()',
    })
    const row = res.rows[0]
    if (row === undefined)
      throw new BenchstreamError('BS_ERR_BINDING', 'postgres: pg_stat_database has no row for the current database')
    return { source: 'postgres', values: { blks_hit: Number(row.blks_hit), blks_read: Number(row.blks_read) } }
  }

  async cleanup(): Promise<void> {
    const pool = this.pool
    this.pool = undefined
    await pool?.end()
  }
}

/** A quoted identifier: any table or field name works, and none can inject SQL. */
export function ident(name: string): string {
  return `"${name.replace(/"/g, '""')}"`
}

function columnList(fields: string[] | undefined): string {
  return fields === undefined ? '*' : fields.map(ident).join(', ')
}

/** Payload bytes of a row: the field values, not the key. */
function rowBytes(row: Record<string, unknown>): number {
  let n = 0
  for (const col in row) {
    if (col === KEY_COLUMN) continue
    const v = row[col]
    if (typeof v === 'string') n += v.length
  }
  return n
}

/** The URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url)
    if (u.password !== '') u.password = '***'
    return u.toString()
  } catch {
    return '(unparsable postgres.url)'
  }
}

/**
 * The ad hoc SQL guard's check (sql-guard.ts), built on ClickHouse's parser, never on regexes over the user's text:
 * formatQuerySingleLine (one statement), EXPLAIN AST (a single SELECT; functions and tables named) and EXPLAIN QUERY
 * TREE (every table resolved inside the benchstream database). What readonly=1 leaves open is refused here.
 */
import type { BenchstreamError } from '../../core/errors.js'
import {
  ALLOWED_FORMATS,
  ALLOWED_TABLE_FUNCTIONS,
  BINARY_FORMATS,
  DENIED_FUNCTIONS,
  MIRRORED_SYSTEM_TABLES,
  metaDatabase,
} from './sql-guard-allowed.js'
import type { GuardConnection } from './sql-guard-connections.js'
import { failed, refused } from './sql-guard-errors.js'

/** Refuses anything but one SELECT over one database, counting refusals by rule. */
export class SqlCheck {
  /** Queries refused by the check, by rule (metrics, tests). */
  readonly refusedByRule: Record<string, number> = {}

  constructor(private readonly database: string) {}

  /**
   * Refuses anything but one SELECT over the benchstream database; returns the statement to run and its output format.
   */
  async check(conn: GuardConnection, sql: string): Promise<{ query: string; format: string | undefined }> {
    let canonical: string
    try {
      // The user's text is a bound parameter: it is parsed, never executed here.
      canonical = (await conn.text('SELECT formatQuerySingleLine({q:String})', { q: sql })).replace(/\n$/, '')
    } catch (err) {
      throw failed(err, true)
    }
    let query = canonical
    let format: string | undefined
    // The canonical text quotes a format whose name is a keyword: FORMAT `Values`.
    const f = /\sFORMAT\s+`?([A-Za-z][A-Za-z0-9_]*)`?$/.exec(canonical)
    if (f !== null) {
      format = [...ALLOWED_FORMATS, ...BINARY_FORMATS].find((x) => x.toLowerCase() === f[1]!.toLowerCase())
      if (format === undefined)
        throw this.refuse('format', `FORMAT ${f[1]} is not allowed; allowed formats are ${ALLOWED_FORMATS.join(', ')}`)
      query = canonical.slice(0, f.index)
    }
    const shown = this.introspection(query)
    if (shown !== undefined) return { query: shown, format }
    query = this.mirrorSystemTables(query)
    // EXPLAIN AST parses only; it runs nothing (not even url() schema inference).
    const ast = (await this.explain(conn, 'AST', query)).split('\n')
    if (ast[0] !== 'SelectWithUnionQuery (children 1)') {
      const what = ast[0]?.replace(/\s*\(children \d+\)$/, '').trim() ?? 'nothing'
      throw this.refuse(
        'select-only',
        what === 'SelectWithUnionQuery'
          ? 'INTO OUTFILE is not allowed: results come back in the response'
          : `only one SELECT (or WITH ... SELECT), SHOW TABLES, DESCRIBE, SHOW CREATE TABLE or EXISTS over ` +
              `the ${this.database} database is allowed; this is a ${what}`,
      )
    }
    const deniedTableFunctions = await this.readonlyTableFunctions(conn)
    for (const line of ast) {
      for (const m of line.matchAll(/\bFunction (\S+)/g)) {
        const name = m[1]!
        if (DENIED_FUNCTIONS.test(name) || deniedTableFunctions.has(name.toLowerCase()))
          throw this.refuse(
            'function',
            `function ${name} is not allowed in ad hoc queries (it reaches outside Benchstream's tables)`,
          )
      }
      for (const m of line.matchAll(/\bTableIdentifier (\S+)/g)) this.checkTable(m[1]!)
    }
    // EXPLAIN QUERY TREE resolves every table: IN other.t, CTEs, unqualified names.
    const tree = await this.explain(conn, 'QUERY TREE', query)
    for (const m of tree.matchAll(/\btable_name: ([^,\s]+)/g)) this.checkTable(m[1]!)
    for (const m of tree.matchAll(/\btable_function_name: ([^,\s]+)/g)) {
      if (!ALLOWED_TABLE_FUNCTIONS.has(m[1]!.toLowerCase()))
        throw this.refuse(
          'function',
          `table function ${m[1]} is not allowed; allowed are ${[...ALLOWED_TABLE_FUNCTIONS].join(', ')}`,
        )
    }
    for (const m of tree.matchAll(/\bfunction_name: ([^,\s]+)/g)) {
      if (DENIED_FUNCTIONS.test(m[1]!))
        throw this.refuse('function', `function ${m[1]} is not allowed in ad hoc queries`)
    }
    return { query, format }
  }

  /**
   * What clickhouse-client users type first (SHOW TABLES, DESCRIBE t, SHOW
   * CREATE TABLE t, EXISTS t) as the equivalent SELECT over system.tables and
   * system.columns, limited to our database. The statement is the parser's
   * canonical form, matched whole; a table name is a plain identifier and a
   * LIKE pattern one complete string literal, so nothing else can ride along.
   */
  private introspection(canonical: string): string | undefined {
    const db = this.database
    const lit = (s: string): string => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`
    const inDb = (name: string | undefined): void => {
      if (name !== undefined && name !== db)
        throw this.refuse(
          'database',
          `database ${name} is not readable here; ad hoc queries read Benchstream's tables only (${db}.*)`,
        )
    }
    const show = /^SHOW TABLES(?: FROM (\w+))?(?: (NOT )?(I?LIKE) ('(?:[^'\\]|\\.)*'))?$/.exec(canonical)
    if (show !== null) {
      inDb(show[1])
      const like = show[4] === undefined ? '' : ` AND name ${show[2] ?? ''}${show[3]} ${show[4]}`
      return `SELECT name FROM system.tables WHERE database = ${lit(db)}${like} ORDER BY name`
    }
    const one = /^(DESCRIBE TABLE|SHOW CREATE TABLE|EXISTS TABLE) (?:(\w+)\.)?(\w+)$/.exec(canonical)
    if (one === null) return undefined
    inDb(one[2])
    const where = `database = ${lit(db)} AND ${one[1] === 'DESCRIBE TABLE' ? 'table' : 'name'} = ${lit(one[3]!)}`
    if (one[1] === 'DESCRIBE TABLE')
      return (
        `SELECT name, type, default_kind AS default_type, default_expression, comment, compression_codec ` +
        `AS codec_expression FROM system.columns WHERE ${where} ORDER BY position`
      )
    if (one[1] === 'EXISTS TABLE') return `SELECT toUInt8(count() > 0) AS result FROM system.tables WHERE ${where}`
    return `SELECT create_table_query AS statement FROM system.tables WHERE ${where}`
  }

  allowedFormat(name: string | undefined, native: boolean): string | undefined {
    if (name === undefined) return undefined
    const format = [...ALLOWED_FORMATS, ...(native ? BINARY_FORMATS : [])].find(
      (x) => x.toLowerCase() === name.toLowerCase(),
    )
    if (format === undefined)
      throw this.refuse('format', `format ${name} is not allowed; allowed formats are ${ALLOWED_FORMATS.join(', ')}`)
    return format
  }

  /**
   * Names of the mirrored system tables (system.tables, system.settings, ...) made to name their views in the meta
   * database, on the parser's canonical text, where a table is written `system.name` (quotes only where needed).
   * Not a check: the rewritten query is checked as any other, so a rewrite in the wrong place (inside a string, say)
   * can only change what the user's own query reads, never let more through.
   */
  private mirrorSystemTables(canonical: string): string {
    const meta = metaDatabase(this.database)
    const names = MIRRORED_SYSTEM_TABLES.join('|')
    return canonical.replace(new RegExp(`(?<![\\w.\`])system\\.(${names})(?![\\w\`])`, 'g'), `${meta}.$1`)
  }

  private checkTable(name: string): void {
    const db = this.database
    const [first, second] = name.split('.')
    if (second === undefined) return // unqualified: resolved in the tree, inside the database
    if (first === metaDatabase(db) && (MIRRORED_SYSTEM_TABLES as readonly string[]).includes(second)) return
    if (first !== db && name !== 'system.one')
      throw this.refuse(
        'database',
        `table ${name} is outside the ${db} database; ad hoc queries read Benchstream's tables only (${db}.*)`,
      )
  }

  private tableFunctions: Set<string> | undefined

  /** Table functions the engine allows under readonly=1, less our allow-list: refused by name. */
  private async readonlyTableFunctions(conn: GuardConnection): Promise<Set<string>> {
    if (this.tableFunctions === undefined) {
      const names = (await conn.text('SELECT name FROM system.table_functions WHERE allow_readonly')).trim().split('\n')
      this.tableFunctions = new Set(
        names.map((n) => n.toLowerCase()).filter((n) => n !== '' && !ALLOWED_TABLE_FUNCTIONS.has(n)),
      )
    }
    return this.tableFunctions
  }

  private async explain(conn: GuardConnection, kind: 'AST' | 'QUERY TREE', query: string): Promise<string> {
    try {
      return await conn.text(`EXPLAIN ${kind} ${query}`)
    } catch (err) {
      throw failed(err, false)
    }
  }

  refuse(rule: string, message: string): BenchstreamError {
    this.refusedByRule[rule] = (this.refusedByRule[rule] ?? 0) + 1
    return refused(rule, message)
  }
}

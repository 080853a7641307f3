/**
 * What happens to a panel's SQL between the dashboard JSON and ClickHouse,
 * reproduced so that tests can run the exact statement Grafana would send.
 *
 * Two passes, in Grafana's order:
 * 1. Frontend (grafana-clickhouse-datasource `applyTemplateVariables`): the
 *    dashboard variables are replaced by Grafana's template service, with the
 *    datasource's own formatter for multi-values without an explicit format
 *    (`'a','b'`, unescaped) and Grafana's registry for explicit formats
 *    (`${op:singlequote}` -> `'READ','UPDATE'`, `'` escaped as `\'`).
 * 2. Backend (pkg/macros/macros.go through grafana/sqlds): `$__name(args)` is
 *    replaced using the query's time range and interval.
 *
 * Anything this module does not know throws (a variable not set, a format,
 * a Grafana global such as `$__from`, a macro the plugin lacks or that is not
 * emulated here). Grafana itself leaves unknown tokens in the SQL; a test that
 * did the same could pass on a statement Grafana would never send.
 */
import { BenchstreamError } from '../services/core/errors.js'

export interface ExpandContext {
  /** Dashboard time range start, ms since the Unix epoch (range.from). */
  fromMs: number
  /** Dashboard time range end, ms since the Unix epoch (range.to). */
  toMs: number
  /** The interval Grafana computed for the query (request.intervalMs), ms. */
  intervalMs: number
  /**
   * Dashboard variables by name. A string is a single value; an array is a
   * multi-value selection, where "All" is the list of every option (what
   * Grafana substitutes for an All without a custom all value).
   */
  variables: Readonly<Record<string, string | readonly string[]>>
}

/** The macros grafana-clickhouse-datasource's backend knows (pkg/macros/macros.go `Macros`). */
export const PLUGIN_MACROS = ['fromTime', 'toTime', 'fromTime_ms', 'toTime_ms', 'timeFilter', 'timeFilter_ms', 'dateFilter', 'dateTimeFilter', 'dt', 'timeInterval', 'timeInterval_ms', 'interval_s'] as const
export type PluginMacro = (typeof PLUGIN_MACROS)[number]

/** Variable formats emulated here (Grafana's names). */
export const VARIABLE_FORMATS = ['singlequote', 'sqlstring', 'csv', 'raw'] as const

// Grafana's template variable syntax (public/app/features/variables/utils.ts variableRegex):
// $name | [[name(:format)]] | ${name(.fieldPath)(:format)}
const VARIABLE_RE = /\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)(?:\.([^:^}]+))?(?::([^}]+))?\}/g
// sqlds: `\$__<name>\b(?:\((.*?)\))?` per macro name; one pattern for all names
// finds the same tokens because \w+ stops where \b would.
const MACRO_RE = /\$__(\w+)(?:\((.*?)\))?/g

const isPluginMacro = (name: string): name is PluginMacro => (PLUGIN_MACROS as readonly string[]).includes(name)

/** Expands variables, then plugin macros; throws BS_ERR_BAD_REQUEST on anything unknown. */
export function expandQuery(sql: string, ctx: ExpandContext): string {
  checkContext(ctx)
  return expandMacros(expandVariables(sql, ctx), ctx)
}

/** Pass 1: dashboard variables, leaving the plugin's `$__macros` for pass 2. */
export function expandVariables(sql: string, ctx: Pick<ExpandContext, 'variables'>): string {
  if (sql.includes('$__conditionalAll(')) throw bad('$__conditionalAll is not emulated; filter with IN (${var:singlequote}) instead', sql)
  return sql.replace(VARIABLE_RE, (match: string, plain?: string, bracket?: string, bracketFormat?: string, braced?: string, fieldPath?: string, bracedFormat?: string) => {
    const name = plain ?? bracket ?? braced ?? ''
    if (plain !== undefined && name.startsWith('__') && isPluginMacro(name.slice(2))) return match
    if (name.startsWith('__')) throw bad(`${match} is a Grafana global variable or a macro the ClickHouse plugin does not have; allowed macros: ${PLUGIN_MACROS.map((m) => `$__${m}`).join(', ')}`, sql)
    if (fieldPath !== undefined) throw bad(`${match}: field paths in variables are not emulated`, sql)
    const value = ctx.variables[name]
    if (value === undefined) throw bad(`variable ${match} is not set; set ones: ${Object.keys(ctx.variables).sort().join(', ') || '(none)'}`, sql)
    return formatValue(value, bracketFormat ?? bracedFormat, match, sql)
  })
}

/** Pass 2: the plugin's backend macros, exactly as pkg/macros/macros.go writes them. */
export function expandMacros(sql: string, ctx: Omit<ExpandContext, 'variables'>): string {
  checkContext({ ...ctx, variables: {} })
  const out = sql.replace(MACRO_RE, (match: string, name: string, rawArgs?: string) => {
    if (!isPluginMacro(name)) throw bad(`unknown macro ${match}; grafana-clickhouse-datasource has ${PLUGIN_MACROS.map((m) => `$__${m}`).join(', ')}`, sql)
    const args = rawArgs === undefined ? [] : rawArgs.split(',').map((a) => a.trim())
    return macro(name, args, ctx, match, sql)
  })
  // Anything still shaped like a variable or macro would reach ClickHouse unexpanded.
  const left = /\$\w+|\$\{[^}]*\}?|\[\[[^\]]*\]?\]?/.exec(out)
  if (left !== null) throw bad(`"${left[0]}" is still in the SQL after expansion`, out)
  return out
}

function macro(name: PluginMacro, args: string[], ctx: Omit<ExpandContext, 'variables'>, match: string, sql: string): string {
  const column = (): string => {
    if (args.length !== 1 || args[0] === '') throw bad(`${match}: $__${name} takes exactly one column, e.g. $__${name}(window_start)`, sql)
    return args[0]!
  }
  // Go's time.Unix() and UnixMilli() truncate toward zero; ranges are after 1970.
  const fromS = Math.trunc(ctx.fromMs / 1000)
  const toS = Math.trunc(ctx.toMs / 1000)
  const fromMs = Math.trunc(ctx.fromMs)
  const toMs = Math.trunc(ctx.toMs)
  // math.Max(interval.Seconds(), 1) then int(): whole seconds, at least 1.
  const intervalS = Math.trunc(Math.max(ctx.intervalMs / 1000, 1))
  const intervalMs = Math.trunc(Math.max(ctx.intervalMs, 1))
  switch (name) {
    case 'fromTime':
      return `toDateTime(${fromS})`
    case 'toTime':
      return `toDateTime(${toS})`
    case 'fromTime_ms':
      return `fromUnixTimestamp64Milli(${fromMs})`
    case 'toTime_ms':
      return `fromUnixTimestamp64Milli(${toMs})`
    case 'timeFilter': {
      const c = column()
      return `${c} >= toDateTime(${fromS}) AND ${c} <= toDateTime(${toS})`
    }
    case 'timeFilter_ms': {
      const c = column()
      return `${c} >= fromUnixTimestamp64Milli(${fromMs}) AND ${c} <= fromUnixTimestamp64Milli(${toMs})`
    }
    case 'timeInterval':
      return `toStartOfInterval(toDateTime(${column()}), INTERVAL ${intervalS} second)`
    case 'timeInterval_ms':
      return `toStartOfInterval(toDateTime64(${column()}, 3), INTERVAL ${intervalMs} millisecond)`
    case 'interval_s':
      return String(intervalS)
    case 'dateFilter':
    case 'dateTimeFilter':
    case 'dt':
      // These format dates in the plugin process's time zone; no panel uses them.
      throw bad(`${match}: $__${name} is not emulated (it depends on the Grafana server's time zone); use $__timeFilter_ms`, sql)
  }
}

function formatValue(value: string | readonly string[], format: string | undefined, match: string, sql: string): string {
  const values = typeof value === 'string' ? [value] : value
  switch (format) {
    case undefined:
      // The datasource's own formatter (CHDatasource.format): arrays quoted and joined, scalars as they are.
      return typeof value === 'string' ? value : `'${value.join("','")}'`
    case 'singlequote':
      return values.map((v) => `'${v.replaceAll("'", "\\'")}'`).join(',')
    case 'sqlstring':
      return values.map((v) => `'${v.replaceAll("'", "''")}'`).join(',')
    case 'csv':
    case 'raw':
      return values.join(',')
    default:
      throw bad(`${match}: format ${JSON.stringify(format)} is not emulated; allowed: ${VARIABLE_FORMATS.join(', ')}`, sql)
  }
}

function checkContext(ctx: ExpandContext): void {
  if (!Number.isFinite(ctx.fromMs) || !Number.isFinite(ctx.toMs) || ctx.fromMs < 0 || ctx.toMs < ctx.fromMs) {
    throw new BenchstreamError('BS_ERR_BAD_REQUEST', `time range ${ctx.fromMs}..${ctx.toMs} is not allowed: expected 0 <= fromMs <= toMs (ms since the Unix epoch)`)
  }
  if (!Number.isFinite(ctx.intervalMs) || ctx.intervalMs <= 0) {
    throw new BenchstreamError('BS_ERR_BAD_REQUEST', `intervalMs ${ctx.intervalMs} is not allowed: expected a positive number of milliseconds`)
  }
}

function bad(what: string, sql: string): BenchstreamError {
  const excerpt = sql.length > 160 ? `${sql.slice(0, 160)}...` : sql
  return new BenchstreamError('BS_ERR_BAD_REQUEST', `cannot expand dashboard SQL: ${what} (in: ${excerpt.replace(/\s+/g, ' ')})`)
}

/**
 * Test support only (nothing in services/ or dashboards/ imports it): what
 * happens to a panel's SQL between the dashboard JSON and ClickHouse, so
 * that tests run the statement Grafana would send. Held to one named
 * version: grafana-clickhouse-datasource v4.20.0 (commit 973c4a50, whose Go
 * backend expands macros with grafana/macropro v1.0.1).
 *
 * Passes, in Grafana's order:
 * 1. Frontend (src/data/CHDatasource.ts applyTemplateVariables, :477-511):
 *    `$__conditionalAll` (:558-585), then dashboard variables through
 *    Grafana's template service (@grafana/scenes sceneInterpolator, formats
 *    from formatRegistry.ts; the datasource's own formatter for multi-values
 *    without a format, CHDatasource.ts:830-842).
 * 2. Backend (pkg/macros/macros.go:230 Interpolate -> macropro.Interpolate
 *    with LineComment|BlockComment|BackslashEscape): interpolateMacros()
 *    reproduces macropro's scan and the plugin's handlers exactly, unknown
 *    macros included (copied through), and is checked against vectors the
 *    plugin's own code produced (test/fixtures/grafana-macros).
 *
 * expandQuery() then refuses what the plugin would let through to fail in
 * ClickHouse: an unknown `$__macro` left in the SQL, and anything shaped like
 * a variable. Grafana globals ($__from, $__interval, ...), unset variables
 * and formats not listed are refused too, so a test cannot pass on a
 * statement Grafana would never send.
 */
import { BenchstreamError } from '../../services/core/errors.js'

export interface MacroContext {
  /** Dashboard time range start, ms since the Unix epoch (the request's range.from). */
  fromMs: number
  /** Dashboard time range end, ms since the Unix epoch. */
  toMs: number
  /** The query's interval (request.intervalMs), ms; Grafana sends at least 1 for panels, 1000 for variable queries. */
  intervalMs: number
  /** The query's `table` and `column` fields (query builder queries), for $__table and $__column. */
  table?: string
  column?: string
  /**
   * IANA zone of the plugin process (Go's time.Local: the TZ of the Grafana
   * container, UTC in grafana/grafana unless set). Only $__dateFilter,
   * $__dateTimeFilter and $__dt depend on it. @default UTC
   */
  timeZone?: string
}

export interface ExpandContext extends MacroContext {
  /**
   * Dashboard variables by name. A string is a single value; an array is a
   * multi-value selection, where "All" is the list of every option (what
   * Grafana substitutes for an All without a custom all value).
   */
  variables: Readonly<Record<string, string | readonly string[]>>
}

/** Every macro the v4.20.0 backend knows: macropro.DefaultMacros merged with ClickHouseMacros (macros.go:195-217). */
export const PLUGIN_MACROS = [
  'interval',
  'interval_ms',
  'table',
  'column',
  'timeFilter',
  'timeFrom',
  'timeTo',
  'timeGroup',
  'fromTime',
  'toTime',
  'fromTime_ms',
  'toTime_ms',
  'timeFilter_ms',
  'dateFilter',
  'dateTimeFilter',
  'dt',
  'timeInterval',
  'timeInterval_ms',
  'interval_s',
] as const
export type PluginMacro = (typeof PLUGIN_MACROS)[number]

/** Variable formats emulated here (Grafana's names). */
export const VARIABLE_FORMATS = ['singlequote', 'sqlstring', 'csv', 'raw'] as const

/**
 * Grafana's own macros, replaced by the frontend before the plugin sees the SQL (scenes
 * variables/macros/index.ts:9-24).
 */
const GRAFANA_GLOBALS = new Set([
  '__from',
  '__to',
  '__interval',
  '__interval_ms',
  '__timezone',
  '__user',
  '__org',
  '__url',
  '__all_variables',
  '__url_time_range',
  '__value',
  '__data',
  '__series',
  '__field',
  '__rate_interval',
  '__range',
  '__range_s',
  '__range_ms',
  '__dashboard',
])

// @grafana/scenes variables/constants.ts:29-30 VARIABLE_REGEX.
const VARIABLE_RE =
  /\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)((?:\.[^:^{}[\]]+|\["[^"]*"\]|\['[^']*'\]|\[[^\]"']*\])*)(?::([^}]+))?\}/g

/** Expands as Grafana and the plugin would, then refuses anything left unexpanded (BS_ERR_BAD_REQUEST). */
export function expandQuery(sql: string, ctx: ExpandContext): string {
  checkContext(ctx)
  const out = interpolateMacros(expandVariables(conditionalAll(sql, ctx), ctx), ctx)
  // The plugin copies unknown macros through; ClickHouse would then fail on them.
  const unknown = /\$__(\w+)/.exec(out)
  if (unknown !== null)
    throw bad(
      `unknown macro $__${unknown[1]}: grafana-clickhouse-datasource 4.20.0 leaves it in the SQL and ` +
        `ClickHouse fails on it; the plugin has ${PLUGIN_MACROS.map((m) => `$__${m}`).join(', ')}`,
      sql,
    )
  const left = /\$\w+|\$\{[^}]*\}?|\[\[[^\]]*\]?\]?/.exec(out)
  if (left !== null) throw bad(`"${left[0]}" is still in the SQL after expansion`, out)
  return out
}

// -- pass 1: frontend ----------------------------------------------------------

/**
 * $__conditionalAll(cond, $var) (CHDatasource.ts:558-585): from the last
 * occurrence backwards, arguments read with parenthesis counting; the call
 * becomes 1=1 when the variable's value is '' or '$__all', else `cond`. Left
 * as it is without exactly two arguments.
 */
export function conditionalAll(sql: string, ctx: Pick<ExpandContext, 'variables'>): string {
  const macro = '$__conditionalAll'
  let out = sql
  for (let at = out.lastIndexOf(macro); at >= 0; at = out.lastIndexOf(macro, at - 1)) {
    const open = at + macro.length
    if (out[open] !== '(') continue
    let depth = 0
    let end = -1
    for (let i = open; i < out.length; i++) {
      if (out[i] === '(') depth++
      else if (out[i] === ')' && --depth === 0) {
        end = i
        break
      }
    }
    if (end < 0) continue
    const args = splitArgs(out.slice(open + 1, end))
    if (args.length !== 2) continue
    const name = /^\$\{?(\w+)\}?$/.exec(args[1]!.trim())?.[1]
    const value = name === undefined ? undefined : ctx.variables[name]
    const v = value === undefined ? undefined : typeof value === 'string' ? value : value.join(',')
    out = out.slice(0, at) + (v === '' || v === '$__all' ? '1=1' : args[0]!.trim()) + out.slice(end + 1)
  }
  return out
}

function splitArgs(raw: string): string[] {
  const args: string[] = []
  let depth = 0
  let start = 0
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] === '(') depth++
    else if (raw[i] === ')') depth--
    else if (raw[i] === ',' && depth === 0) {
      args.push(raw.slice(start, i))
      start = i + 1
    }
  }
  args.push(raw.slice(start))
  return args
}

/** Dashboard variables as the scenes interpolator writes them; the plugin's `$__macros` are left for pass 2. */
export function expandVariables(sql: string, ctx: Pick<ExpandContext, 'variables'>): string {
  return sql.replace(
    VARIABLE_RE,
    (
      match: string,
      plain?: string,
      bracket?: string,
      bracketFormat?: string,
      braced?: string,
      fieldPath?: string,
      bracedFormat?: string,
    ) => {
      const name = plain ?? bracket ?? braced ?? ''
      if (GRAFANA_GLOBALS.has(name))
        throw bad(
          `${match} is a Grafana global the frontend replaces; it is not emulated here (use the plugin's $__ macros)`,
          sql,
        )
      // Not a variable: scenes leaves the text as it is (the plugin's macros go on to pass 2).
      if (name.startsWith('__')) return match
      if (fieldPath !== undefined && fieldPath !== '')
        throw bad(`${match}: field paths in variables are not emulated`, sql)
      const value = ctx.variables[name]
      if (value === undefined)
        throw bad(
          `variable ${match} is not set; set ones: ${Object.keys(ctx.variables).sort().join(', ') || '(none)'}`,
          sql,
        )
      return formatValue(value, bracketFormat ?? bracedFormat, match, sql)
    },
  )
}

function formatValue(
  value: string | readonly string[],
  format: string | undefined,
  match: string,
  sql: string,
): string {
  const values = typeof value === 'string' ? [value] : value
  switch (format) {
    case undefined:
      // The datasource's own formatter (CHDatasource.format): arrays quoted and joined, unescaped; scalars as they are.
      return typeof value === 'string' ? value : `'${value.join("','")}'`
    case 'singlequote':
      // formatRegistry.ts:208-226
      return values.map((v) => `'${v.replaceAll("'", "\\'")}'`).join(',')
    case 'sqlstring':
      // formatRegistry.ts SQL_ESCAPE_MAP (:421-436): ' doubled, " backslash-escaped.
      return values.map((v) => `'${v.replaceAll("'", "''").replaceAll('"', '\\"')}'`).join(',')
    case 'csv':
    case 'raw':
      return values.join(',')
    default:
      throw bad(
        `${match}: format ${JSON.stringify(format)} is not emulated; allowed: ${VARIABLE_FORMATS.join(', ')}`,
        sql,
      )
  }
}

// -- pass 2: the plugin's backend (macropro v1.0.1 + pkg/macros/macros.go) ---

const PREFIX = '$__'
/** macropro parser.go maxNestingDepth. */
const MAX_NESTING = 128

/** A handler's error (the plugin wraps arity errors as sqlutil.ErrorBadArgumentCount). */
class MacroError extends Error {}

/**
 * The plugin's backend pass, exactly: macros.go:230 Interpolate ->
 * macropro.Interpolate (parser.go). Unknown macros are copied through, as
 * the plugin does; errors carry the plugin's text with sqlds' prefix
 * (sqlds v5.3.0 datasource.go:275-281: "Could not apply macros: ...").
 */
export function interpolateMacros(query: string, ctx: MacroContext): string {
  // Fast paths (parser.go Interpolate): no prefix, nothing to do; comments are blanked only when it is present.
  if (!query.includes(PREFIX)) return query
  const work = stripComments(query)
  if (!work.includes(PREFIX)) return work
  try {
    return expand(work, ctx, 0)
  } catch (err) {
    if (err instanceof MacroError)
      throw new BenchstreamError('BS_ERR_BAD_REQUEST', `Could not apply macros: ${err.message}`)
    throw err
  }
}

/**
 * macropro StripComments with LineComment|BlockComment|BackslashEscape:
 * `--` to the end of the line (\n or \r) and `/* ... *\/` (to the end when
 * unterminated) become as many spaces as they have BYTES (Go strings are
 * bytes); '...' and "..." are skipped with doubled-quote and backslash
 * escapes.
 */
function stripComments(q: string): string {
  let out = ''
  let i = 0
  while (i < q.length) {
    const c = q[i]!
    if (c === "'" || c === '"') {
      const j = scanStringBackslash(q, i)
      out += q.slice(i, j)
      i = j
    } else if (c === '-' && q[i + 1] === '-') {
      const j = scanToLineEnd(q, i)
      out += ' '.repeat(Buffer.byteLength(q.slice(i, j)))
      i = j
    } else if (c === '/' && q[i + 1] === '*') {
      let j = i + 2
      while (j < q.length && !(q[j] === '*' && q[j + 1] === '/')) j++
      j = Math.min(j + 2, q.length)
      out += ' '.repeat(Buffer.byteLength(q.slice(i, j)))
      i = j
    } else {
      out += c
      i++
    }
  }
  return out
}

function scanToLineEnd(s: string, start: number): number {
  let j = start
  while (j < s.length && s[j] !== '\n' && s[j] !== '\r') j++
  return j
}

/** parser.go scanStringLiteral: past a quoted literal, doubled quotes only; unterminated runs to the end. */
function scanString(s: string, pos: number): number {
  const quote = s[pos]
  let j = pos + 1
  while (j < s.length) {
    if (s[j] === quote) {
      if (s[j + 1] === quote) {
        j += 2
        continue
      }
      return j + 1
    }
    j++
  }
  return j
}

/** parser.go scanStringLiteralBackslash: also skips \x escapes (used only by StripComments). */
function scanStringBackslash(s: string, pos: number): number {
  const quote = s[pos]
  let j = pos + 1
  while (j < s.length) {
    if (s[j] === '\\' && j + 1 < s.length) {
      j += 2
      continue
    }
    if (s[j] === quote) {
      if (s[j + 1] === quote) {
        j += 2
        continue
      }
      return j + 1
    }
    j++
  }
  return j
}

const isNameChar = (c: string | undefined): boolean => c !== undefined && /^[A-Za-z0-9_]$/.test(c)

/** parser.go expand: one forward scan; the longest [A-Za-z0-9_]* run is the name. */
function expand(work: string, ctx: MacroContext, depth: number): string {
  if (depth > MAX_NESTING) throw new MacroError(`macro nesting exceeds ${MAX_NESTING} levels`)
  let out = ''
  let i = 0
  while (i < work.length) {
    const rel = work.indexOf(PREFIX, i)
    if (rel < 0) {
      out += work.slice(i)
      break
    }
    out += work.slice(i, rel)
    i = rel
    const nameStart = i + PREFIX.length
    let nameEnd = nameStart
    while (isNameChar(work[nameEnd])) nameEnd++
    if (nameStart === nameEnd) {
      out += PREFIX
      i = nameStart
      continue
    }
    const name = work.slice(nameStart, nameEnd)
    if (!(PLUGIN_MACROS as readonly string[]).includes(name)) {
      // Unknown macro: copied through; its argument list is scanned as ordinary text.
      out += work.slice(i, nameEnd)
      i = nameEnd
      continue
    }
    let raw = ''
    let after = nameEnd
    if (work[after] === '(') {
      const end = findClosingParen(work, after)
      // Unbalanced: a zero-argument call, the '(' stays in the text.
      if (end >= 0) {
        raw = work.slice(after + 1, end)
        after = end + 1
      }
    }
    let args: string[]
    try {
      args = parseArgs(raw)
    } catch (err) {
      throw new MacroError(`macro ${PREFIX}${name}: ${(err as Error).message}`)
    }
    // Nested macros, innermost first, after the argument boundaries are fixed.
    args = args.map((arg, ai) => {
      if (!arg.includes(PREFIX)) return arg
      try {
        return expand(arg, ctx, depth + 1)
      } catch (err) {
        if (err instanceof MacroError) throw new MacroError(`macro ${PREFIX}${name} argument ${ai + 1}: ${err.message}`)
        throw err
      }
    })
    try {
      out += HANDLERS[name as PluginMacro](ctx, args)
    } catch (err) {
      if (err instanceof MacroError) throw new MacroError(`macro ${PREFIX}${name}(${args.join(', ')}): ${err.message}`)
      throw err
    }
    i = after
  }
  return out
}

/** parser.go findClosingParen: the ')' matching the '(' at `open`, skipping quoted literals; -1 when unbalanced. */
function findClosingParen(s: string, open: number): number {
  let depth = 0
  for (let i = open; i < s.length;) {
    const c = s[i]
    if (c === "'" || c === '"') {
      i = scanString(s, i)
      continue
    }
    if (c === '(') depth++
    else if (c === ')' && --depth === 0) return i
    i++
  }
  return -1
}

/** parser.go parseArgs: split on top-level commas, each trimmed; blank gives no arguments. */
function parseArgs(raw0: string): string[] {
  const raw = raw0.trim()
  if (raw === '') return []
  const args: string[] = []
  let depth = 0
  let start = 0
  for (let i = 0; i < raw.length;) {
    const c = raw[i]
    if (c === "'" || c === '"') {
      i = scanString(raw, i)
      continue
    }
    if (c === '(') depth++
    else if (c === ')') {
      if (depth === 0) throw new Error(`unexpected ')' at position ${Buffer.byteLength(raw.slice(0, i))}`)
      depth--
    } else if (c === ',' && depth === 0) {
      args.push(raw.slice(start, i).trim())
      start = i + 1
    }
    i++
  }
  if (depth !== 0) throw new Error('unbalanced parentheses in arguments')
  args.push(raw.slice(start).trim())
  return args
}

/** macros.go:19-21 badArgsErr, wrapping sqlutil.ErrorBadArgumentCount ("unexpected number of arguments"). */
function badArgs(macro: string, want: number, got: number): MacroError {
  return new MacroError(`unexpected number of arguments: ${macro} expected ${want} argument(s), received ${got}`)
}

/** Go's time.Unix(): whole seconds, floored (times before 1970 included). */
const unix = (ms: number): number => Math.floor(ms / 1000)
/** Go's UnixMilli(); Grafana's range is whole milliseconds. */
const unixMilli = (ms: number): number => Math.floor(ms)
/** macros.go:29-31 timeToDateTime. */
const toDateTime = (ms: number): string => `toDateTime(${unix(ms)})`
/** macros.go:34-36 timeToDateTime64. */
const toDateTime64 = (ms: number): string => `fromUnixTimestamp64Milli(${unixMilli(ms)})`
/** macros.go:24-26 timeToDate: t.Format("2006-01-02") in the plugin process's zone. */
function toDate(ms: number, zone: string): string {
  const parts = new Intl.DateTimeFormat('en-CA', {
    timeZone: zone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).formatToParts(new Date(ms))
  const get = (t: string): string => parts.find((p) => p.type === t)?.value ?? ''
  return `toDate('${get('year')}-${get('month')}-${get('day')}')`
}
/** math.Max(interval.Seconds(), 1) then int(): whole seconds, truncated, at least 1 (macros.go:119,137). */
const intervalSeconds = (ctx: MacroContext): number => Math.trunc(Math.max(ctx.intervalMs / 1000, 1))

type Handler = (ctx: MacroContext, args: string[]) => string

function one(macro: string, args: string[]): string {
  if (args.length !== 1) throw badArgs(macro, 1, args.length)
  return args[0]!
}

/** The handlers of ClickHouseMacros (macros.go:195-217), the defaults from macropro's defaults.go. */
const HANDLERS: Record<PluginMacro, Handler> = {
  // macros.go:53-70: any arguments are ignored.
  fromTime: (ctx) => toDateTime(ctx.fromMs),
  toTime: (ctx) => toDateTime(ctx.toMs),
  fromTime_ms: (ctx) => toDateTime64(ctx.fromMs),
  toTime_ms: (ctx) => toDateTime64(ctx.toMs),
  // macros.go:74-80
  timeFilter: (ctx, args) => {
    const c = one('$__timeFilter', args)
    return `${c} >= ${toDateTime(ctx.fromMs)} AND ${c} <= ${toDateTime(ctx.toMs)}`
  },
  // macros.go:84-90
  timeFilter_ms: (ctx, args) => {
    const c = one('$__timeFilter_ms', args)
    return `${c} >= ${toDateTime64(ctx.fromMs)} AND ${c} <= ${toDateTime64(ctx.toMs)}`
  },
  // macros.go:94-100
  dateFilter: (ctx, args) => {
    const c = one('$__dateFilter', args)
    const zone = ctx.timeZone ?? 'UTC'
    return `${c} >= ${toDate(ctx.fromMs, zone)} AND ${c} <= ${toDate(ctx.toMs, zone)}`
  },
  // macros.go:104-112; $__dt is the same handler (:212).
  dateTimeFilter: (ctx, args) => dateTimeFilter('$__dateTimeFilter', ctx, args),
  dt: (ctx, args) => dateTimeFilter('$__dateTimeFilter', ctx, args),
  // macros.go:116-122
  timeInterval: (ctx, args) =>
    `toStartOfInterval(toDateTime(${one('$__timeInterval', args)}), INTERVAL ${intervalSeconds(ctx)} second)`,
  // macros.go:126-132: IntervalMS = Interval.Milliseconds(), at least 1.
  timeInterval_ms: (ctx, args) =>
    `toStartOfInterval(toDateTime64(${one('$__timeInterval_ms', args)}, ` +
    `3), INTERVAL ${Math.trunc(Math.max(Math.trunc(ctx.intervalMs), 1))} ` +
    `millisecond)`,
  // macros.go:136-139
  interval_s: (ctx) => String(intervalSeconds(ctx)),
  // macros.go:146-160: ClickHouse overrides of the SDK defaults, exactly one column.
  timeFrom: (ctx, args) => `${one('$__timeFrom', args)} >= ${toDateTime(ctx.fromMs)}`,
  timeTo: (ctx, args) => `${one('$__timeTo', args)} <= ${toDateTime(ctx.toMs)}`,
  // macros.go:166-182
  timeGroup: (_ctx, args) => {
    if (args.length !== 2) throw badArgs('$__timeGroup', 2, args.length)
    const col = args[0]!.trim()
    const period = args[1]!.trim().replace(/^['"]+|['"]+$/g, '')
    const seconds = goParseDurationSeconds(
      period,
      (e) => new MacroError(`$__timeGroup: invalid interval ${goQuote(period)}: ${e}`),
    )
    // math.Round: half away from zero.
    const secs = Math.sign(seconds) * Math.round(Math.abs(seconds))
    if (secs <= 0) throw new MacroError(`$__timeGroup: interval must be positive, got ${goQuote(period)}`)
    return `toStartOfInterval(toDateTime(${col}), INTERVAL ${secs} second)`
  },
  // macropro defaults.go: FormatDuration(ctx.Interval), the largest whole unit. Grafana's frontend
  // normally replaces $__interval and $__interval_ms before the plugin sees them.
  interval: (ctx) => formatDuration(Math.trunc(ctx.intervalMs)),
  interval_ms: (ctx) => String(Math.trunc(ctx.intervalMs)),
  // macropro defaults.go: the query's table and column fields.
  table: (ctx) => {
    if (ctx.table === undefined || ctx.table === '') throw new MacroError('$__table: no table name in query context')
    return ctx.table
  },
  column: (ctx) => {
    if (ctx.column === undefined || ctx.column === '')
      throw new MacroError('$__column: no column name in query context')
    return ctx.column
  },
}

function dateTimeFilter(macro: string, ctx: MacroContext, args: string[]): string {
  if (args.length !== 2) throw badArgs(macro, 2, args.length)
  const [d, t] = args as [string, string]
  const zone = ctx.timeZone ?? 'UTC'
  return (
    `(${d} >= ${toDate(ctx.fromMs, zone)} AND ${d} <= ${toDate(ctx.toMs, zone)}) ` +
    `AND (${t} >= ${toDateTime(ctx.fromMs)} ` +
    `AND ${t} <= ${toDateTime(ctx.toMs)})`
  )
}

/** macropro FormatDuration: "0s", else the largest unit that divides it (h, m, s, ms). */
function formatDuration(ms: number): string {
  const d = Math.abs(ms)
  if (d === 0) return '0s'
  if (d % 3_600_000 === 0) return `${d / 3_600_000}h`
  if (d % 60_000 === 0) return `${d / 60_000}m`
  if (d % 1000 === 0) return `${d / 1000}s`
  return `${d}ms`
}

/** Go's strconv.Quote for the ASCII text durations are written in. */
const goQuote = (s: string): string => JSON.stringify(s)

const GO_UNITS: Record<string, number> = { ns: 1e-9, us: 1e-6, µs: 1e-6, μs: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 }

/**
 * Go's time.ParseDuration, as seconds; its error texts ("time: invalid duration ...", "missing unit", "unknown unit").
 */
function goParseDurationSeconds(orig: string, fail: (message: string) => MacroError): number {
  const invalid = (): MacroError => fail(`time: invalid duration ${goQuote(orig)}`)
  let s = orig
  let sign = 1
  if (s[0] === '-' || s[0] === '+') {
    sign = s[0] === '-' ? -1 : 1
    s = s.slice(1)
  }
  if (s === '0') return 0
  if (s === '') throw invalid()
  let total = 0
  while (s !== '') {
    const num = /^(\d*)(?:\.(\d*))?/.exec(s)!
    const pre = num[1] !== ''
    const post = num[2] !== undefined && num[2] !== ''
    if (!(s[0] === '.' || /\d/.test(s[0]!)) || (!pre && !post)) throw invalid()
    s = s.slice(num[0].length)
    const unit = /^[^.\d]*/.exec(s)![0]
    if (unit === '') throw fail(`time: missing unit in duration ${goQuote(orig)}`)
    const scale = GO_UNITS[unit]
    if (scale === undefined) throw fail(`time: unknown unit ${goQuote(unit)} in duration ${goQuote(orig)}`)
    s = s.slice(unit.length)
    total += Number(`${num[1] || '0'}.${num[2] ?? '0'}`) * scale
  }
  if (total * 1e9 > 2 ** 63 - 1) throw invalid()
  return sign * total
}

function checkContext(ctx: MacroContext): void {
  if (!Number.isFinite(ctx.fromMs) || !Number.isFinite(ctx.toMs) || ctx.toMs < ctx.fromMs) {
    throw new BenchstreamError(
      'BS_ERR_BAD_REQUEST',
      `time range ${ctx.fromMs}..${ctx.toMs} is not allowed: expected fromMs <= toMs (ms since the Unix epoch)`,
    )
  }
  if (!Number.isFinite(ctx.intervalMs) || ctx.intervalMs < 0) {
    throw new BenchstreamError(
      'BS_ERR_BAD_REQUEST',
      `intervalMs ${ctx.intervalMs} is not allowed: expected a non-negative number of milliseconds`,
    )
  }
}

function bad(what: string, sql: string): BenchstreamError {
  const excerpt = sql.length > 160 ? `${sql.slice(0, 160)}...` : sql
  return new BenchstreamError(
    'BS_ERR_BAD_REQUEST',
    `cannot expand dashboard SQL: ${what} (in: ${excerpt.replace(/\s+/g, ' ')})`,
  )
}

/**
 * The one structured logger (pino, which fastify already uses), on stderr.
 * Diagnostics only; what a user asked a command for (reports, tables,
 * YCSB's status lines) goes to stdout/stderr as plain text.
 *
 * LOG_FORMAT=json writes pino's JSON lines (for log shippers; the server's
 * default); `pretty` writes `level name: message key=value` lines for people
 * (the CLI's default), through the same logger and levels.
 *
 * A command whose screen is its own output (the demo) logs into a file
 * instead (createFileLogger) and says where.
 */
import { existsSync, mkdirSync, renameSync } from 'node:fs'
import path from 'node:path'
import { pino, type Logger, type StreamEntry } from 'pino'
import { Type } from 'typebox'
import { EnvVar, readEnv, type Env } from './config.js'

export type { Logger }

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

export const LogEnv = Type.Object({
  LOG_LEVEL: EnvVar.oneOf(LOG_LEVELS, {
    default: 'info',
    description: 'diagnostics on stderr at this level and above',
  }),
  LOG_FORMAT: EnvVar.oneOf(['auto', 'json', 'pretty'], {
    default: 'auto',
    description: 'diagnostics as JSON lines or as text; auto = JSON for the server, text for other commands',
  }),
})

const LEVEL_NAMES: Record<number, string> = {
  10: 'trace',
  20: 'debug',
  30: 'info',
  40: 'warn',
  50: 'error',
  60: 'fatal',
}
const RESERVED = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg', 'v'])

/** pino's JSON line as one line of text: `warn benchstream-server: message key=value`. */
export function prettyLine(json: string): string {
  try {
    const o = JSON.parse(json) as Record<string, unknown> & { name?: string; msg?: string; level?: number }
    const extra = Object.entries(o)
      .filter(([k]) => !RESERVED.has(k))
      .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    return (
      `${LEVEL_NAMES[o.level ?? 0] ?? 'log'} ${o.name ?? ''}: ` +
      `${o.msg ?? ''}${extra.length > 0 ? ' ' + extra.join(' ') : ''}\n`
    )
  } catch {
    return json
  }
}

/**
 * A logger named after the component. Synchronous writes: a command that
 * exits right after logging must not lose the line.
 */
export function createLogger(
  name: string,
  env: Env = {},
  defaults: { format: 'json' | 'pretty' } = { format: 'pretty' },
): Logger {
  const e = readEnv(LogEnv, env)
  const format = e.LOG_FORMAT === 'auto' ? defaults.format : e.LOG_FORMAT
  const dest = pino.destination({ dest: 2, sync: true })
  const stream = format === 'json' ? dest : { write: (line: string): void => void dest.write(prettyLine(line)) }
  return pino({ name, level: e.LOG_LEVEL, base: { pid: process.pid } }, stream)
}

/** Where a file logger's lines go besides its file while the caller wants them on screen. */
export interface LogEcho {
  /** Lines at this level and above are echoed. */
  level: 'warn' | 'error'
  /** Called with the line as text (prettyLine); it decides whether to show it now. */
  write(line: string): void
}

/**
 * A logger whose JSON lines go to `file` (created with its folder, the previous one kept as `file.1`), for a command
 * whose screen is its own output (the demo: live lines, then the report): diagnostics stay readable in the file and
 * never interleave with what the user asked for. With `echo`, warnings (or errors) are also handed over as text
 * while the caller shows them. LOG_LEVEL applies; LOG_FORMAT does not (the file is for grep and log shippers).
 */
export function createFileLogger(name: string, env: Env, file: string, echo?: LogEcho): Logger {
  const e = readEnv(LogEnv, env)
  mkdirSync(path.dirname(file), { recursive: true })
  if (existsSync(file)) renameSync(file, `${file}.1`)
  const dest = pino.destination({ dest: file, sync: true, append: true })
  const streams: StreamEntry[] = [{ level: 'trace', stream: dest }]
  if (echo !== undefined)
    streams.push({ level: echo.level, stream: { write: (line: string): void => echo.write(prettyLine(line)) } })
  return pino({ name, level: e.LOG_LEVEL, base: { pid: process.pid } }, pino.multistream(streams))
}

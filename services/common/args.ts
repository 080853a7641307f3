/**
 * Command-line flags for the subcommands that take GNU-style options, on
 * node's parseArgs, with errors a user can act on: the flag that was wrong,
 * the closest valid one ("did you mean --seconds?"), and the command's help.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { BenchstreamError } from '../core/errors.js'
import { didYouMean } from '../core/suggest.js'

/** The options of one command, as parseArgs takes them. */
export type FlagSpecs = NonNullable<ParseArgsConfig['options']>
type Options = FlagSpecs

/** The flags a spec accepts as written on a command line: `--name`, and `-x` for a short alias. */
export function flagNames(options: FlagSpecs): string[] {
  return Object.entries(options).flatMap(([name, o]) => [
    `--${name}`,
    ...(o.short === undefined ? [] : [`-${o.short}`]),
  ])
}

export function parseFlags<O extends Options>(
  argv: readonly string[],
  options: O,
  usage: string,
  allowPositionals = false,
): ReturnType<typeof parseArgs<{ args: string[]; options: O; strict: true; allowPositionals: boolean }>> {
  try {
    return parseArgs({ args: [...argv], options, strict: true, allowPositionals })
  } catch (err) {
    const msg = (err as Error).message
    const flags = Object.entries(options).map(([name, o]) => `--${name}${o.type === 'string' ? ' <value>' : ''}`)
    const unknown = /Unknown option '([^']+)'/.exec(msg)?.[1]
    const positional = /Unexpected argument '([^']+)'/.exec(msg)?.[1]
    const what =
      unknown !== undefined
        ? `unknown option ${unknown}${didYouMean(
            unknown,
            Object.keys(options).map((n) => `--${n}`),
          )}; allowed: ${flags.join(', ')}`
        : positional !== undefined
          ? `unexpected argument ${JSON.stringify(positional)}: this command takes only ${flags.join(', ')}`
          : msg.replace(/\. To specify a positional argument.*$/s, '')
    throw new BenchstreamError('BS_ERR_USAGE', `${what}\n${usage}`, { cause: err })
  }
}

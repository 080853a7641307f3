/**
 * `benchstream compare A B` and `benchstream history --label KEY`: release
 * comparisons over stored runs, read through a running API or ClickHouse
 * (reader.ts), computed and formatted by services/core/compare/.
 */
import { parseFlags, type FlagSpecs } from '../common/args.js'
import { FIGURE_KEYS } from '../../schemas/compare-api.v1.js'
import { ID_PATTERN, ID_RULE } from '../../schemas/events.v1.js'
import { outcomeExit, UNDECIDED_EXIT } from '../common/cli-env.js'
import { decideComparison } from '../core/compare/decision.js'
import { formatHistory, type HistoryOptions } from '../core/compare/history.js'
import { formatComparison } from '../core/compare/release-format.js'
import { BenchstreamError } from '../core/errors.js'
import { openReader } from './reader.js'
import { COMPARE_USAGE, HISTORY_USAGE } from './usage.js'

type Format = 'terminal' | 'markdown' | 'json'

function formatOf(v: { format?: string; json?: boolean }, usage: string): Format {
  if (v.json === true) return 'json'
  const f = v.format ?? 'terminal'
  if (f !== 'terminal' && f !== 'markdown' && f !== 'json')
    throw new BenchstreamError(
      'BS_ERR_USAGE',
      `--format ${JSON.stringify(f)} is not allowed: expected terminal, markdown or json\n${usage}`,
    )
  return f
}

function fraction(flag: string, raw: string | undefined, lowOpen: boolean, usage: string): number | undefined {
  if (raw === undefined) return undefined
  const v = Number(raw)
  const ok = raw.trim() !== '' && Number.isFinite(v) && (lowOpen ? v > 0 : v >= 0) && v < 1
  if (!ok)
    throw new BenchstreamError(
      'BS_ERR_USAGE',
      `${flag} ${JSON.stringify(raw)} is not allowed: expected a number ${lowOpen ? 'greater than 0' : 'from 0'} ` +
        `and less than 1\n${usage}`,
    )
  return v
}

/** The flags of compare (parseArgs options). */
export const COMPARE_FLAGS = {
  format: { type: 'string' },
  json: { type: 'boolean' },
  force: { type: 'boolean' },
  alpha: { type: 'string' },
  'min-effect': { type: 'string' },
  by: { type: 'string' },
  'fail-on-regression': { type: 'boolean' },
} as const satisfies FlagSpecs

/** The flags of history (parseArgs options). */
export const HISTORY_FLAGS = {
  label: { type: 'string' },
  workload: { type: 'string' },
  op: { type: 'string' },
  figure: { type: 'string' },
  filter: { type: 'string', multiple: true },
  format: { type: 'string' },
  json: { type: 'boolean' },
} as const satisfies FlagSpecs

export async function compareMain(argv: readonly string[]): Promise<number> {
  const parsed = parseFlags(argv, COMPARE_FLAGS, COMPARE_USAGE, true)
  const v = parsed.values
  if (parsed.positionals.length !== 2)
    throw new BenchstreamError(
      'BS_ERR_USAGE',
      `compare needs a baseline and a candidate, got ${parsed.positionals.length} ` +
        `argument${parsed.positionals.length === 1 ? '' : 's'}\n${COMPARE_USAGE}`,
    )
  const [baseline, candidate] = parsed.positionals as [string, string]
  const format = formatOf(v, COMPARE_USAGE)
  const alpha = fraction('--alpha', v.alpha, true, COMPARE_USAGE)
  const minEffect = fraction('--min-effect', v['min-effect'], false, COMPARE_USAGE)
  if (v.by !== undefined && !ID_PATTERN.test(v.by))
    throw new BenchstreamError(
      'BS_ERR_USAGE',
      `--by ${JSON.stringify(v.by)} is not allowed: a label key of ${ID_RULE}\n${COMPARE_USAGE}`,
    )
  const reader = openReader(process.env)
  let exit: number
  try {
    const c = await reader.compare(baseline, candidate, {
      ...(alpha === undefined ? {} : { alpha }),
      ...(minEffect === undefined ? {} : { minEffect }),
      force: v.force === true,
      ...(v.by === undefined ? {} : { by: v.by }),
    })
    if (format === 'json') process.stdout.write(JSON.stringify(c, null, 2) + '\n')
    else
      process.stdout.write(
        formatComparison(c, format, {
          color: format === 'terminal' && process.stdout.isTTY === true && process.env.NO_COLOR === undefined,
        }),
      )
    // The exit code follows what was decided (decision.ts), as the headline says it; JSON has no headline, so the
    // reason goes to stderr there.
    const d = decideComparison(c)
    exit = outcomeExit(
      { regressed: d.regressions.length > 0, undecided: d.undecided.length > 0 },
      v['fail-on-regression'] === true,
    )
    if (format === 'json' && exit === UNDECIDED_EXIT)
      process.stderr.write(`benchstream: undecided (exit ${UNDECIDED_EXIT}): ${d.undecided.join('; ')}\n`)
  } finally {
    await reader.close()
  }
  return exit
}

export async function historyMain(argv: readonly string[]): Promise<number> {
  const parsed = parseFlags(argv, HISTORY_FLAGS, HISTORY_USAGE)
  const v = parsed.values
  if (v.label === undefined || !ID_PATTERN.test(v.label))
    throw new BenchstreamError('BS_ERR_USAGE', `history needs --label KEY, the key of ${ID_RULE}\n${HISTORY_USAGE}`)
  const figures = FIGURE_KEYS.filter((f) => f !== 'server_cache_hit_ratio')
  if (v.figure !== undefined && !(figures as readonly string[]).includes(v.figure))
    throw new BenchstreamError(
      'BS_ERR_USAGE',
      `--figure ${JSON.stringify(v.figure)} is not allowed: expected one of ${figures.join(', ')}\n${HISTORY_USAGE}`,
    )
  if (v.op !== undefined && !/^[A-Z][A-Z-]{0,31}$/.test(v.op))
    throw new BenchstreamError(
      'BS_ERR_USAGE',
      `--op ${JSON.stringify(v.op)} is not allowed: an operation such as READ or SCAN, or OVERALL\n${HISTORY_USAGE}`,
    )
  const filter: Record<string, string> = {}
  for (const t of v.filter ?? []) {
    const eq = t.indexOf('=')
    if (eq <= 0 || !ID_PATTERN.test(t.slice(0, eq)))
      throw new BenchstreamError(
        'BS_ERR_USAGE',
        `--filter ${JSON.stringify(t)} is not KEY=VALUE with a key of ${ID_RULE}\n${HISTORY_USAGE}`,
      )
    filter[t.slice(0, eq)] = t.slice(eq + 1)
  }
  const format = formatOf(v, HISTORY_USAGE)
  const options: HistoryOptions = {
    label: v.label,
    ...(v.workload === undefined ? {} : { workload: v.workload }),
    ...(v.op === undefined ? {} : { op: v.op }),
    ...(v.figure === undefined ? {} : { figure: v.figure as NonNullable<HistoryOptions['figure']> }),
    ...(Object.keys(filter).length === 0 ? {} : { filter }),
  }
  const reader = openReader(process.env)
  try {
    const h = await reader.history(options)
    process.stdout.write(
      format === 'json' ? JSON.stringify(h, null, 2) + '\n' : formatHistory(h, format === 'markdown'),
    )
  } finally {
    await reader.close()
  }
  return 0
}

/**
 * The `benchstream` command: one entry, one subcommand per job.
 *
 * Every subcommand answers `--help` (and `benchstream help <command>`)
 * before it parses anything or opens a connection. A user's mistake prints
 * one line with its BS_ERR_* code and what is allowed, never a stack trace;
 * `--debug` (anywhere before a `--`) adds the stack and the causes.
 */
import { flagNames } from '../common/args.js'
import { isBenchstreamError } from '../core/errors.js'
import { NOTHING_TO_COMPARE_EXIT } from '../common/cli-env.js'
import { closest } from '../core/suggest.js'

/** A command's flags as written on a command line (`--seconds`, `-threads`), or its subcommands' flags. */
export type CommandFlags = readonly string[] | Readonly<Record<string, readonly string[]>>

interface Command {
  summary: string
  /** The command's help text (loaded on demand: some pull in large modules). */
  usage: () => Promise<string>
  /** The flags it parses, from the definitions its parser uses (for the docs check, services/cli/lint-docs.ts). */
  flags: () => Promise<CommandFlags>
  run: (argv: readonly string[]) => Promise<number>
}

/** Flags every command takes before a `--`: help (answered here) and --debug. */
const GLOBAL_FLAGS = ['--help', '-h', '--debug'] as const

const COMMANDS: Record<string, Command> = {
  demo: {
    summary: 'the whole pipeline on this machine: Kafka, processor, API, a workload, live status, the report',
    usage: async () => (await import('./usage.js')).DEMO_USAGE,
    flags: async () => flagNames((await import('./demo.js')).DEMO_FLAGS),
    run: async (argv) => (await import('./demo.js')).demoMain(argv),
  },
  run: {
    summary: 'run phase of a YCSB workload against a binding, one event per operation to Kafka',
    usage: driverUsage,
    flags: driverFlags,
    run: async (argv) => (await import('./repeat.js')).runMain(argv),
  },
  load: {
    summary: 'load phase of a YCSB workload',
    usage: driverUsage,
    flags: driverFlags,
    run: async (argv) => (await import('../driver/main.js')).driverMain('load', argv),
  },
  server: {
    summary: 'the backend: events into ClickHouse windows, alerts, the API and live view',
    usage: async () => (await import('../server/usage.js')).SERVER_USAGE,
    flags: serverFlags,
    run: async (argv) => (await import('../server/main.js')).serverMain(argv),
  },
  processor: {
    summary: 'alias of server',
    usage: async () => (await import('../server/usage.js')).SERVER_USAGE,
    flags: serverFlags,
    run: async (argv) => (await import('../server/main.js')).serverMain(argv),
  },
  report: {
    summary: "a run's report (YCSB layout, or --json), with --threshold checks",
    usage: async () => (await import('./usage.js')).READ_USAGE.report,
    flags: async () => flagNames((await import('./read.js')).READ_FLAGS.report),
    run: async (argv) => (await import('./read.js')).readMain('report', argv),
  },
  runs: {
    summary: 'list runs (filter by --group, --label)',
    usage: async () => (await import('./usage.js')).READ_USAGE.runs,
    flags: async () => flagNames((await import('./read.js')).READ_FLAGS.runs),
    run: async (argv) => (await import('./read.js')).readMain('runs', argv),
  },
  alerts: {
    summary: 'alerts of runs (--follow: as they fire and resolve), and silences that hold their webhook back',
    usage: async () => (await import('./usage.js')).ALERTS_USAGE,
    // One list for every form: the listing takes no subcommand word, which a per-subcommand list would need.
    flags: async () => [...new Set(Object.values((await import('./alerts.js')).ALERTS_FLAGS).flatMap(flagNames))],
    run: async (argv) => (await import('./alerts.js')).alertsMain(argv),
  },
  compare: {
    summary: 'release A vs release B: runs, groups or label selectors, a verdict per figure (terminal, Markdown, JSON)',
    usage: async () => (await import('./usage.js')).COMPARE_USAGE,
    flags: async () => flagNames((await import('./compare.js')).COMPARE_FLAGS),
    run: async (argv) => (await import('./compare.js')).compareMain(argv),
  },
  history: {
    summary: 'a figure over a label-ordered series of runs (e.g. versions), change points marked',
    usage: async () => (await import('./usage.js')).HISTORY_USAGE,
    flags: async () => flagNames((await import('./compare.js')).HISTORY_FLAGS),
    run: async (argv) => (await import('./compare.js')).historyMain(argv),
  },
  sweep: {
    summary: 'run a workload over -threads, -target or a property list; saturation, knee and an SVG chart',
    usage: async () => (await import('./usage.js')).SWEEP_USAGE,
    flags: async () => {
      const [{ DRIVER_FLAGS }, { SWEEP_FLAGS, SWEEP_SETS }] = await Promise.all([
        import('../driver/config.js'),
        import('./sweep.js'),
      ])
      return [...DRIVER_FLAGS.filter((f) => !(SWEEP_SETS as readonly string[]).includes(f)), ...SWEEP_FLAGS]
    },
    run: async (argv) => (await import('./sweep.js')).sweepMain(argv),
  },
  sql: {
    summary: 'a read-only SQL query over the benchmark data, every row streamed, printed as clickhouse-client would',
    usage: async () => (await import('./usage.js')).READ_USAGE.sql,
    flags: async () => flagNames((await import('./sql.js')).SQL_FLAGS),
    run: async (argv) => (await import('./sql.js')).sqlMain(argv),
  },
  export: {
    summary: "a run's raw events, windows or summary into a Parquet, Arrow, CSV or JSON lines file, streamed",
    usage: async () => (await import('./usage.js')).READ_USAGE.export,
    flags: async () => flagNames((await import('./export.js')).EXPORT_FLAGS),
    run: async (argv) => (await import('./export.js')).exportMain(argv),
  },
  profile: {
    summary:
      'CPU profiles of a run: attach folded stacks or perf script output, capture a JVM with async-profiler, list',
    usage: async () => (await import('./profile.js')).PROFILE_USAGE,
    flags: async () =>
      Object.fromEntries(
        Object.entries((await import('./profile.js')).PROFILE_FLAGS).map(([s, f]) => [s, flagNames(f)]),
      ),
    run: async (argv) => (await import('./profile.js')).profileMain(argv),
  },
  ycsb: {
    summary:
      "real YCSB with any binding, every operation streamed live through the bridge; YCSB's report " +
      "next to Benchstream's",
    usage: async () => (await import('./usage.js')).YCSB_USAGE,
    flags: async () => flagNames((await import('./ycsb-args.js')).YCSB_FLAGS),
    run: async (argv) => (await import('./ycsb.js')).ycsbMain(argv),
  },
  agent: {
    summary: 'on a client machine: runs the experiment work addressed to it (clients, lifecycle steps, profiles)',
    usage: async () => (await import('../agent/config.js')).AGENT_USAGE,
    flags: async () => (await import('../agent/config.js')).AGENT_FLAG_NAMES,
    run: async (argv) => (await import('../agent/main.js')).agentMain(argv),
  },
  experiment: {
    summary: 'one plan runs a whole release comparison across client machines: run, resume, status, list',
    usage: async () => (await import('./experiment.js')).EXPERIMENT_USAGE,
    flags: async () =>
      Object.fromEntries(
        Object.entries((await import('./experiment.js')).EXPERIMENT_FLAGS).map(([s, f]) => [s, flagNames(f)]),
      ),
    run: async (argv) => (await import('./experiment.js')).experimentMain(argv),
  },
  'import-ycsb': {
    summary: 'what YCSB wrote into a run: reports, raw data, interval logs (--follow: live from a running YCSB)',
    usage: async () => (await import('./usage.js')).IMPORT_YCSB_USAGE,
    flags: async () => flagNames((await import('./import-ycsb-args.js')).IMPORT_YCSB_FLAGS),
    run: async (argv) => (await import('./import-ycsb.js')).importYcsbMain(argv),
  },
  pe: {
    summary:
      "HBase's PerformanceEvaluation (hbase pe) as one client of a run: started at a barrier, sent as a summary run",
    usage: async () => (await import('./usage.js')).PE_USAGE,
    flags: async () => flagNames((await import('./pe.js')).PE_FLAGS),
    run: async (argv) => (await import('./pe.js')).peMain(argv),
  },
  'import-pe': {
    summary: "what HBase's PerformanceEvaluation (hbase pe) printed, into a summary run, old and current forms",
    usage: async () => (await import('./usage.js')).IMPORT_PE_USAGE,
    flags: async () => flagNames((await import('./import-pe.js')).IMPORT_PE_FLAGS),
    run: async (argv) => (await import('./import-pe.js')).importPeMain(argv),
  },
}

/** Help topics that are not commands. */
const TOPICS: Record<string, () => Promise<string>> = {
  thresholds: async () => (await import('./thresholds-help.js')).THRESHOLDS_HELP,
}

async function driverUsage(): Promise<string> {
  const [{ driverUsage: usage }, { BINDING_NAMES }] = await Promise.all([
    import('../driver/config.js'),
    import('../adapters/datastores/names.js'),
  ])
  return usage(BINDING_NAMES)
}

async function driverFlags(): Promise<CommandFlags> {
  return (await import('../driver/config.js')).DRIVER_FLAGS
}

async function serverFlags(): Promise<CommandFlags> {
  return flagNames((await import('../server/main.js')).SERVER_FLAGS)
}

/** What a command line may say: every command with its flags, the flags of all, and the help topics. */
export interface CommandLineSpec {
  commands: Readonly<Record<string, CommandFlags>>
  global: readonly string[]
  topics: readonly string[]
}

export async function commandLineSpec(): Promise<CommandLineSpec> {
  const entries = await Promise.all(Object.entries(COMMANDS).map(async ([name, c]) => [name, await c.flags()] as const))
  return { commands: Object.fromEntries(entries), global: GLOBAL_FLAGS, topics: Object.keys(TOPICS) }
}

export function help(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((c) => c.length))
  return `usage: benchstream <command> [options]

commands:
${Object.entries(COMMANDS)
  .map(([c, d]) => `  ${c.padEnd(width)}  ${d.summary}`)
  .join('\n')}

  benchstream help <command>   (or benchstream <command> --help) for a command's options
  benchstream help thresholds  for --threshold expressions
  --debug                      print stack traces of failures
Environment variables (KAFKA_BROKERS, CLICKHOUSE_URL, BENCHSTREAM_DATA_DIR, ...): see docs/reference/configuration.md.
`
}

export async function main(argv: readonly string[]): Promise<number> {
  // Flags of this wrapper come before a `--`; what follows belongs to the command.
  const dashdash = argv.indexOf('--')
  const own = dashdash === -1 ? argv : argv.slice(0, dashdash)
  const debug = own.includes('--debug')
  const args = debug
    ? [...own.filter((a) => a !== '--debug'), ...(dashdash === -1 ? [] : argv.slice(dashdash))]
    : [...argv]
  const [cmd, ...rest] = args
  try {
    if (cmd === undefined || cmd === '-h' || cmd === '--help') {
      process.stdout.write(help())
      return cmd === undefined ? 2 : 0
    }
    if (cmd === 'help') return await printHelp(rest[0])
    const command = Object.hasOwn(COMMANDS, cmd) ? COMMANDS[cmd] : undefined
    if (command === undefined) {
      const c = closest(cmd, Object.keys(COMMANDS))
      process.stderr.write(
        `benchstream: BS_ERR_USAGE: unknown command ` +
          `${JSON.stringify(cmd)}${c === undefined ? '' : `; did you mean ${c}?`}\n\n${help()}`,
      )
      return 2
    }
    const before = rest.indexOf('--')
    const flags = before === -1 ? rest : rest.slice(0, before)
    if (flags.includes('--help') || flags.includes('-h')) {
      process.stdout.write((await command.usage()) + '\n')
      return 0
    }
    // `benchstream server & benchstream <cmd>`: the server says it is starting as early as it can, and the others
    // wait for it rather than fail beside it (adapters/process/server-wait.ts; those that need Kafka also look for
    // one about to start).
    const wait = await import('../adapters/process/server-wait.js')
    if (cmd === 'server' || cmd === 'processor') wait.markStarting(process.env)
    else if (cmd !== 'demo') await wait.waitBesideStartingServer(process.env, false)
    return await command.run(rest)
  } catch (err) {
    process.stderr.write(describeFailure(err, debug))
    if (isBenchstreamError(err, 'BS_ERR_NOTHING_TO_COMPARE')) return NOTHING_TO_COMPARE_EXIT
    return isBenchstreamError(err) && err.code === 'BS_ERR_USAGE' ? 2 : 1
  }
}

async function printHelp(topic: string | undefined): Promise<number> {
  if (topic === undefined) {
    process.stdout.write(help())
    return 0
  }
  const command = Object.hasOwn(COMMANDS, topic) ? COMMANDS[topic] : undefined
  const text =
    command !== undefined ? await command.usage() : Object.hasOwn(TOPICS, topic) ? await TOPICS[topic]!() : undefined
  if (text === undefined) {
    const c = closest(topic, [...Object.keys(COMMANDS), ...Object.keys(TOPICS)])
    process.stderr.write(
      `benchstream: BS_ERR_USAGE: no help for ${JSON.stringify(topic)}` +
        (c === undefined ? '' : `; did you mean ${c}?`) +
        '; ' +
        `commands: ${Object.keys(COMMANDS).join(', ')}; topics: ${Object.keys(TOPICS).join(', ')}\n`,
    )
    return 2
  }
  process.stdout.write(text + '\n')
  return 0
}

/**
 * One line for the user; the stack and causes only with --debug. Our own
 * errors carry their code; anything else (a library's error) says that
 * --debug shows where it came from.
 */
export function describeFailure(err: unknown, debug: boolean): string {
  const e = err instanceof Error ? err : new Error(String(err))
  const head = isBenchstreamError(e)
    ? `benchstream: ${e.code}: ${e.message}`
    : `benchstream: ${e.message.split('\n')[0]}`
  if (!debug) return `${head}\n${isBenchstreamError(e) ? '' : '(run again with --debug for the stack trace)\n'}`
  const parts = [head, e.stack ?? '']
  for (
    let c: unknown = e.cause, depth = 0;
    c !== undefined && depth < 5;
    c = (c as { cause?: unknown }).cause, depth++
  ) {
    parts.push(`caused by: ${c instanceof Error ? (c.stack ?? c.message) : JSON.stringify(c)}`)
  }
  return parts.join('\n') + '\n'
}

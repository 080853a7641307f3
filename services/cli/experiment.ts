/**
 * `benchstream experiment run|resume|status|list`: the composition root of
 * the coordinator (services/experiments/app.ts): the plan from its file, the
 * control topic, the experiment store and the run reader through a running
 * server's API, and the experiment's folder for its comparisons.
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { parse as parseYaml } from 'yaml'
import { ID_PATTERN, ID_RULE } from '../../schemas/events.v1.js'
import type { ExperimentState } from '../../schemas/experiment-state.v1.js'
import { ApiExperimentStore } from '../adapters/http/experiment-api.js'
import { KafkaControlBus } from '../adapters/kafka/control-bus.js'
import { parseFlags, type FlagSpecs } from '../common/args.js'
import { outcomeExit, REGRESSION_EXIT, UNDECIDED_EXIT } from '../common/cli-env.js'
import { readInfraConfig } from '../common/infra-config.js'
import { awaitServer } from '../common/server-file.js'
import { createLogger } from '../common/logger.js'
import { BenchstreamError } from '../core/errors.js'
import { decideExperiment } from '../core/experiments/decision.js'
import { experimentIdOf } from '../core/experiments/matrix.js'
import { checkPlan } from '../core/experiments/plan.js'
import { formatChain } from '../core/experiments/bisect.js'
import { counts, formatMatrix } from '../core/experiments/state.js'
import { Conductor } from '../experiments/app.js'
import { BISECT_FLAGS, BISECT_USAGE, bisectCommand } from './bisect.js'
import { apiOf, openReader } from './reader.js'

/** A plan file larger than this is not a plan. */
const MAX_PLAN_BYTES = 1024 * 1024

export const EXPERIMENT_FLAGS = {
  run: {
    id: { type: 'string' },
    out: { type: 'string' },
    check: { type: 'boolean' },
    'fail-on-regression': { type: 'boolean' },
  },
  resume: { out: { type: 'string' }, 'fail-on-regression': { type: 'boolean' } },
  status: { follow: { type: 'boolean' }, json: { type: 'boolean' } },
  list: { json: { type: 'boolean' }, limit: { type: 'string' } },
  bisect: BISECT_FLAGS,
} as const satisfies Record<string, FlagSpecs>

export const EXPERIMENT_USAGE = `usage: benchstream experiment run PLAN [--out DIR] [--id ID] [--check]
                                          [--fail-on-regression]
       benchstream experiment resume ID [--out DIR] [--fail-on-regression]
       benchstream experiment status [ID] [--follow] [--json]
       benchstream experiment list [--json] [--limit N]
       benchstream experiment bisect PLAN --good V --bad V [--figure F]... [--id ID] [--out DIR]
                                          [--maven-repo URL]
       benchstream experiment bisect --resume ID [--out DIR]
Runs a whole comparison from one plan (YAML or JSON: docs/guides/experiments.md): releases or
configurations (setups) x workloads x repetitions, each run on as many agents (benchstream agent on
the client machines) started at one instant, repetitions interleaved across setups, incomplete runs
run again, and compare for the pairs the plan names at the end. Needs a running server (its API
stores the experiment; BENCHSTREAM_API_URL or the server of this data folder) and KAFKA_BROKERS.
  run PLAN                 check the plan whole, wait for the agents, run it; the comparisons go to
                           --out DIR/<id>/ (default: <BENCHSTREAM_DATA_DIR>/experiments/<id>/)
    --check                check the plan only (the file; the agents are checked when it runs)
    --id ID                the experiment's id (default: <name>-<time>)
    --fail-on-regression   exit ${REGRESSION_EXIT} when a comparison finds a regression
  resume ID                continue an interrupted experiment from what is stored: runs left
                           running are settled (complete or not), finished runs are not run again
  run and resume end with a headline of what was decided and exit 0 only when it was decided:
  ${UNDECIDED_EXIT} undecided (runs failed, figures not testable, pairs not compared), ${REGRESSION_EXIT} a regression
  with --fail-on-regression, 1 an error
  status [ID]              the matrix: ✓ done, ▶ running, ✗ failed, · left (default: the newest);
                           a bisection's chain of steps
    --follow               print it again as it changes, until the experiment ends
  list                     experiments, newest first
${BISECT_USAGE}`

function usage(message: string): BenchstreamError {
  return new BenchstreamError('BS_ERR_USAGE', `${message}\n${EXPERIMENT_USAGE}`)
}

export async function experimentMain(argv: readonly string[]): Promise<number> {
  const [sub, ...rest] = argv
  switch (sub) {
    case 'run':
      return runCommand(rest)
    case 'resume':
      return resumeCommand(rest)
    case 'status':
      return statusCommand(rest)
    case 'list':
      return listCommand(rest)
    case 'bisect':
      return bisectCommand(rest, bisectWiring, EXPERIMENT_USAGE)
    default:
      throw usage(
        sub === undefined
          ? 'experiment needs a subcommand: run, resume, status, list or bisect'
          : `unknown subcommand ${JSON.stringify(sub)}: run, resume, status, list or bisect`,
      )
  }
}

/** The plan file, parsed (YAML, of which JSON is a part) and checked whole. */
export function readPlanFile(file: string): ReturnType<typeof checkPlan> {
  if (!existsSync(file) || !statSync(file).isFile()) throw usage(`no plan file ${file}`)
  if (statSync(file).size > MAX_PLAN_BYTES)
    throw new BenchstreamError('BS_ERR_PLAN', `${file} is over ${MAX_PLAN_BYTES} bytes: not a plan`)
  let value: unknown
  try {
    value = parseYaml(readFileSync(file, 'utf8'), { maxAliasCount: 100 })
  } catch (err) {
    throw new BenchstreamError(
      'BS_ERR_PLAN',
      `${file} is neither YAML nor JSON: ${(err as Error).message.split('\n')[0]}`,
    )
  }
  return checkPlan(value, file)
}

/** Longest wait for a server of this data folder to show up (started on the same command line, `server &`). */
const SERVER_APPEAR_MS = 15_000
/** Longest wait for a starting server (its first start fetches the Kafka jars with Maven). */
const SERVER_STARTING_MS = 600_000

/**
 * Waits for the server of this data folder when none answers yet, saying so: `benchstream server & benchstream
 * experiment run PLAN` starts both at once, and the server is ready only once its broker and engine are.
 */
async function serverUp(): Promise<void> {
  if (apiOf(process.env).api !== undefined) return
  const infra = readInfraConfig(process.env)
  if (infra.clickhouse.url !== undefined) return
  await awaitServer(infra.dataDir, {
    appearMs: SERVER_APPEAR_MS,
    startingMs: SERVER_STARTING_MS,
    onWait: (pid) =>
      process.stderr.write(
        pid === undefined
          ? `benchstream: no server on ${infra.dataDir} yet: waiting up to ${SERVER_APPEAR_MS / 1000} s for one\n`
          : `benchstream: waiting for the server starting on ${infra.dataDir} (pid ${pid}), up to ` +
              `${SERVER_STARTING_MS / 60_000} minutes\n`,
      ),
  })
}

function server(): { api: string; token: string | undefined } {
  const { api, token } = apiOf(process.env)
  if (api === undefined)
    throw new BenchstreamError(
      'BS_ERR_USAGE',
      'an experiment needs a running server: its API stores the experiment and counts the runs. Start ' +
        '`benchstream server` (or `npm run demo`), or set BENCHSTREAM_API_URL to one',
    )
  return { api, token }
}

/** Wires the coordinator; `outBase` is where experiment folders go. */
function conductor(
  outBase: string,
  print: boolean,
): { c: Conductor; store: ApiExperimentStore; close: () => Promise<void> } {
  const infra = readInfraConfig(process.env)
  const { api, token } = server()
  const store = new ApiExperimentStore(api, token)
  const reader = openReader(process.env)
  const log = createLogger('benchstream-experiment', process.env)
  let last = ''
  const c = new Conductor({
    bus: KafkaControlBus.create(infra.kafka, infra.topics.control, 'coordinator', infra.topics),
    store,
    runs: {
      report: async (runId) => {
        try {
          return await reader.report(runId)
        } catch (err) {
          if (err instanceof BenchstreamError && err.code === 'BS_ERR_NOT_FOUND') return undefined
          throw err
        }
      },
      compare: (a, b, o) => reader.compare(a, b, o),
    },
    now: () => Date.now(),
    log,
    write: (id, name, text) => {
      const dir = path.join(outBase, id)
      mkdirSync(dir, { recursive: true })
      const file = path.join(dir, name)
      writeFileSync(file, text)
      return file
    },
    onChange: (s) => {
      if (!print) return
      const k = counts(s)
      const line =
        `${s.id}: ${k.done} done, ${k.running} running, ` +
        `${k.failed} failed, ` +
        `${k.left} left of ${s.cells.length}`
      if (line !== last)
        process.stderr.write(
          `${new Date().toISOString().slice(11, 19)} ${line}${s.currentRun === null ? '' : ` (now ${s.currentRun})`}\n`,
        )
      last = line
    },
  })
  return {
    c,
    store,
    close: async () => {
      await c.close()
      await reader.close()
    },
  }
}

/** What a bisection needs of this file: the plan reader and the coordinator of its steps. */
const bisectWiring = {
  readPlanFile,
  outBase,
  usage,
  open: (base: string) => {
    const { c, store, close } = conductor(base, true)
    return {
      steps: { run: c.run.bind(c), resume: c.resume.bind(c), start: c.start.bind(c), close },
      store,
    }
  },
}

function outBase(flag: string | undefined): string {
  return flag === undefined ? path.join(readInfraConfig(process.env).dataDir, 'experiments') : path.resolve(flag)
}

/**
 * Prints the matrix, comparison.md and, last, the headline of what was decided (decideExperiment: the same as
 * comparison.md's and the experiment page's); the exit code follows it (outcomeExit).
 */
function finish(state: ExperimentState, base: string, failOnRegression: boolean): number {
  process.stdout.write(formatMatrix(state))
  const summary = path.join(base, state.id, 'comparison.md')
  if (existsSync(summary))
    process.stdout.write(`\n${readFileSync(summary, 'utf8')}\ncomparisons in ${path.dirname(summary)}\n`)
  const d = decideExperiment(state)
  process.stdout.write(`\n${d.headline}\n`)
  return outcomeExit(
    { regressed: d.regressions.length > 0, undecided: d.undecided.length > 0 || d.outcome === 'running' },
    failOnRegression,
  )
}

async function runCommand(argv: readonly string[]): Promise<number> {
  const { values: v, positionals } = parseFlags(argv, EXPERIMENT_FLAGS.run, EXPERIMENT_USAGE, true)
  if (positionals.length !== 1) throw usage('experiment run needs one plan file')
  const plan = readPlanFile(positionals[0]!)
  if (plan.versions !== undefined)
    throw usage(
      `${positionals[0]} is a bisection's plan (it has versions): benchstream experiment bisect ` +
        `${positionals[0]} --good V --bad V`,
    )
  if (v.check === true) {
    process.stdout.write(
      `${positionals[0]}: a valid plan (${plan.setups.length} setups, ${plan.workloads.length} workloads)\n`,
    )
    return 0
  }
  // The id names the experiment's runs, groups and folder: checked here, before anything runs or is stored.
  if (v.id !== undefined && !ID_PATTERN.test(v.id))
    throw usage(`--id ${JSON.stringify(v.id)} is not allowed: ${ID_RULE}`)
  const id = v.id ?? experimentIdOf(plan.name, Date.now())
  const base = outBase(v.out)
  await serverUp()
  const { c, store, close } = conductor(base, true)
  let stop = false
  const onSignal = (): void => {
    if (stop) process.exit(130)
    stop = true
    process.stderr.write('benchstream: stopping after the current run (Ctrl-C again to leave at once)\n')
    void c.close()
  }
  process.on('SIGINT', onSignal)
  try {
    // The server must answer before anything runs: it stores the experiment and counts its runs.
    await store.list(1)
    await c.start()
    process.stderr.write(`benchstream: experiment ${id}: waiting for the agents the plan needs\n`)
    const state = await c.run(plan, id)
    return finish(state, base, v['fail-on-regression'] === true)
  } finally {
    process.off('SIGINT', onSignal)
    await close()
  }
}

async function resumeCommand(argv: readonly string[]): Promise<number> {
  const { values: v, positionals } = parseFlags(argv, EXPERIMENT_FLAGS.resume, EXPERIMENT_USAGE, true)
  if (positionals.length !== 1) throw usage('experiment resume needs the experiment id')
  const base = outBase(v.out)
  await serverUp()
  const { c, close } = conductor(base, true)
  try {
    await c.start()
    const state = await c.resume(positionals[0]!)
    return finish(state, base, v['fail-on-regression'] === true)
  } finally {
    await close()
  }
}

async function statusCommand(argv: readonly string[]): Promise<number> {
  const { values: v, positionals } = parseFlags(argv, EXPERIMENT_FLAGS.status, EXPERIMENT_USAGE, true)
  if (positionals.length > 1) throw usage('experiment status takes at most one experiment id')
  const { api, token } = server()
  const store = new ApiExperimentStore(api, token)
  const id = positionals[0] ?? (await store.list(1))[0]?.id
  if (id === undefined)
    throw new BenchstreamError('BS_ERR_NOT_FOUND', 'no experiment yet: start one with benchstream experiment run PLAN')
  for (let last = ''; ;) {
    const state = await store.load(id)
    if (state === undefined) throw new BenchstreamError('BS_ERR_NOT_FOUND', `no experiment ${JSON.stringify(id)}`)
    const text =
      v.json === true
        ? JSON.stringify(
            state.bisect !== undefined ? state : { ...state, decision: decideExperiment(state) },
            null,
            2,
          ) + '\n'
        : state.bisect !== undefined
          ? formatChain(state)
          : `${formatMatrix(state)}${decideExperiment(state).headline}\n`
    if (text !== last) process.stdout.write(text)
    last = text
    if (v.follow !== true || state.status !== 'running') return 0
    await new Promise((r) => setTimeout(r, 1000))
  }
}

async function listCommand(argv: readonly string[]): Promise<number> {
  const { values: v } = parseFlags(argv, EXPERIMENT_FLAGS.list, EXPERIMENT_USAGE)
  const limit = v.limit === undefined ? 50 : Number(v.limit)
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw usage('--limit: an integer from 1 to 1000')
  const { api, token } = server()
  const list = await new ApiExperimentStore(api, token).list(limit)
  if (v.json === true) {
    process.stdout.write(JSON.stringify(list, null, 2) + '\n')
    return 0
  }
  for (const e of list)
    process.stdout.write(
      `${e.id}  ${e.status.padEnd(11)} ${new Date(e.createdAtMs).toISOString().slice(0, 19)} ` +
        ` runs ${e.runs.done} done, ` +
        `${e.runs.running} running, ${e.runs.failed} failed, ${e.runs.left} left\n`,
    )
  if (list.length === 0) process.stdout.write('no experiment yet\n')
  return 0
}

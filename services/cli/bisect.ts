/**
 * `benchstream experiment bisect PLAN --good V --bad V [--figure F]...` and
 * `benchstream experiment bisect --resume ID`: the composition root of a
 * bisection (services/experiments/bisect.ts). The versions come from the
 * plan's list or from a Maven artifact's maven-metadata.xml (Maven Central,
 * or --maven-repo); the coordinator that runs each step is wired by
 * services/cli/experiment.ts and handed in.
 */
import type { Plan } from '../../schemas/experiment-plan.v1.js'
import type { ExperimentState } from '../../schemas/experiment-state.v1.js'
import { FIGURE_NAME } from '../../schemas/experiment-plan.v1.js'
import { ID_PATTERN, ID_RULE } from '../../schemas/events.v1.js'
import { fetchMavenMetadata, MAVEN_CENTRAL } from '../adapters/http/maven-metadata.js'
import { parseFlags, type FlagSpecs } from '../common/args.js'
import { createLogger } from '../common/logger.js'
import { BenchstreamError } from '../core/errors.js'
import { formatChain, MAX_BISECT_ID } from '../core/experiments/bisect.js'
import { experimentIdOf } from '../core/experiments/matrix.js'
import { listRange, mavenMetadataUrl, mavenRange, parseMavenMetadata } from '../core/experiments/versions.js'
import type { ExperimentStore } from '../core/ports/experiment-store.js'
import { closest } from '../core/suggest.js'
import { schemaProblems } from '../core/validation.js'
import { Bisector, type StepRunner } from '../experiments/bisect.js'

export const BISECT_FLAGS = {
  good: { type: 'string' },
  bad: { type: 'string' },
  figure: { type: 'string', multiple: true },
  id: { type: 'string' },
  out: { type: 'string' },
  resume: { type: 'string' },
  'maven-repo': { type: 'string' },
} as const satisfies FlagSpecs

export const BISECT_USAGE = `  bisect PLAN --good V --bad V
                           find the first version that is worse than --good: the ends first (bad
                           against good must regress), then the version in the middle against good
                           while a range is open; each step an experiment of its own. The plan's
                           versions (a list, or a Maven artifact) and its setups as templates
                           (\${version}): docs/guides/experiments.md#bisect
    --figure F             follow this figure ([workload:]label, e.g. workloade:SCAN p50; repeatable;
                           default: the plan's figures, else those the ends find regressed)
    --id ID                the bisection's id (at most ${MAX_BISECT_ID} characters; default: <name>-<time>)
    --maven-repo URL       where versions.maven is read (default ${MAVEN_CENTRAL})
    --resume ID            continue a bisection after a crash or Ctrl-C, from its stored chain
  Exit 0 when the first bad version is found; 1 when the ends are not confirmed, a step stays
  undecided (the range it could not narrow is printed) or a step fails.`

/** What experiment.ts wires: the coordinator that runs each step, and the experiment's folder. */
export interface BisectWiring {
  readPlanFile(file: string): Plan
  outBase(flag: string | undefined): string
  /** The coordinator that runs the steps (start: on the control topic), their files under `outBase`, and the store. */
  open(outBase: string): {
    steps: StepRunner & { start(): Promise<void>; close(): Promise<void> }
    store: ExperimentStore
  }
  usage(message: string): BenchstreamError
}

export async function bisectCommand(argv: readonly string[], w: BisectWiring, usageText: string): Promise<number> {
  const { values: v, positionals } = parseFlags(argv, BISECT_FLAGS, usageText, true)
  const base = w.outBase(v.out)
  if (v.resume !== undefined) {
    if (positionals.length > 0 || v.good !== undefined || v.bad !== undefined || v.figure !== undefined)
      throw w.usage('experiment bisect --resume ID takes no plan, --good, --bad or --figure: they are stored')
    return runBisection(w, base, (b) => b.resume(v.resume!))
  }
  if (positionals.length !== 1) throw w.usage('experiment bisect needs one plan file')
  if (v.good === undefined || v.bad === undefined) throw w.usage('experiment bisect needs --good V and --bad V')
  const plan = w.readPlanFile(positionals[0]!)
  if (plan.versions === undefined)
    throw w.usage(`${positionals[0]} has no versions: a bisection needs versions: { list: [...] } or { maven: G:A }`)
  const named = v.figure ?? plan.figures ?? []
  for (const f of v.figure ?? []) {
    const problems = schemaProblems(FIGURE_NAME, f, '--figure', 'a figure name')
    if (problems.length > 0) throw w.usage(problems.join('; '))
  }
  if (v.id !== undefined && (!ID_PATTERN.test(v.id) || v.id.length > MAX_BISECT_ID))
    throw w.usage(`--id ${JSON.stringify(v.id)} is not allowed: ${ID_RULE}, at most ${MAX_BISECT_ID} characters`)
  const { versions, source } = await resolveVersions(plan, v.good, v.bad, v['maven-repo'] ?? MAVEN_CENTRAL)
  process.stderr.write(
    `benchstream: bisecting ${versions.length} versions (${source}): ${versions.slice(0, 6).join(', ')}` +
      `${versions.length > 6 ? ` ... ${versions.at(-1)}` : ''}\n`,
  )
  const id = v.id ?? experimentIdOf(plan.name, Date.now())
  return runBisection(w, base, (b) =>
    b.start(plan, id, { good: v.good!, bad: v.bad!, versions, source, named: [...named] }),
  )
}

/** The versions from good to bad: the plan's list as ordered, or the Maven artifact's released ones in order. */
async function resolveVersions(
  plan: Plan,
  good: string,
  bad: string,
  repository: string,
): Promise<{ versions: string[]; source: string }> {
  const pv = plan.versions!
  if (pv.list !== undefined) return { versions: listRange(pv.list, good, bad), source: "the plan's list" }
  if (!/^https?:\/\/[^\s]{1,1000}$/.test(repository))
    throw new BenchstreamError(
      'BS_ERR_USAGE',
      `--maven-repo ${JSON.stringify(repository.slice(0, 100))}: an http(s) URL`,
    )
  const url = mavenMetadataUrl(repository, pv.maven!)
  const found = parseMavenMetadata(await fetchMavenMetadata(url), pv.maven!, url)
  if (found.rejectedCount > 0)
    process.stderr.write(
      `benchstream: ${url} lists ${found.rejectedCount} versions that are not usable here (${ID_RULE}), left out: ` +
        `${found.rejected.join(', ')}\n`,
    )
  for (const k of Object.keys(pv.from ?? {}))
    if (!found.versions.includes(k)) {
      const c = closest(k, found.versions)
      throw new BenchstreamError(
        'BS_ERR_PLAN',
        `versions.from: ${k} is not a version of ${pv.maven}${c === undefined ? '' : `; did you mean ${c}?`}`,
      )
    }
  return {
    versions: mavenRange(found.versions, good, bad, { prereleases: pv.prereleases ?? false, source: url }),
    source: `maven:${pv.maven}`,
  }
}

async function runBisection(
  w: BisectWiring,
  base: string,
  go: (b: Bisector) => Promise<ExperimentState>,
): Promise<number> {
  const { steps, store } = w.open(base)
  let stopping = false
  let last = ''
  const bisector = new Bisector({
    steps,
    store,
    now: () => Date.now(),
    log: createLogger('benchstream-bisect', process.env),
    stopping: () => stopping,
    onChange: (s) => {
      const b = s.bisect!
      const line = b.chain.map((x) => `${x.version} ${x.outcome}`).join(', ')
      if (line !== last)
        process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${s.id}: ${line || 'starting'}\n`)
      last = line
    },
  })
  const onSignal = (): void => {
    if (stopping) process.exit(130)
    stopping = true
    process.stderr.write(
      'benchstream: stopping after the current run; --resume goes on from there (Ctrl-C again to leave at once)\n',
    )
    void steps.close()
  }
  process.on('SIGINT', onSignal)
  try {
    // The server must answer before anything runs: it stores the bisection and its steps.
    await store.list(1)
    await steps.start()
    const state = await go(bisector)
    process.stdout.write(formatChain(state))
    if (state.status === 'interrupted')
      process.stderr.write(
        `benchstream: interrupted; continue with benchstream experiment bisect --resume ${state.id}\n`,
      )
    return state.bisect?.result?.kind === 'found' ? 0 : 1
  } finally {
    process.off('SIGINT', onSignal)
    await steps.close()
  }
}

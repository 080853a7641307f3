/**
 * Bisection (services/core/experiments/bisect.ts, services/experiments/bisect.ts)
 * with a fake verdict oracle in place of the experiments: the boundary found in
 * ceil(log2(n)) steps for every place it can be; unconfirmed ends stop it
 * before any step; an undecided step stops it with the range it could not
 * narrow; a bisection that crashes at any point and is resumed from its stored
 * state takes the same chain. Also what a step's comparison says of a version,
 * each step's plan (the setup templates rendered, what changes from which
 * version on), and the plan rules of a bisection.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { pino } from 'pino'
import { Value } from 'typebox/value'
import type { BisectState, Decisions, FigureDecision } from '../../schemas/experiment-decisions.v1.js'
import type { Plan } from '../../schemas/experiment-plan.v1.js'
import { ExperimentState } from '../../schemas/experiment-state.v1.js'
import type { ExperimentSummary } from '../../schemas/experiments-api.v1.js'
import {
  changesFor,
  classifyStep,
  formatChain,
  newBisect,
  nextStep,
  stepPlan,
} from '../../services/core/experiments/bisect.js'
import { checkPlan } from '../../services/core/experiments/plan.js'
import { summaryOf } from '../../services/core/experiments/state.js'
import type { ExperimentStore } from '../../services/core/ports/experiment-store.js'
import { Bisector, type StepRunner } from '../../services/experiments/bisect.js'

type Oracle = (version: string) => FigureDecision['decision'] | 'fail'

const LABEL = 'SCAN p50 (µs)'

function versions(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `1.0.${i}`)
}

function plan(list: string[], extra: Record<string, unknown> = {}): Plan {
  return checkPlan(
    {
      version: 1,
      name: 'bis',
      binding: 'memory',
      clients: 1,
      seconds: 1,
      repetitions: { min: 3, max: 6 },
      workloads: [{ file: 'workloada' }],
      setups: [{ name: 'release', labels: { build: 'b-${version}' } }],
      versions: {
        list,
        from: { [list[Math.floor(list.length / 2)]!]: { properties: { 'memory.delay.scan': 10000 } } },
      },
      figures: ['SCAN p50'],
      ...extra,
    },
    'the test plan',
  )
}

/** A finished step's experiment as the coordinator leaves it: one comparison, its decisions from the oracle. */
function stepState(id: string, p: Plan, decision: FigureDecision['decision'] | 'fail', runs = 3): ExperimentState {
  const [good, tried] = p.setups.map((s) => s.name) as [string, string]
  const figure: FigureDecision = {
    workload: 'workloada',
    label: LABEL,
    decision: decision === 'fail' ? 'undecided' : decision,
    verdict: decision === 'regression' ? 'regression' : 'no significant change',
    pValue: decision === 'regression' ? 0.001 : 0.4,
    equivalenceP: decision === 'no change' ? 0.001 : 0.3,
    changePercent: decision === 'regression' ? 9000 : 1.5,
    runs: { baseline: runs, candidate: runs },
    detectable: decision === 'undecided' ? { increasePercent: 60, decreasePercent: 40 } : null,
    reason: decision === 'undecided' ? 'undecided: could have found +60.0% or -40.0% with 80% power' : decision,
  }
  const decisions: Decisions = {
    alpha: 0.01,
    minEffect: 0.5,
    round: runs,
    stop: 'decided',
    decided: true,
    figures: [figure],
    unknown: [],
  }
  const ids = (s: string) => Array.from({ length: runs }, (_, i) => `${id}-${s}-${i + 1}`)
  return {
    id,
    name: p.name,
    status: 'done',
    plan: p,
    createdAtMs: 0,
    updatedAtMs: 0,
    version: 3,
    cells: [],
    steps: [],
    comparisons: [
      {
        baseline: good,
        candidate: tried,
        workload: 'workloada',
        regressions: decision === 'regression' ? [LABEL] : [],
        improvements: [],
        baselineRuns: ids('g'),
        candidateRuns: ids('t'),
        files: [],
        ...(decision === 'fail' ? { error: 'no complete run of ' + tried } : { decisions }),
      },
    ],
    notes: [],
    currentRun: null,
  }
}

/** The chain the pure logic takes with an oracle, as outcomes are filled in step by step. */
function bisectWith(list: string[], oracle: Oracle): BisectState {
  const p = plan(list)
  const b = newBisect('b', p, 0, {
    good: list[0]!,
    bad: list.at(-1)!,
    versions: list,
    source: 'list',
    named: ['SCAN p50'],
  }).bisect!
  for (let guard = 0; guard < 64; guard++) {
    const next = nextStep(b)
    if (next.kind === 'stop') {
      b.result = next.result
      return b
    }
    const version = next.kind === 'ends' ? b.bad : next.version
    // The step's plan as stepPlan makes it, less its checks (tested below): good first, the version tried second.
    const sp: Plan = { ...p, setups: [{ name: b.good }, { name: version }] }
    const step = stepState(`b-s${b.chain.length}`, sp, oracle(version))
    b.chain.push({ version, ends: next.kind === 'ends', experiment: step.id, ...classifyStep(step, b.figures) })
  }
  throw new Error('no end')
}

const boundaryAt =
  (list: string[], k: number): Oracle =>
  (v) =>
    list.indexOf(v) >= k ? 'regression' : 'no change'

test('the boundary is found wherever it is, in at most ceil(log2(n)) steps after the ends', () => {
  for (let size = 2; size <= 40; size++) {
    const list = versions(size)
    let most = 0
    for (let k = 1; k < size; k++) {
      const b = bisectWith(list, boundaryAt(list, k))
      assert.equal(b.result?.kind, 'found', `${size} versions, boundary ${k}: ${b.result?.message}`)
      assert.equal(b.result.firstBad, list[k])
      assert.equal(b.result.lastGood, list[k - 1])
      assert.equal(b.chain[0]!.version, list.at(-1), 'the ends first')
      const steps = b.chain.length - 1
      assert.ok(steps <= Math.ceil(Math.log2(size - 1)), `${size} versions, boundary ${k}: ${steps} steps`)
      most = Math.max(most, steps)
    }
    assert.equal(most, Math.ceil(Math.log2(size - 1)), `${size} versions`)
  }
  // The memory plan's: 1.0.0 .. 1.0.8, bad from 1.0.5: 1.0.4, 1.0.6, 1.0.5.
  const list = versions(9)
  assert.deepEqual(
    bisectWith(list, boundaryAt(list, 5)).chain.map((s) => [s.version, s.outcome]),
    [
      ['1.0.8', 'bad'],
      ['1.0.4', 'good'],
      ['1.0.6', 'bad'],
      ['1.0.5', 'bad'],
    ],
  )
})

test('ends that are not confirmed stop it before any step, saying why', () => {
  const list = versions(9)
  const same = bisectWith(list, () => 'no change')
  assert.equal(same.result?.kind, 'ends not confirmed')
  assert.equal(same.chain.length, 1)
  assert.match(same.result.message, /^bad 1\.0\.8 is not worse than good 1\.0\.0 on SCAN p50: .*Nothing to bisect$/)
  const better = bisectWith(list, () => 'improvement')
  assert.equal(better.result?.kind, 'ends not confirmed')
  const unsure = bisectWith(list, () => 'undecided')
  assert.equal(unsure.result?.kind, 'ends not confirmed')
  assert.match(
    unsure.result.message,
    /could not be told apart on SCAN p50 after 3 \+ 3 runs: .*could have found \+60\.0%/,
  )
  const broken = bisectWith(list, () => 'fail')
  assert.equal(broken.result?.kind, 'failed')
  assert.match(broken.result.message, /the ends could not be compared: no complete run of 1\.0\.8/)
})

test('an undecided step stops it with the range it could not narrow, never a guess', () => {
  const list = versions(9)
  const b = bisectWith(list, (v) => (v === '1.0.6' ? 'undecided' : boundaryAt(list, 5)(v)))
  assert.equal(b.result?.kind, 'undecided')
  assert.deepEqual([b.result.lastGood, b.result.firstBad], ['1.0.4', '1.0.8'])
  assert.match(
    b.result.message,
    /^could not narrow 1\.0\.4 \.\. 1\.0\.8: 1\.0\.6 stays undecided after 3 \+ 3 runs .*not guessed$/,
  )
  assert.deepEqual(
    b.chain.map((s) => s.outcome),
    ['bad', 'good', 'undecided'],
  )
})

class MemoryStore implements ExperimentStore {
  readonly states = new Map<string, ExperimentState>()
  readonly invalid: string[] = []
  async save(s: ExperimentState): Promise<void> {
    const value: unknown = s
    if (!Value.Check(ExperimentState, value))
      this.invalid.push(`${s.id}: ${[...Value.Errors(ExperimentState, value)][0]?.instancePath}`)
    const old = this.states.get(s.id)
    if (old === undefined || old.version <= s.version) this.states.set(s.id, structuredClone(s))
  }
  async load(id: string): Promise<ExperimentState | undefined> {
    const s = this.states.get(id)
    return s === undefined ? undefined : structuredClone(s)
  }
  async list(limit: number): Promise<ExperimentSummary[]> {
    return [...this.states.values()].map(summaryOf).slice(0, limit)
  }
}

/** Runs steps from the oracle; dies (throws) in the middle of run number `dieAt` (1-based), its state left running. */
class OracleSteps implements StepRunner {
  calls = 0
  readonly ran: string[] = []
  readonly resumed: string[] = []
  constructor(
    private readonly store: MemoryStore,
    private readonly oracle: Oracle,
    private readonly dieAt = 0,
  ) {}
  async run(p: Plan, id: string): Promise<ExperimentState> {
    this.calls++
    this.ran.push(id)
    const done = stepState(id, p, this.oracle(p.setups[1]!.name))
    await this.store.save({ ...done, status: 'running', version: 1, comparisons: [] })
    if (this.calls === this.dieAt) throw new Error('the coordinator died')
    await this.store.save(done)
    return done
  }
  async resume(id: string): Promise<ExperimentState> {
    this.resumed.push(id)
    const s = (await this.store.load(id))!
    const done = stepState(id, s.plan, this.oracle(s.plan.setups[1]!.name))
    await this.store.save(done)
    return done
  }
}

const deps = (store: MemoryStore, steps: StepRunner) => ({
  steps,
  store,
  now: () => 1_000,
  log: pino({ level: 'silent' }),
  stopping: () => false,
})

test('a bisection that crashes at any point and is resumed takes the chain of one that never crashed', async () => {
  const list = versions(9)
  const oracle = boundaryAt(list, 5)
  const p = plan(list)
  const start = { good: '1.0.0', bad: '1.0.8', versions: list, source: 'list', named: ['SCAN p50'] }
  const store0 = new MemoryStore()
  const whole = await new Bisector(deps(store0, new OracleSteps(store0, oracle))).start(p, 'bis-0', start)
  assert.equal(whole.status, 'done')
  assert.deepEqual(store0.invalid, [])
  const chain = (s: ExperimentState) =>
    s.bisect!.chain.map((x) => [x.version, x.outcome, x.experiment.replace(/^bis-\d+/, '')])
  for (let dieAt = 1; dieAt <= whole.bisect!.chain.length; dieAt++) {
    const store = new MemoryStore()
    const id = `bis-${dieAt}`
    await assert.rejects(new Bisector(deps(store, new OracleSteps(store, oracle, dieAt))).start(p, id, start), /died/)
    const left = (await store.load(id))!
    assert.equal(left.bisect!.chain.at(-1)!.outcome, 'running', 'the step it died in is in the chain, running')
    // A new process: the stored state only.
    const steps = new OracleSteps(store, oracle)
    const resumed = await new Bisector(deps(store, steps)).resume(id)
    assert.deepEqual(chain(resumed), chain(whole), `died in step ${dieAt}`)
    assert.deepEqual(
      steps.resumed,
      [left.bisect!.chain.at(-1)!.experiment],
      'the step left running is resumed, not rerun',
    )
    assert.ok(!steps.ran.includes(left.bisect!.chain.at(-1)!.experiment))
    assert.deepEqual(resumed.bisect!.result, whole.bisect!.result)
    assert.deepEqual(store.invalid, [])
  }
  // A bisection already ended is not run again.
  const again = new OracleSteps(store0, oracle)
  await new Bisector(deps(store0, again)).resume('bis-0')
  assert.equal(again.calls + again.resumed.length, 0)
  const text = formatChain((await store0.load('bis-0'))!)
  assert.match(text, /^step +version +runs +change +p +verdict$/m)
  assert.match(text, /^ends +1\.0\.8 +3 \+ 3 +\+9000\.0% +0\.001 +bad \(regression\)$/m)
  assert.match(text, /^first bad version: 1\.0\.5 \(last good 1\.0\.4\), after 3 steps beside the ends$/m)
})

test("a step's plan: good in the first setup, the version tried in the second, templates rendered", () => {
  const list = versions(9)
  const p = plan(list, {
    setups: [
      {
        name: 'slot-a',
        steps: {
          start: {
            agent: 'a1',
            command: 'hbase',
            args: ['start'],
            env: { HBASE_VERSION: '${version}-hadoop3', PORT: '1' },
          },
        },
      },
      {
        name: 'slot-b',
        steps: {
          start: {
            agent: 'a1',
            command: 'hbase',
            args: ['start'],
            env: { HBASE_VERSION: '${version}-hadoop3', PORT: '2' },
          },
        },
      },
    ],
    versions: {
      list,
      from: {
        '1.0.3': { env: { HBASE_BLOCKCACHE_SIZE: '0.1' } },
        '1.0.6': { env: { HBASE_BLOCKCACHE_SIZE: '0.01' }, labels: { cache: 'tiny' } },
      },
    },
  })
  const b = newBisect('x', p, 0, { good: '1.0.0', bad: '1.0.8', versions: list, source: 'list', named: [] }).bisect!
  const s = stepPlan(p, b, '1.0.7')
  assert.equal(s.versions, undefined)
  assert.deepEqual(s.compare, [{ baseline: '1.0.0', candidate: '1.0.7' }])
  assert.deepEqual(
    s.setups.map((x) => [x.name, x.labels, x.steps!.start!.env]),
    [
      ['1.0.0', { version: '1.0.0' }, { HBASE_VERSION: '1.0.0-hadoop3', PORT: '1' }],
      [
        '1.0.7',
        { version: '1.0.7', cache: 'tiny' },
        { HBASE_VERSION: '1.0.7-hadoop3', PORT: '2', HBASE_BLOCKCACHE_SIZE: '0.01' },
      ],
    ],
  )
  assert.deepEqual(changesFor(p, '1.0.4').env, { HBASE_BLOCKCACHE_SIZE: '0.1' })
  assert.deepEqual(changesFor(p, '1.0.2').env, {})
  // Maven versions: what changes from a version on, in natural order.
  const m = checkPlan(
    {
      ...p,
      versions: { maven: 'org.apache.hbase:hbase-server', from: { '2.5.10-hadoop3': { properties: { x: 1 } } } },
    },
    'm',
  )
  assert.deepEqual(changesFor(m, '2.5.11-hadoop3').properties, { x: 1 })
  assert.deepEqual(changesFor(m, '2.5.8-hadoop3').properties, {})
  // The template's own placeholder in its labels: rendered.
  assert.deepEqual(stepPlan(plan(list), b, '1.0.2').setups[1]!.labels, { version: '1.0.2', build: 'b-1.0.2' })
})

test('plan rules of a bisection and of repetitions until decided', () => {
  const problems = (extra: Record<string, unknown>): string => {
    try {
      plan(versions(4), extra)
      return ''
    } catch (e) {
      return (e as Error).message
    }
  }
  assert.match(problems({ versions: { list: ['1.0.0'] } }), /versions\.list: .*at least 2|minItems|2 to 10,000/)
  assert.match(problems({ versions: { list: ['1.0.0', '1.0.0'] } }), /versions\.list: 1\.0\.0 is given twice/)
  assert.match(
    problems({ versions: { list: ['1.0.0', '1.0.1'], maven: 'a:b' } }),
    /give exactly one of list .* and maven/,
  )
  assert.match(
    problems({ versions: { list: ['1.0.0', '1.0.1'], from: { '1.0.2': {} } } }),
    /versions\.from: 1\.0\.2 is not in versions\.list; did you mean 1\.0\.[01]\?/,
  )
  assert.match(problems({ versions: { list: ['1.0.0', '1.0.1'], prereleases: true } }), /prereleases: only for maven/)
  assert.match(
    problems({ compare: [{ baseline: 'release', candidate: 'release' }] }),
    /compare: a bisection compares each version/,
  )
  assert.match(
    problems({ setups: [{ name: 'a' }, { name: 'b' }, { name: 'c' }] }),
    /a bisection has one setup .* or two/,
  )
  assert.match(problems({ repetitions: { min: 5, max: 4 } }), /repetitions: min 5 is more than max 4/)
  assert.match(problems({ repetitions: { min: 3, max: 4 }, order: 'grouped' }), /needs order: interleaved/)
  assert.match(problems({ repetitions: { min: 2, max: 4 } }), /repetitions/)
  assert.equal(problems({ repetitions: { min: 3, max: 12, budgetS: 3600, spending: 'pocock' } }), '')
})

/**
 * Repetitions until decided in the coordinator (services/experiments/app.ts
 * Conductor with services/experiments/sequential.ts) over fakes: agents that
 * answer every assignment at once, an in-memory store, and comparisons made
 * by the verdict code itself (compareFigure, decideFigures) on seeded
 * per-run figures, B's scans a hundred times slower or not at all.
 *
 * A large change stops at the first look with min runs a setup; no change
 * runs to max, each round a look at its own share of alpha with Welch's t;
 * a time budget stops adding rounds (the clock injected); a named figure
 * that no comparison has stops at once and says so; a look is a function of
 * the stored state (a resumed coordinator comes to the same).
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { pino } from 'pino'
import { Value } from 'typebox/value'
import type { ComparedFigure, ReleaseComparison } from '../../schemas/compare-api.v1.js'
import type { RunReport } from '../../schemas/run-reports-api.v1.js'
import type { Assign, AssignmentStatus, ControlMessage } from '../../schemas/experiment-control.v1.js'
import type { Plan } from '../../schemas/experiment-plan.v1.js'
import { ExperimentState } from '../../schemas/experiment-state.v1.js'
import type { ExperimentSummary } from '../../schemas/experiments-api.v1.js'
import { lookAlpha } from '../../services/core/compare/sequential.js'
import { compareFigure } from '../../services/core/compare/verdict.js'
import { checkPlan } from '../../services/core/experiments/plan.js'
import { summaryOf } from '../../services/core/experiments/state.js'
import type { ControlBus, ControlBusHandlers, Published } from '../../services/core/ports/control-bus.js'
import type { ExperimentRuns } from '../../services/core/ports/experiment-runs.js'
import type { ExperimentStore } from '../../services/core/ports/experiment-store.js'
import { Rng } from '../../services/core/workload/random.js'
import { Conductor } from '../../services/experiments/app.js'
import { look } from '../../services/experiments/sequential.js'
import { gaussian } from './compare-synthetic.js'

/** One agent that accepts, gets ready, starts on go and ends at once. */
class OneAgentBus implements ControlBus {
  readonly rejected = 0
  private handlers: ControlBusHandlers | undefined
  private readonly ready = new Map<string, Assign>()
  /** Lifecycle steps of this setup fail. */
  constructor(private readonly failingSetup?: string) {}
  async start(h: ControlBusHandlers): Promise<void> {
    this.handlers = h
    this.beat()
  }
  async close(): Promise<void> {}
  async publish(m: ControlMessage): Promise<Published> {
    this.beat()
    if (m.type === 'assign') {
      this.status(m, 'accepted')
      if (m.run !== undefined) {
        this.ready.set(m.assignment, m)
        this.status(m, 'ready')
      } else if (m.step !== undefined && m.assignment.includes(`/${this.failingSetup}/`))
        this.status(m, 'failed', { detail: 'exit 1', output: 'hbase.sh: cannot start' })
      else this.status(m, 'ended')
    } else if (m.type === 'go')
      for (const id of m.assignments) {
        const a = this.ready.get(id)
        if (a === undefined) continue
        this.ready.delete(id)
        this.status(a, 'started')
        this.status(a, 'ended', { operations: { READ: 100 } })
      }
    return { brokerTimeMs: Date.now() }
  }
  private status(a: Assign, state: AssignmentStatus['state'], extra: Partial<AssignmentStatus> = {}): void {
    this.handlers?.onMessage(
      {
        type: 'assignment.status',
        sentAtMs: Date.now(),
        experiment: a.experiment,
        assignment: a.assignment,
        agent: a.agent,
        instance: a.instance,
        state,
        ...extra,
      },
      Date.now(),
    )
  }
  private beat(): void {
    this.handlers?.onMessage(
      {
        type: 'agent.heartbeat',
        sentAtMs: Date.now(),
        agent: 'a1',
        instance: 'instance-a1-0000',
        host: 'h',
        pid: 1,
        cores: 2,
        labels: {},
        capabilities: {
          drivers: ['benchstream'],
          bindings: ['memory'],
          ycsbBindings: [],
          workloads: ['workloada'],
          commands: ['x'],
          env: [],
          profileTargets: [],
        },
        clock: { offsetMs: 1, rttMs: 1, samples: 4, atMs: Date.now() },
        busyWith: null,
        version: '0.1.0',
      },
      Date.now(),
    )
  }
}

class MemoryStore implements ExperimentStore {
  readonly states = new Map<string, ExperimentState>()
  readonly invalid: string[] = []
  async save(s: ExperimentState): Promise<void> {
    const value: unknown = s
    if (!Value.Check(ExperimentState, value))
      this.invalid.push([...Value.Errors(ExperimentState, value)].map((e) => e.instancePath).join(' '))
    this.states.set(s.id, structuredClone(s))
  }
  async load(id: string): Promise<ExperimentState | undefined> {
    const s = this.states.get(id)
    return s === undefined ? undefined : structuredClone(s)
  }
  async list(limit: number): Promise<ExperimentSummary[]> {
    return [...this.states.values()].map(summaryOf).slice(0, limit)
  }
}

/** Every run complete; comparisons of one figure, SCAN p50, from seeded per-run values (B `factor` times A). */
class SyntheticRuns implements ExperimentRuns {
  readonly compared: Array<{ a: number; b: number; alpha?: number; test?: string }> = []
  constructor(
    private readonly factor: number,
    private readonly onCompare: () => void = () => undefined,
  ) {}
  async report(runId: string): Promise<RunReport | undefined> {
    return {
      runtimeMs: 1000,
      operations: 100,
      throughputOpsPerSec: 100,
      measurements: [],
      runId,
      run: { clients_ended: 1, start_skew_ms: 0, clock_offset_max_ms: 1 } as RunReport['run'],
      cacheHitRatio: {},
      serverCache: [],
      completeness: { sent: 100, counted: 100, undelivered: 0 },
      lateEvents: 0,
      alerts: [],
    } as RunReport
  }
  /** A run's SCAN p50: 100 µs (B: times factor) with 5 % log-normal noise, seeded by the run id. */
  private value(runId: string): number {
    let h = 7
    for (const ch of runId) h = (h * 31 + ch.charCodeAt(0)) >>> 0
    const level = /-B-/.test(runId) ? 100 * this.factor : 100
    return level * Math.exp(0.05 * gaussian(new Rng(h)))
  }
  async compare(
    baseline: string,
    candidate: string,
    o: { alpha?: number; minEffect?: number; test?: 'auto' | 'welch' },
  ): Promise<ReleaseComparison> {
    this.onCompare()
    const a = baseline
      .slice('runs:'.length)
      .split(',')
      .map((r) => this.value(r))
    const b = candidate
      .slice('runs:'.length)
      .split(',')
      .map((r) => this.value(r))
    this.compared.push({
      a: a.length,
      b: b.length,
      ...(o.alpha === undefined ? {} : { alpha: o.alpha }),
      ...(o.test === undefined ? {} : { test: o.test }),
    })
    const alpha = o.alpha ?? 0.05
    const minEffect = o.minEffect ?? 0.01
    const v = compareFigure(
      { runs: a },
      { runs: b },
      { direction: 'lower-is-better', alpha, minEffect, logScale: true, test: o.test ?? 'auto' },
    )
    const side = (xs: number[]) => ({ center: xs[0]!, spreadPercent: null, values: xs, n: xs.length, perClient: null })
    const row: ComparedFigure = {
      workload: 'workloada',
      op: 'SCAN',
      figure: 'p50',
      label: 'SCAN p50 (µs)',
      direction: 'lower-is-better',
      baseline: side(a),
      candidate: side(b),
      changePercent: (v.relativeChange.median ?? 0) * 100,
      verdict: v.verdict,
      samples: v.samples,
      method: v.method,
      pValue: v.pValue,
      adjustedPValue: v.pValue,
      effectPercent: null,
      ci: null,
      note: null,
      reason: v.reason,
      resolutionUs: 0,
      clientMedian: 0,
    }
    return {
      baseline: { ref: baseline, runs: [], groups: [], workloads: ['workloada'] },
      candidate: { ref: candidate, runs: [], groups: [], workloads: ['workloada'] },
      alpha,
      minEffect,
      tests: 1,
      comparable: true,
      forced: false,
      differences: [],
      by: null,
      notes: [],
      workloads: [],
      unpaired: [],
      figures: [row],
      summary: { regressions: 0, improvements: 0, unchanged: 0, insufficient: 0, atTarget: 0, belowTarget: 0 },
      profiles: null,
    }
  }
}

function plan(repetitions: Plan['repetitions'], extra: Record<string, unknown> = {}): Plan {
  return checkPlan(
    {
      version: 1,
      name: 'seq',
      binding: 'memory',
      clients: 1,
      seconds: 1,
      repetitions,
      agentWaitS: 1,
      workloads: [{ file: 'workloada' }],
      setups: [{ name: 'A' }, { name: 'B' }],
      figures: ['SCAN p50'],
      ...extra,
    },
    'the test plan',
  )
}

async function rig(
  factor: number,
  p: Plan,
  id: string,
  clock = { offsetMs: 0 },
  onCompare?: () => void,
  failingSetup?: string,
) {
  const store = new MemoryStore()
  const runs = new SyntheticRuns(factor, onCompare)
  const files = new Map<string, string>()
  const c = new Conductor({
    bus: new OneAgentBus(failingSetup),
    store,
    runs,
    now: () => Date.now() + clock.offsetMs,
    log: pino({ level: 'silent' }),
    write: (i, name, text) => {
      files.set(name, text)
      return `/out/${i}/${name}`
    },
  })
  await c.start()
  const state = await c.run(p, id)
  assert.deepEqual(store.invalid, [], 'every stored state is one')
  return { state, runs, files }
}

test("a large change stops at the first look: min runs a setup, decided at that look's share of alpha", async () => {
  const p = plan({ min: 3, max: 8, spending: 'pocock' })
  const { state, runs, files } = await rig(100, p, 'seq-big')
  assert.equal(state.status, 'done')
  assert.equal(state.cells.length, 6)
  assert.deepEqual(
    state.looks!.map((l) => [l.round, l.stop, l.decided, l.undecided]),
    [[3, 'decided', 1, 0]],
  )
  const first = lookAlpha({ alpha: 0.05, min: 3, max: 8, spending: 'pocock' }, 3)
  // The look, then the report's comparison: both at the first look's level, with Welch's t.
  assert.deepEqual(runs.compared, [
    { a: 3, b: 3, alpha: first, test: 'welch' },
    { a: 3, b: 3, alpha: first, test: 'welch' },
  ])
  const d = state.comparisons[0]!.decisions!
  assert.deepEqual([d.stop, d.decided, d.round, d.alpha], ['decided', true, 3, first])
  assert.equal(d.figures[0]!.decision, 'regression')
  const md = files.get('comparison.md')!
  assert.match(md, /3 to 8 until decided repetitions/)
  assert.match(md, /## Repetitions until decided/)
  assert.match(md, /\| A \| B \| workloada \| 3 \+ 3 \| every figure decided \| 0\.0\d+ \| 1 of 1 \| – \|/)
})

test('no change runs to max, a look after every round, and says what it could have found', async () => {
  const p = plan({ min: 3, max: 5 })
  const { state, runs, files } = await rig(1, p, 'seq-none')
  assert.equal(state.status, 'done')
  assert.equal(state.cells.length, 10)
  // Interleaved: every round of both setups, rotated.
  assert.deepEqual(
    state.cells.slice(6).map((c) => c.key),
    ['workloada/B/run4', 'workloada/A/run4', 'workloada/A/run5', 'workloada/B/run5'],
  )
  assert.deepEqual(
    state.looks!.map((l) => [l.round, l.stop]),
    [
      [3, null],
      [4, null],
      [5, 'max'],
    ],
  )
  const d = { alpha: 0.05, min: 3, max: 5, spending: 'obrien-fleming' as const }
  assert.deepEqual(
    runs.compared.map((c) => [c.a, c.alpha]),
    [
      [3, lookAlpha(d, 3)],
      [4, lookAlpha(d, 4)],
      [5, lookAlpha(d, 5)],
      [5, lookAlpha(d, 5)],
    ],
  )
  const f = state.comparisons[0]!.decisions!.figures[0]!
  assert.equal(state.comparisons[0]!.decisions!.stop, 'max')
  assert.equal(f.decision, 'undecided', f.reason)
  assert.ok(f.detectable !== null && f.detectable.increasePercent > 1, JSON.stringify(f.detectable))
  assert.match(
    files.get('comparison.md')!,
    /\| 5 \+ 5 \| max repetitions reached \|.*could have found \+[\d.]+% or -[\d.]+% with 80% power/,
  )
})

test('no change proven within minEffect is decided too: it stops early', async () => {
  const { state } = await rig(1, plan({ min: 3, max: 10, spending: 'pocock' }, { minEffect: 0.5 }), 'seq-eq')
  assert.ok(state.cells.length < 20, `${state.cells.length} runs`)
  assert.equal(state.comparisons[0]!.decisions!.figures[0]!.decision, 'no change')
  assert.equal(state.looks!.at(-1)!.stop, 'decided')
})

test('a time budget stops adding rounds; a named figure no comparison has stops at once and says so', async () => {
  const clock = { offsetMs: 0 }
  // Every comparison takes an hour on this clock.
  const { state } = await rig(1, plan({ min: 3, max: 12, budgetS: 5400 }), 'seq-budget', clock, () => {
    clock.offsetMs += 3_600_000
  })
  assert.deepEqual(
    state.looks!.map((l) => [l.round, l.stop]),
    [
      [3, null],
      [4, 'budget'],
    ],
  )
  assert.equal(state.cells.length, 8)
  assert.equal(state.comparisons[0]!.decisions!.stop, 'budget')

  const odd = await rig(1, plan({ min: 3, max: 12 }, { figures: ['SCAN p05'] }), 'seq-odd')
  assert.deepEqual(
    odd.state.looks!.map((l) => [l.round, l.stop]),
    [[3, 'unknown figure']],
  )
  assert.match(odd.state.notes.join('\n'), /no comparison has the figures SCAN p05 \(did you mean SCAN p50 \(µs\)\?\)/)
  assert.deepEqual(odd.state.comparisons[0]!.decisions!.unknown, ['SCAN p05 (did you mean SCAN p50 (µs)?)'])
})

test('a setup without a complete run after a round: no more rounds, and the look says why', async () => {
  const p = plan(
    { min: 3, max: 8 },
    {
      setups: [{ name: 'A' }, { name: 'B', steps: { start: { agent: 'a1', command: 'x' } } }],
    },
  )
  const { state } = await rig(1, p, 'seq-fail', undefined, undefined, 'B')
  assert.deepEqual(
    state.looks!.map((l) => [l.round, l.stop]),
    [[3, 'no runs']],
  )
  assert.equal(state.cells.length, 6)
  assert.match(state.looks![0]!.detail!, /A vs B: no complete run of B/)
  assert.match(state.comparisons[0]!.error ?? '', /no complete run of B/)
})

test('a look is a function of the stored state: looking again adds nothing, a copy comes to the same', async () => {
  const { state } = await rig(1, plan({ min: 3, max: 5 }), 'seq-look')
  // Back to the state after round 3's runs, as stored then: the first look not yet made.
  const back = structuredClone(state)
  back.cells = back.cells.slice(0, 6)
  back.looks = []
  const runs = new SyntheticRuns(1)
  const one = structuredClone(back)
  const two = structuredClone(back)
  const at = (): number => 0
  assert.equal((await look(one, runs, at)).added, 2)
  assert.equal((await look(two, runs, at)).added, 2)
  assert.deepEqual(one.cells, two.cells)
  assert.deepEqual(one.looks, two.looks)
  assert.equal((await look(one, runs, at)).added, 0, 'the round added is not looked at before it ran')
})

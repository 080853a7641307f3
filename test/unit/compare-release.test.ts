/**
 * Release A vs release B over fabricated runs (services/core/compare/release.ts):
 * sides named by run, group and selector; repetitions or windows as
 * samples; the Benjamini-Hochberg adjustment; at and below target; setups
 * that differ refused unless forced; workloads paired by name; and the
 * terminal and Markdown text.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { OpFigures, RunFigures, RunInfo, WindowFigures } from '../../schemas/runs-api.v1.js'
import { benjaminiHochberg } from '../../services/core/compare/multiple-testing.js'
import { formatComparison } from '../../services/core/compare/release-format.js'
import { profileComparison } from '../../services/core/compare/profile-changes.js'
import {
  compareReleases,
  compareRuns,
  parseSideRef,
  runSetup,
  type CompareSource,
} from '../../services/core/compare/release.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import type { ProfileSelection } from '../../services/core/ports/profile-store.js'
import type { RunFilter } from '../../services/core/ports/read-model.js'
import type { Folded } from '../../services/core/profiles/folded.js'
import { noisy } from './compare-synthetic.js'
import { joinRegExp } from '../helpers/regexp.js'

function run(id: string, o: Partial<RunInfo> = {}): RunInfo {
  return {
    run_id: id,
    started_at: `2026-12-03 10:00:${id.padStart(2, '0').slice(-2)}.000000`,
    ended_at: '2026-12-03 10:01:00.000000',
    clients: 2,
    clients_ended: 2,
    threads: 8,
    target: 0,
    labels: {},
    workload: 'workloada',
    binding: 'memory',
    sent: {},
    undelivered: 0,
    runtime_ms: 10_000,
    window_ms: 1000,
    group_id: '',
    repeat: 0,
    properties: { recordcount: '1000', maxexecutiontime: '10' },
    schedule_lag_max_ms: 0,
    behind_schedule_episodes: 0,
    expected_clients: 0,
    start_skew_ms: null,
    clock_offset_max_ms: null,
    ...o,
  }
}

function op(name: string, o: Partial<OpFigures> = {}): OpFigures {
  return {
    op: name,
    operations: 10_000,
    errors: 0,
    opsPerSec: 1000,
    errorRate: 0,
    avgUs: 120,
    minUs: 10,
    maxUs: 5000,
    p50Us: 100,
    p90Us: 180,
    p95Us: 200,
    p99Us: 400,
    p999Us: 900,
    p9999Us: 2000,
    cacheHitRatio: null,
    ...o,
  }
}

/** Runs whose READ p50 is `p50[i]` (and everything else steady with a little noise). */
function figures(
  ids: readonly string[],
  p50: readonly number[],
  seed: number,
  extra: (i: number) => Partial<OpFigures> = () => ({}),
): RunFigures[] {
  const noise = noisy(ids.length * 10, 1, 0.01, seed)
  return ids.map((id, i) => {
    const n = (k: number): number => noise[i * 10 + k]!
    return {
      runId: id,
      runtimeMs: 10_000,
      ops: [
        op('OVERALL', { opsPerSec: 2000 * n(0), p50Us: null }),
        op('READ', {
          opsPerSec: 1000 * n(1),
          p50Us: p50[i]!,
          avgUs: 120 * n(2),
          p95Us: 200 * n(3),
          p99Us: 400 * n(4),
          p999Us: 900 * n(5),
          maxUs: 5000 * n(6),
          cacheHitRatio: 0.9 * n(7),
          ...extra(i),
        }),
        op('UPDATE', { opsPerSec: 1000 * n(8), avgUs: 150 * n(9) }),
      ],
      serverCache: [{ source: 'memory', ratio: 0.9 * n(7) }],
    }
  })
}

const A = ['a1', 'a2', 'a3']
const B = ['b1', 'b2', 'b3']
const side = (ids: readonly string[], o: Partial<RunInfo> = {}) => ({
  ref: `group:${ids[0]!.slice(0, 1)}`,
  runs: ids.map((id) => run(id, { group_id: id.slice(0, 1), ...o })),
})

test('side references: run id, group:NAME, selector with workload= and group=; malformed ones refused', () => {
  assert.deepEqual(parseSideRef('run-1'), { kind: 'run', runId: 'run-1' })
  assert.deepEqual(parseSideRef('group:rel-0.98.0'), { kind: 'group', group: 'rel-0.98.0' })
  assert.deepEqual(parseSideRef('version=0.98.0,workload=e'), {
    kind: 'selector',
    labels: { version: '0.98.0' },
    workload: 'e',
  })
  assert.deepEqual(parseSideRef('version=1, host = a ,group=g'), {
    kind: 'selector',
    labels: { version: '1', host: 'a' },
    group: 'g',
  })
  for (const bad of ['group:', 'a b', 'version=1,version=2', '=x', 'version=1,noequals']) {
    assert.throws(
      () => parseSideRef(bad),
      (e: unknown) => isBenchstreamError(e, 'BS_ERR_BAD_REQUEST'),
      bad,
    )
  }
})

test(
  '3 + 3 repetitions: READ p50 up 50 % is the one regression, by Welch on logarithms; the rest ' +
    "is ~; values are the runs' own",
  () => {
    const f = [...figures(A, [100, 101, 99], 1), ...figures(B, [150, 152, 148], 2)]
    const c = compareRuns(side(A), side(B), f, [])
    const flagged = c.figures.filter((x) => x.verdict === 'regression' || x.verdict === 'improvement')
    assert.deepEqual(
      flagged.map((x) => x.label),
      ['READ p50 (µs)'],
    )
    const p50 = flagged[0]!
    assert.equal(p50.samples, 'repetitions')
    assert.equal(p50.method, 'welch-t')
    assert.deepEqual(p50.baseline.values, [100, 101, 99])
    assert.equal(p50.baseline.center, 100)
    assert.equal(p50.candidate.center, 150)
    assert.equal(p50.changePercent, 50)
    assert.ok(p50.effectPercent! > 49 && p50.effectPercent! < 51, 'ratio of geometric means')
    assert.ok(p50.adjustedPValue! < 0.05 && p50.adjustedPValue! >= p50.pValue!)
    assert.equal(c.summary.regressions, 1)
    assert.equal(c.comparable, true)
    assert.equal(c.forced, false)
    assert.deepEqual(c.baseline, { ref: 'group:a', runs: A, groups: ['a'], workloads: ['workloada'] })
    // Error rates of 0 everywhere: no change, not "insufficient data".
    assert.equal(c.figures.find((x) => x.label === 'READ error rate')!.verdict, 'no significant change')
    // The datastore's own cache-hit ratio is compared per source.
    assert.ok(c.figures.some((x) => x.label === 'OVERALL server cache-hit ratio (memory)'))
    // Latencies of OVERALL are not compared (they mix operations): only throughput and error rate.
    assert.deepEqual(
      c.figures.filter((x) => x.op === 'OVERALL').map((x) => x.figure),
      ['throughput', 'error_rate', 'server_cache_hit_ratio'],
    )
  },
)

test(
  'Benjamini-Hochberg: the adjusted p-values of R\'s p.adjust(p, "BH"); a lone p = 0.03 among ' +
    'many figures is no finding',
  () => {
    const adj = benjaminiHochberg([0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205])
    const r = [0.008, 0.032, 0.0672, 0.0672, 0.0672, 0.08, 0.0845714285714, 0.205]
    adj.forEach((q, i) => assert.ok(Math.abs(q - r[i]!) < 1e-9, `${q} vs ${r[i]}`))
    assert.deepEqual(benjaminiHochberg([]), [])
    // READ p50 6 % up with 2 % noise: p around 0.02 alone, not significant among 20 figures.
    const f = [...figures(A, [100, 102, 98], 1), ...figures(B, [106, 108, 104], 2)]
    const c = compareRuns(side(A), side(B), f, [])
    const p50 = c.figures.find((x) => x.label === 'READ p50 (µs)')!
    assert.ok(p50.pValue! < 0.05, `p ${p50.pValue}`)
    assert.equal(p50.verdict, 'no significant change')
    assert.match(p50.note!, /^adjusted p=0\.\d{3}$/)
    assert.match(p50.reason, /not significant once adjusted for \d+ figures \(Benjamini-Hochberg/)
  },
)

test(
  'throttled: at target is no throughput verdict; below target is a finding, judged on operations ' +
    '/ asked duration',
  () => {
    // Target 2000 ops/s for 10 s: 19,900 operations meet it (99.5 %), 18,000 do not.
    const at = (id: string) => ({
      runId: id,
      runtimeMs: 10_050,
      ops: [op('OVERALL', { operations: 19_900, opsPerSec: 19_900 / 10.05 }), op('READ')],
      serverCache: [],
    })
    const c = compareRuns(side(A, { target: 2000 }), side(B, { target: 2000 }), [...A.map(at), ...B.map(at)], [])
    for (const x of c.figures.filter((y) => y.figure === 'throughput')) assert.equal(x.verdict, 'at target', x.label)
    assert.equal(c.workloads[0]!.throttle!.candidate.status, 'at target')
    assert.equal(c.summary.atTarget, 2)
    const short = (id: string) => ({
      runId: id,
      runtimeMs: 10_000,
      ops: [op('OVERALL', { operations: 18_000, opsPerSec: 1800 }), op('READ')],
      serverCache: [],
    })
    const d = compareRuns(side(A, { target: 2000 }), side(B, { target: 2000 }), [...A.map(at), ...B.map(short)], [])
    const tp = d.figures.find((x) => x.label === 'OVERALL throughput (ops/s)')!
    assert.equal(tp.verdict, 'below target')
    assert.equal(tp.note, '10.0% short of target 2000 ops/s')
    // A run stopped by operationcount before its seconds is judged on its report.
    assert.equal(runSetup(run('x', { target: 5 })).target, 5)
  },
)

test('setups that differ are refused, listed; forced, compared with the differences in the answer', () => {
  const f = [...figures(A, [100, 101, 99], 1), ...figures(B, [100, 101, 99], 2)]
  const other = side(B, {
    threads: 16,
    properties: { recordcount: '1000', maxexecutiontime: '10', 'memory.delay.scan': '3000', 'redis.password': 'x' },
  })
  assert.throws(
    () => compareRuns(side(A), other, f, []),
    (e: unknown) =>
      isBenchstreamError(e, 'BS_ERR_NOT_COMPARABLE') &&
      joinRegExp([
        /threads: 8 vs 16 \(between sides\); property memory\.delay\.scan: \(unset\) vs 3000 \(between sides\)\. /,
        /Compare them anyway with --force/,
      ]).test(e.message),
  )
  const c = compareRuns(side(A), other, f, [], { force: true })
  assert.equal(c.comparable, false)
  assert.equal(c.forced, true)
  assert.deepEqual(
    c.differences.map((d) => d.name),
    ['threads', 'property memory.delay.scan'],
  )
  assert.match(
    formatComparison(c, 'markdown'),
    /\*\*Not comparable, compared with --force:\*\* threads 8 → 16; property memory\.delay\.scan \(unset\) → 3000/,
  )
})

test(
  'fewer than 3 runs a side: the steady windows with the block bootstrap; partial first and last ' + 'windows left out',
  () => {
    const win = (runId: string, level: number, seed: number): WindowFigures[] =>
      noisy(32, level, 0.02, seed).map((v, k) => ({
        runId,
        tS: k,
        op: 'READ',
        windowMs: 1000,
        operations: 1000 + (k % 3),
        errors: k % 2,
        opsPerSec: 1000 + (k % 3),
        errorRate: (k % 2) / (1001 + (k % 3)),
        avgUs: 120 + (k % 4),
        maxUs: 5000 + (k % 5) * 10,
        p50Us: k === 0 || k === 31 ? 1e6 : v,
        p95Us: 200 + (k % 4),
        p99Us: 400 + (k % 4),
        p999Us: 900 + (k % 4),
        cacheHitRatio: null,
      }))
    const f = [...figures(['a1'], [100], 1), ...figures(['b1'], [130], 2)]
    const c = compareRuns(side(['a1']), side(['b1']), f, [...win('a1', 100, 3), ...win('b1', 130, 4)])
    const p50 = c.figures.find((x) => x.label === 'READ p50 (µs)')!
    assert.equal(p50.samples, 'windows')
    assert.equal(p50.method, 'circular-block-bootstrap')
    assert.deepEqual([p50.baseline.n, p50.candidate.n], [30, 30], '32 windows less the partial first and last')
    assert.equal(p50.verdict, 'regression')
    // The side's value is still the run's own figure (its merged histogram), not a mean of window percentiles.
    assert.deepEqual([p50.baseline.center, p50.candidate.center], [100, 130])
    assert.match(
      formatComparison(c, 'terminal'),
      /per-window samples of 1 \+ 1 runs \(circular block bootstrap: fewer than 3 runs a side\)/,
    )
    // Only p50 moved; the windows of the other figures are alike on both sides.
    assert.deepEqual(
      c.figures.filter((x) => x.verdict === 'regression' || x.verdict === 'improvement').map((x) => x.label),
      ['READ p50 (µs)'],
    )
    // OVERALL per window: every call of every operation.
    const all = c.figures.find((x) => x.label === 'OVERALL throughput (ops/s)')!
    assert.equal(all.samples, 'windows')
    assert.equal(all.verdict, 'no significant change')
    // UPDATE has no windows here: nothing to test, and it says so.
    assert.equal(c.figures.find((x) => x.label === 'UPDATE avg (µs)')!.verdict, 'insufficient data')
  },
)

test('several workloads a side: paired by name, the rest listed; one each: compared with each other', () => {
  const runs = (ids: readonly string[], w: string[]) => ids.map((id, i) => run(id, { workload: w[i]! }))
  const f = [...figures(['a1', 'a2'], [100, 100], 1), ...figures(['b1', 'b2'], [100, 100], 2)]
  const c = compareRuns(
    { ref: 'v=1', runs: runs(['a1', 'a2'], ['workloada', 'workloadb']) },
    { ref: 'v=2', runs: runs(['b1', 'b2'], ['workloada', 'workloade']) },
    f,
    [],
  )
  assert.deepEqual(
    c.workloads.map((w) => [w.baseline, w.baselineRuns, w.candidateRuns]),
    [['workloada', ['a1'], ['b1']]],
  )
  assert.deepEqual(c.unpaired, ['workloadb (baseline only)', 'workloade (candidate only)'])
  const one = compareRuns(
    { ref: 'a1', runs: runs(['a1'], ['workloada']) },
    { ref: 'b2', runs: runs(['b2'], ['workloade']) },
    f,
    [],
    { force: true },
  )
  assert.equal(one.workloads[0]!.candidate, 'workloade')
  assert.deepEqual(
    one.differences.map((d) => d.name),
    ['workload'],
  )
})

test(
  'compareReleases resolves groups and selectors through the read ' + 'model; nothing found is BS_ERR_NOT_FOUND',
  async () => {
    const all = [
      ...A.map((id) => run(id, { group_id: 'a', labels: { version: '1.0' } })),
      ...B.map((id) => run(id, { group_id: 'b', labels: { version: '1.1' }, workload: 'workloade' })),
    ]
    const asked: RunFilter[] = []
    const src: CompareSource = {
      getRun: async (id) => all.find((r) => r.run_id === id),
      listRuns: async (_limit, filter = {}) => {
        asked.push(filter)
        return all
          .filter(
            (r) =>
              (filter.group === undefined || r.group_id === filter.group) &&
              Object.entries(filter.labels ?? {}).every(([k, v]) => r.labels[k] === v),
          )
          .map((r) => ({ ...r, operations: 1 }))
      },
      runFigures: async (ids) =>
        [...figures(A, [100, 101, 99], 1), ...figures(B, [100, 101, 99], 2)].filter((f) => ids.includes(f.runId)),
      windowFigures: async () => assert.fail('3 runs a side need no windows'),
      reportedRuns: async () => assert.fail('every run has figures'),
    }
    const c = await compareReleases(src, 'group:a', 'version=1.1,workload=e', { force: true })
    assert.deepEqual(asked, [{ group: 'a' }, { labels: { version: '1.1' } }])
    assert.deepEqual(c.candidate.runs, B)
    await assert.rejects(
      compareReleases(src, 'group:a', 'version=9'),
      (e: unknown) => isBenchstreamError(e, 'BS_ERR_NOT_FOUND') && /no run matches "version=9"/.test(e.message),
    )
    await assert.rejects(compareReleases(src, 'nope', 'group:a'), (e: unknown) =>
      isBenchstreamError(e, 'BS_ERR_NOT_FOUND'),
    )
    // The profile hook reads each side's runs' stacks from the store and compares their shares.
    const stacksOf = new Map<string, Folded>([
      [
        'a1',
        new Map([
          ['main;scan;seek', 25],
          ['main;get', 75],
        ]),
      ],
      [
        'b2',
        new Map([
          ['main;scan;seek', 100],
          ['main;get', 100],
        ]),
      ],
    ])
    const read: string[][] = []
    const store = {
      stacks: async (sel: ProfileSelection): Promise<Folded> => {
        read.push([...(sel.runIds ?? [])])
        const out: Folded = new Map()
        for (const id of sel.runIds ?? [])
          for (const [k, n] of stacksOf.get(id) ?? []) out.set(k, (out.get(k) ?? 0) + n)
        return out
      },
    }
    const profiles = await compareReleases(src, 'group:a', 'group:b', {
      force: true,
      profileChanges: profileComparison(store),
    })
    assert.deepEqual(read, [A, B], "each side's runs, merged")
    assert.equal(profiles.profiles?.baselineSamples, 100)
    assert.equal(profiles.profiles?.candidateSamples, 200)
    // seek's share doubles (25% of the baseline's samples, 50% of the candidate's); get: 75% -> 50%.
    assert.deepEqual(
      profiles.profiles?.self.map((f) => [f.frame, f.baseline, f.candidate, f.change]),
      [
        ['get', 75, 50, -25],
        ['seek', 25, 50, 25],
      ],
    )
    assert.deepEqual(
      profiles.profiles?.total.map((f) => f.frame),
      ['get', 'scan', 'seek'],
      'main is on every stack: no change, left out',
    )
    assert.equal(
      profiles.profiles?.diffFlameGraph,
      `/profiles?baseline=${encodeURIComponent(A.join(','))}&candidate=${encodeURIComponent(B.join(','))}`,
    )
    const md = formatComparison(profiles, 'markdown')
    assert.match(md, /^#### Where the CPU time went: 100 baseline and 200 candidate profile samples/m)
    assert.match(md, /^\| self \| get \| 75\.00% \| 50\.00% \| -25\.00 \|$/m)
    assert.match(md, /^\| self \| seek \| 25\.00% \| 50\.00% \| \+25\.00 \|$/m)
    assert.match(formatComparison(profiles, 'terminal'), /^self +seek +25\.00% +50\.00% +\+25\.00$/m)
    stacksOf.delete('b2')
    assert.equal(
      (await compareReleases(src, 'group:a', 'group:b', { force: true, profileChanges: profileComparison(store) }))
        .profiles,
      null,
      'a side without samples: no profile section',
    )
  },
)

test(
  'the text: aligned terminal table (colour only when asked), Markdown with a header, a row per ' +
    'figure and the legend',
  () => {
    const f = [...figures(A, [100, 101, 99], 1), ...figures(B, [150, 152, 148], 2)]
    const c = compareRuns(side(A), side(B), f, [])
    const md = formatComparison(c, 'markdown')
    assert.match(
      md,
      joinRegExp([
        /^### `group:a` → `group:b`\n\n/,
        /\*\*Regressed:\*\* READ p50 \+50\.0%\.\n\n/,
        /\*\*baseline\*\*: 3 runs \(a1, a2, a3\) {2}\n/,
        /\*\*candidate\*\*: 3 runs \(b1, b2, b3\)\n/,
      ]),
    )
    assert.match(md, /^#### workload `workloada`: repetitions as samples \(3 \+ 3 runs, Welch's t-test, on logarithms/m)
    assert.match(md, /^\| figure \| baseline \| candidate \| change \| verdict \|$/m)
    assert.match(
      md,
      /^\| READ p50 \(µs\) \| 100 ± 1% \| 150 ± 1% \| \+50\.00% \| regression \(p=[\d.e-]+ n=3\+3\) \|$/m,
    )
    assert.match(md, /^\| UPDATE avg \(µs\) \| [\d.]+ ± \d+% \| [\d.]+ ± \d+% \| ~ \| ~ \(p=[\d.]+ n=3\+3\) \|$/m)
    assert.match(md, /^1 regression, 0 improvements, \d+ without significant change(, \d+ the same on every run)?\.$/m)
    assert.match(md, /Benjamini-Hochberg/)
    const plain = formatComparison(c, 'terminal')
    // ESC from its code, so no regex holds a control character.
    const esc = String.fromCharCode(0x1b)
    assert.ok(!plain.includes(esc), 'no colour unless asked')
    assert.ok(formatComparison(c, 'terminal', { color: true }).includes(`${esc}[31m`), 'regressions in red when asked')
    // Aligned: every row's verdict starts where the header's does.
    const table = plain.split('\n').filter((l) => /^(figure|OVERALL|READ|UPDATE) /.test(l))
    const at = table[0]!.indexOf('verdict')
    for (const l of table.slice(1)) assert.match(l.slice(at), /^(regression|~|at target|insufficient data)/, l)
  },
)

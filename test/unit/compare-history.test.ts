/**
 * A figure over a release series (services/core/compare/history.ts): label
 * values in natural order, one point per value (the median of its runs),
 * E-divisive change points marked, and too short a series said so.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { OpFigures, RunFigures, RunInfo } from '../../schemas/runs-api.v1.js'
import {
  formatHistory,
  naturalCompare,
  releaseHistory,
  type HistorySource,
} from '../../services/core/compare/history.js'
import { isBenchstreamError } from '../../services/core/errors.js'

test('natural order: numbers inside labels compare as numbers', () => {
  const versions = ['0.98.10', '0.98.9', '0.98.0', '1.0.0', '0.100.1', '0.98.10-rc1', '0.099.0']
  assert.deepEqual([...versions].sort(naturalCompare), [
    '0.98.0',
    '0.98.9',
    '0.98.10',
    '0.98.10-rc1',
    '0.099.0',
    '0.100.1',
    '1.0.0',
  ])
  assert.deepEqual(['2026-12-02', '2026-11-30', '2026-12-10'].sort(naturalCompare), [
    '2026-11-30',
    '2026-12-02',
    '2026-12-10',
  ])
})

function source(
  values: readonly number[],
  opts: { workload?: string; perVersion?: number } = {},
): HistorySource & { asked: unknown[] } {
  const runs: RunInfo[] = []
  const figs: RunFigures[] = []
  values.forEach((v, i) => {
    for (let r = 0; r < (opts.perVersion ?? 1); r++) {
      const id = `v${i}-${r}`
      runs.push({
        run_id: id,
        started_at: `2026-12-03 10:${String(i).padStart(2, '0')}:0${r}.000000`,
        labels: { version: `1.${i}.0`, host: 'h1' },
        workload: opts.workload ?? 'workloade',
      } as unknown as RunInfo)
      const op = (name: string, tp: number): OpFigures =>
        ({ op: name, opsPerSec: tp, p99Us: 1e6 / tp }) as unknown as OpFigures
      figs.push({ runId: id, runtimeMs: 1000, ops: [op('OVERALL', v + r), op('SCAN', v / 2 + r)], serverCache: [] })
    }
  })
  const asked: unknown[] = []
  return {
    asked,
    listRuns: async (_limit, filter = {}) => {
      asked.push(filter)
      // Newest first, as the read model answers.
      return runs
        .filter((r) => filter.hasLabel === undefined || r.labels[filter.hasLabel] !== undefined)
        .map((r) => ({ ...r, operations: 1 }))
        .reverse()
    },
    runFigures: async (ids) => figs.filter((f) => ids.includes(f.runId)),
    reportedRuns: async () => [],
  }
}

test('a 20 % step in 30 versions is found where it happened; a flat series has none', async () => {
  // 30 versions, throughput 10,000 ops/s, 20 % lower from the 16th on (index 15). Without noise: what is checked
  // here is the wiring (order, points, the change mapped to its version, the text), which then no seed can change;
  // how E-divisive fares on noisy series is proved with bounds in compare-change-points.test.ts. (The step is
  // still tested by permutation: only the 2 orders in C(30, 15) = 1.6e8 that sort the levels apart score as high,
  // so p = 1/200; each flat segment after it scores 0 however it is permuted, so p = 1 and the search stops.)
  const stepped = Array.from({ length: 30 }, (_, i) => (i >= 15 ? 8000 : 10_000))
  const h = await releaseHistory(source(stepped), { label: 'version', workload: 'e' })
  assert.deepEqual(h.points.map((p) => p.value).slice(0, 3), ['1.0.0', '1.1.0', '1.2.0'])
  assert.equal(h.points[10]!.value, '1.10.0', 'natural order: 1.10.0 after 1.9.0')
  assert.equal(h.changePoints.length, 1, JSON.stringify(h.changePoints))
  const cp = h.changePoints[0]!
  assert.equal(cp.index, 15)
  assert.equal(cp.value, '1.15.0')
  assert.equal(cp.changePercent, -20)
  assert.equal(cp.pValue, 1 / 200)
  const flat = await releaseHistory(source(Array.from({ length: 30 }, () => 10_000)), { label: 'version' })
  assert.deepEqual(flat.changePoints, [])
  assert.equal(flat.note, null)
  const text = formatHistory(h)
  assert.match(text, /^1\.15\.0 +1 +\d+ +-\d+\.\d% +◆ -\d+\.\d% \(mean \d+ → \d+, p=0\.\d{3}\)$/m)
  assert.match(
    text,
    /1 change point \(E-divisive means, permutation test at 0\.05\) over 30 values of version, workload e/,
  )
  assert.match(
    formatHistory(h, true),
    /^\| version \| runs \| OVERALL throughput \(ops\/s\) \| change \| change point \|$/m,
  )
})

test(
  'several runs per version: the median of their figures; an operation and a figure; too short ' + 'a series is said',
  async () => {
    const h = await releaseHistory(source([1000, 2000, 3000], { perVersion: 3 }), {
      label: 'version',
      op: 'SCAN',
      figure: 'throughput',
    })
    assert.deepEqual(
      h.points.map((p) => p.runs.length),
      [3, 3, 3],
    )
    assert.deepEqual(h.points[1]!.values, [1000, 1001, 1002])
    assert.equal(h.points[1]!.center, 1001)
    assert.equal(h.points[1]!.changePercent, ((1001 - 501) / 501) * 100)
    assert.equal(h.changePoints.length, 0)
    assert.match(h.note!, /^3 points with the figure: change points need at least 6/)
    const p99 = await releaseHistory(source([1000, 2000], { perVersion: 1 }), { label: 'version', figure: 'p99' })
    assert.deepEqual(
      p99.points.map((p) => p.center),
      [1000, 500],
    )
    await assert.rejects(
      releaseHistory(source([1000]), { label: 'release' }),
      (e: unknown) => isBenchstreamError(e, 'BS_ERR_NOT_FOUND') && /no run has the label release/.test(e.message),
    )
    await assert.rejects(
      releaseHistory(source([1000], { workload: 'workloada' }), { label: 'version', workload: 'e' }),
      (e: unknown) => isBenchstreamError(e, 'BS_ERR_NOT_FOUND'),
    )
  },
)

import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Histogram } from '../../services/core/stats/histogram.js'
import { buildReport, formatYcsb } from '../../services/core/reports/ycsb-report.js'

test('report follows YCSB layout, failed operations under OP-FAILED, Return= counts on the operation', () => {
  const ok = new Histogram()
  for (let v = 1; v <= 100; v++) ok.record(v)
  const failed = new Histogram()
  failed.record(500)
  const r = buildReport(
    [
      { op: 'READ', status: 'OK', count: 100, sumUs: 5050, minUs: 1, maxUs: 100, hist: ok.entries() },
      { op: 'READ', status: 'NOT_FOUND', count: 1, sumUs: 500, minUs: 500, maxUs: 500, hist: failed.entries() },
    ],
    2000,
  )
  assert.equal(r.operations, 101)
  assert.equal(r.throughputOpsPerSec, 50.5)
  const text = formatYcsb(r)
  assert.match(text, /^\[OVERALL\], RunTime\(ms\), 2000$/m)
  assert.match(text, /^\[OVERALL\], Throughput\(ops\/sec\), 50\.5$/m)
  assert.match(text, /^\[READ\], Operations, 100$/m)
  assert.match(text, /^\[READ\], AverageLatency\(us\), 50\.5$/m)
  assert.match(text, /^\[READ\], 95thPercentileLatency\(us\), 95$/m)
  assert.match(text, /^\[READ\], 99thPercentileLatency\(us\), 99$/m)
  assert.match(text, /^\[READ\], Return=OK, 100$/m)
  assert.match(text, /^\[READ\], Return=NOT_FOUND, 1$/m)
  assert.match(text, /^\[READ-FAILED\], Operations, 1$/m)
  assert.ok(text.indexOf('[READ], Operations') < text.indexOf('[READ-FAILED]'))
})

test(
  'with a target, intended latency follows in [Intended-OP] sections, laid out as YCSB 0.17.0 ' +
    'does with measurement.interval=both',
  async () => {
    const { readFileSync } = await import('node:fs')
    const { repoRoot } = await import('../../services/common/repo-root.js')
    const measured = new Histogram()
    const intended = new Histogram()
    for (let v = 1; v <= 1000; v++) {
      measured.record(v)
      intended.record(v * 40) // behind schedule: every operation waited
    }
    const agg = (op: string) => ({
      op,
      status: 'OK',
      count: 1000,
      sumUs: 500_500,
      minUs: 1,
      maxUs: 1000,
      hist: measured.entries(),
      intended: { sumUs: 20_020_000, minUs: 40, maxUs: 40_000, hist: intended.entries() },
    })
    const r = buildReport([agg('READ'), agg('UPDATE')], 1000, { intended: true })
    assert.deepEqual(
      r.measurements.map((m) => m.name),
      ['READ', 'UPDATE', 'Intended-READ', 'Intended-UPDATE'],
    )
    const ir = r.measurements[2]!
    assert.equal(ir.operations, 1000)
    assert.equal(ir.averageLatencyUs, 20_020)
    assert.equal(ir.minLatencyUs, 40)
    assert.equal(ir.maxLatencyUs, 40_000)
    assert.equal(ir.p99LatencyUs, intended.quantile(0.99))
    assert.ok(ir.p99LatencyUs <= ir.maxLatencyUs && Number.isInteger(ir.p99LatencyUs))
    assert.deepEqual(ir.returns, {})
    assert.equal(r.operations, 2000, 'intended twins are not extra operations')
    // Section order and per-section fields as in a real YCSB 0.17.0 report (test/fixtures/ycsb-0.17.0).
    const fields = (text: string, name: string): string[] =>
      text
        .split('\n')
        .filter((l) => l.startsWith(`[${name}], `))
        .map((l) => l.split(', ')[1]!)
    const sections = (text: string): string[] => [
      ...new Set(
        text
          .split('\n')
          .map((l) => /^\[([A-Za-z-]+)\],/.exec(l)?.[1])
          .filter((n): n is string => n !== undefined && /^(Intended-)?(READ|UPDATE)$/.test(n)),
      ),
    ]
    const ycsb = readFileSync(`${repoRoot()}/test/fixtures/ycsb-0.17.0/run-workloada-target-both.stdout.txt`, 'utf8')
    const ours = formatYcsb(r)
    assert.deepEqual(sections(ours), sections(ycsb))
    for (const name of ['READ', 'Intended-READ']) {
      // YCSB's hdrhistogram.percentiles default (95,99) vs our fixed set: compare the fields both print.
      const theirs = fields(ycsb, name).filter((f) => !/PercentileLatency/.test(f))
      assert.deepEqual(
        fields(ours, name).filter((f) => !/PercentileLatency/.test(f)),
        theirs,
        name,
      )
    }
    assert.equal(fields(ours, 'Intended-READ').filter((f) => f.startsWith('Return=')).length, 0)
    // Without a target there are no intended sections.
    assert.equal(buildReport([agg('READ')], 1000).measurements.length, 1)
  },
)

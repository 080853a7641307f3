/**
 * `benchstream sweep -threads 1,2,4,8` end to end: four runs back to back
 * through the driver, Kafka and the server, then the table printed from the
 * runs' merged reports, the chart and the per-point reports written to
 * --out. Every number of the table is checked against the run's report
 * from the API (ALL's percentiles, which a report does not have, against
 * exact ones over the raw events), and the sweep_points view Grafana reads
 * against the same reports.
 */
import assert from 'node:assert/strict'
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import type { RunReport } from '../../schemas/run-reports-api.v1.js'
import { queryRows } from '../../services/adapters/clickhouse/client.js'
import { startServer } from '../../services/server/main.js'
import { cli } from '../helpers/cli.js'
import { testEnv } from '../helpers/env.js'

const THREADS = ['1', '2', '4', '8']

test(
  "sweep over -threads 1,2,4,8: the table equals the runs' reports, the chart and the reports are written",
  { timeout: 180_000 },
  async (t) => {
    const te = testEnv()
    t.after(te.cleanup)
    const svc = await startServer(te.env, { api: true })
    t.after(() => svc.stop())
    const id = `sw-${Date.now().toString(36)}`
    const out = path.join(te.dataDir, 'sweep-out')
    // Reads and updates wait 1 ms on a timer (a remote store): throughput grows with threads.
    const r = await cli(te.env, [
      'sweep',
      '-P',
      'workloads/workloada',
      '-p',
      'recordcount=1000',
      '-p',
      'operationcount=0',
      '-p',
      'memory.delay.read=1000',
      '-p',
      'memory.delay.update=1000',
      '-threads',
      THREADS.join(','),
      '--seconds',
      '2',
      '-db',
      'memory',
      '--out',
      out,
      '--sweep-id',
      id,
    ])
    assert.equal(r.code, 0, r.stderr)
    process.stdout.write(
      r.stdout
        .split('\n')
        .map((l) => `# ${l}`)
        .join('\n') + '\n',
    )
    assert.equal(readFileSync(path.join(out, `${id}.txt`), 'utf8'), r.stdout, 'the table file is what was printed')

    // Parse the table: point rows (threads, run, ALL, ...) followed by one row per operation.
    const lines = r.stdout.split('\n')
    const header = lines.findIndex((l) => l.startsWith('threads  run'))
    assert.ok(header > 0, r.stdout)
    const rows: Array<{
      threads: string
      run: string
      op: string
      opsPerSec: string
      p50: string
      p95: string
      p99: string
    }> = []
    let current = { threads: '', run: '' }
    for (const l of lines.slice(header + 1)) {
      if (l.trim() === '') break
      const cells = l.trim().split(/\s{2,}/)
      if (cells.length === 7) current = { threads: cells[0]!, run: cells[1]! }
      const [op, opsPerSec, p50, p95, p99] = cells.slice(cells.length - 5) as [string, string, string, string, string]
      rows.push({ ...current, op, opsPerSec, p50, p95, p99 })
    }
    assert.deepEqual([...new Set(rows.map((x) => x.threads))], THREADS)
    let checked = 0
    for (const [k, threads] of THREADS.entries()) {
      const runId = `${id}-${k + 1}`
      const res = await svc.api!.inject({ method: 'GET', url: `/api/v1/runs/${runId}/report` })
      const report = res.json<RunReport>()
      assert.equal(report.run!.threads, Number(threads))
      assert.deepEqual(report.run!.labels, { sweep: id, 'sweep.param': 'threads', point: threads })
      assert.equal(
        report.completeness.counted,
        report.completeness.sent,
        'the table was printed once the point was fully counted',
      )
      const mine = rows.filter((x) => x.run === runId)
      const all = mine.find((x) => x.op === 'ALL')!
      assert.equal(all.opsPerSec, report.throughputOpsPerSec.toFixed(2))
      for (const m of report.measurements.filter((x) => x.operations > 0 && !x.name.includes('-'))) {
        const row = mine.find((x) => x.op === m.name)
        assert.ok(row !== undefined, `${runId} ${m.name} in the table`)
        assert.equal(row.opsPerSec, ((m.operations * 1000) / report.runtimeMs).toFixed(2))
        assert.deepEqual(
          [row.p50, row.p95, row.p99],
          [String(m.p50LatencyUs), String(m.p95LatencyUs), String(m.p99LatencyUs)],
          `${runId} ${m.name}`,
        )
        checked++
      }
      // ALL: the histogram of every operation merged; against exact percentiles over the raw events (buckets are within
      // 0.4 %).
      const [exact] = await queryRows<{ p50: number; p95: number; p99: number }>(
        svc.ch,
        `
      SELECT arraySort(groupArray(latency_us)) AS s,
             s[bs_rank(0.5, length(s))] AS p50, s[bs_rank(0.95, length(s))] AS p95, s[bs_rank(0.99, length(s))] AS p99
      FROM benchstream.ops WHERE run_id = {r:String} AND status = 'OK'`,
        { r: runId },
      )
      for (const [shown, e] of [
        [all.p50, exact!.p50],
        [all.p95, exact!.p95],
        [all.p99, exact!.p99],
      ] as const) {
        assert.ok(Math.abs(Number(shown) - e) <= Math.max(1, 0.005 * e), `${runId} ALL: ${shown} µs vs exact ${e} µs`)
      }
      // The dashboard's view: the same numbers.
      const points = await queryRows<{ op: string; x: number; ops_per_sec: number; p99_us: number }>(
        svc.ch,
        `SELECT op, x, ops_per_sec, p99_us FROM benchstream.sweep_points WHERE sweep_id = {id:String} ` +
          `AND run_id = {r:String}`,
        { id, r: runId },
      )
      assert.equal(points.find((p) => p.op === 'OVERALL')!.ops_per_sec.toFixed(2), all.opsPerSec)
      assert.equal(
        points.find((p) => p.op === 'READ')!.p99_us,
        report.measurements.find((m) => m.name === 'READ')!.p99LatencyUs,
      )
      assert.ok(points.every((p) => p.x === Number(threads)))
      assert.match(
        readFileSync(path.join(out, `${runId}.txt`), 'utf8'),
        new RegExp(`^\\[BENCHSTREAM\\], RunId, ${runId}$`, 'm'),
        "each point's own report is in --out",
      )
    }
    assert.ok(checked >= 8, `${checked} operation rows checked`)
    assert.match(r.stdout, /^peak: threads=\d, [\d,]+\.\d\d ops\/s$/m)
    assert.match(r.stdout, /^saturation: /m)
    assert.match(r.stdout, /^knee: /m)
    const svgFile = path.join(out, `${id}.svg`)
    assert.ok(existsSync(svgFile))
    const svg = readFileSync(svgFile, 'utf8')
    assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/)
    for (const x of THREADS) assert.ok(svg.includes(`>${x}</text>`), `x label ${x} in the chart`)
    assert.match(r.stdout, new RegExp(`^chart: ${svgFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'))
  },
)

/**
 * The live view in a real browser (headless Chromium through playwright-core)
 * against the whole pipeline: two throttled driver clients -> Kafka ->
 * processor -> embedded ClickHouse -> API -> Server-Sent Events -> the page.
 *
 * Checked against the run's report and the windows in ClickHouse, exactly:
 *  - the page picks up the new run by itself (the picker is pushed over SSE);
 *  - while the run goes on, the plotted windows grow (updates are pushed),
 *    and every window value the page ever showed equals that window's final
 *    count: a still-filling window is never drawn;
 *  - once final: total operations, per-operation counts, p50/p95/p99/p99.9,
 *    max and average equal the report's (merged histograms, same rule);
 *    intended p99 equals bs_quantile over the merged intended histograms;
 *    every window of the throughput, per-operation and per-client series
 *    equals ClickHouse's count; the headline ops/s is the last full window's;
 *    target, client- and server-side cache-hit ratios as computed here from
 *    the raw rows;
 *  - ?baseline= overlays a run aligned on seconds since its start.
 * Screenshots are kept in test-results/live-view/ (or LIVE_VIEW_SCREENSHOT_DIR), among them one of a page
 * opened on the finished two-client run, whose chart layout is checked: one plot per chart, nothing overlapping.
 */
import assert from 'node:assert/strict'
import { copyFileSync, existsSync, mkdirSync, mkdtempSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import type { Page } from 'playwright-core'
import { queryRows } from '../../services/adapters/clickhouse/client.js'
import { createKafka } from '../../services/adapters/kafka/client.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import type { RunReport } from '../../services/core/ports/read-model.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { runDriver } from '../../services/driver/app.js'
import { startServer } from '../../services/server/main.js'
import { collectPageErrors, openBrowser } from '../helpers/chromium.js'
import { testEnv } from '../helpers/env.js'
import { loadClient, openClientSink, waitForRun } from '../helpers/driven-run.js'

const CLIENTS = ['client-a', 'client-b']
/** Per client, ops/s. */
const TARGET = 500
/**
 * The run goes on until the page has drawn more windows at least once after
 * its first ones (updates pushed while the run goes on) and for at least
 * MIN_RUN_MS; then the drivers are stopped. On two busy shared cores a
 * window can take several seconds to become complete, so a fixed length
 * would be either slow or flaky. MAX_RUN_S stops it in any case.
 */
const MIN_RUN_MS = 10_000
const MAX_RUN_S = 120

// Globals of the page, for the functions that run inside it (page.evaluate); the project's tsconfig has no DOM library.
interface PageElement {
  dataset: Record<string, string | undefined>
  textContent: string | null
  value: string
  querySelectorAll(selector: string): Iterable<PageElement>
}
declare const document: {
  getElementById(id: string): PageElement | null
  querySelectorAll(selector: string): Iterable<PageElement>
  querySelector(selector: string): PageElement | null
}
declare const window: unknown

interface PageFigures {
  total: string
  lastOps: string
  lastT: string
  target: string
  errors: string
  hitClient: string
  hitServer: string
  points: number
  updates: number
  final: boolean
  state: string
  meta: Record<string, string>
  rows: Record<string, Record<string, string>>
  /** Series of each chart by label: x in seconds, values as plotted. */
  charts: Record<string, { x: number[]; series: Record<string, Array<number | null>> }>
  options: string[]
}

interface Box {
  left: number
  right: number
  top: number
  bottom: number
}
interface ChartLayout {
  id: string
  box: Box
  plots: number
  axes: number
  plot: Box
  legend: Box
  labels: Box[]
}

/** Where each chart's parts are on the page: its container, its uPlot root, legend and axis labels. */
async function chartLayout(page: Page): Promise<{ charts: ChartLayout[] }> {
  return page.evaluate(() => {
    interface El {
      id: string
      getBoundingClientRect(): Box
      querySelectorAll(selector: string): ArrayLike<El>
      querySelector(selector: string): El | null
    }
    const d = document as unknown as { querySelectorAll(selector: string): ArrayLike<El> }
    const box = (e: El | null): Box => {
      const r = e?.getBoundingClientRect() ?? { left: 0, right: 0, top: 0, bottom: 0 }
      return { left: r.left, right: r.right, top: r.top, bottom: r.bottom }
    }
    const charts = Array.from(d.querySelectorAll('#charts .chart'))
      .filter((el) => el.querySelector('.uplot') !== null)
      .map((el) => ({
        id: el.id,
        box: box(el),
        plots: el.querySelectorAll('.uplot').length,
        axes: el.querySelectorAll('.u-axis').length,
        plot: box(el.querySelector('.uplot')),
        legend: box(el.querySelector('.u-legend')),
        labels: Array.from(el.querySelectorAll('.u-axis .u-label')).map(box),
      }))
    return { charts }
  })
}

/** What the page shows: its data-value attributes and the data of its uPlot charts. */
async function figures(page: Page): Promise<PageFigures> {
  return page.evaluate(() => {
    const $ = (id: string): PageElement => document.getElementById(id)!
    const v = (id: string): string => $(id).dataset.value ?? ''
    const rows: Record<string, Record<string, string>> = {}
    for (const tr of document.querySelectorAll('#ops-table tbody tr')) {
      const r: Record<string, string> = {}
      for (const td of tr.querySelectorAll('td[data-field]')) r[td.dataset.field!] = td.dataset.value ?? ''
      rows[tr.dataset.op!] = r
    }
    const meta: Record<string, string> = {}
    for (const b of document.querySelectorAll('#meta [data-field]')) meta[b.dataset.field!] = b.textContent ?? ''
    const charts: PageFigures['charts'] = {}
    const live = (
      window as {
        benchstreamLive: {
          charts: Record<string, { u: { data: Array<Array<number | null>>; series: Array<{ label: string }> } }>
        }
      }
    ).benchstreamLive
    for (const [key, c] of Object.entries(live.charts)) {
      const series: Record<string, Array<number | null>> = {}
      c.u.series.forEach((s, i) => {
        if (i > 0) series[s.label] = [...c.u.data[i]!]
      })
      charts[key] = { x: [...(c.u.data[0] as number[])], series }
    }
    const box = $('charts')
    return {
      total: v('total-ops'),
      lastOps: v('last-ops'),
      lastT: $('last-ops').dataset.t ?? '',
      target: v('target'),
      errors: v('errors'),
      hitClient: v('hit-client'),
      hitServer: v('hit-server'),
      points: Number(box.dataset.points),
      updates: Number(box.dataset.updates),
      final: box.dataset.final === 'true',
      state: $('state').dataset.state ?? '',
      meta,
      rows,
      charts,
      options: [...document.querySelectorAll('#run-picker option')].map((o) => o.value),
    }
  })
}

test('the live view draws complete windows pushed over SSE, with the numbers of the report', async (t) => {
  const started = Date.now()
  const te = testEnv()
  t.after(te.cleanup)
  const svc = await startServer(te.env, { api: true })
  t.after(() => svc.stop())
  const shots = mkdtempSync(path.join(os.tmpdir(), 'benchstream-live-view-'))
  const browser = await openBrowser(t)
  const page = await browser.newPage()
  const pageErrors = collectPageErrors(page)

  // The page before the run exists: it waits, on the run list's stream.
  await page.goto(`${svc.apiUrl}/`)
  await page.waitForSelector('#state[data-state="waiting"]')

  const runId = `live-${Date.now()}`
  const infra = readInfraConfig(te.env)
  const kafka = createKafka(infra.kafka, 'e2e-live')
  const drivers = await Promise.all(
    CLIENTS.map(async (clientId, i) => {
      const client = await loadClient(te.env, [
        ...`-P workloads/workloada -p recordcount=2000 -p operationcount=10000000`.split(' '),
        ...`-p maxexecutiontime=${MAX_RUN_S} -p memory.cachesize=${400 + 100 * i}`.split(' '),
        ...`-threads 4 -target ${TARGET} -db memory --run-id ${runId} --client-id ${clientId}`.split(' '),
        ...'--label test=live-view --label build=e2e'.split(' '),
      ])
      // The sinks connect before runStarted below: the run's time is the drivers' own, not a connect's.
      return { ...client, sink: await openClientSink(kafka, te.env, client.cfg) }
    }),
  )
  let runGoing = true
  const stop = new AbortController()
  const runStarted = Date.now()
  const running = Promise.all(
    drivers.map(async (d) => {
      const { workload, binding, sink } = d
      const outcome = await runDriver(d.cfg, { workload, binding, sink, status: () => undefined, signal: stop.signal })
      await d.sink.close()
      return outcome
    }),
  ).finally(() => {
    runGoing = false
  })

  // The new run reaches the picker by itself, and the page follows it.
  await page.waitForSelector(`#run-picker option[value="${runId}"]`, { state: 'attached', timeout: 30_000 })
  // While the run goes on: what the page draws, every 400 ms.
  const seen: Array<{
    at: number
    points: number
    updates: number
    throughput: PageFigures['charts'][string] | undefined
  }> = []
  let shotRunning = false
  const grown = (): boolean => {
    const first = seen.find((s) => s.points > 0)
    return first !== undefined && seen.some((s) => s.points > first.points)
  }
  while (runGoing) {
    const f = await figures(page)
    if (runGoing)
      seen.push({ at: Date.now() - started, points: f.points, updates: f.updates, throughput: f.charts.throughput })
    if (runGoing && !shotRunning && f.points >= 6) {
      await page.screenshot({ path: path.join(shots, 'live-view-running.png'), fullPage: true })
      shotRunning = true
    }
    if (!stop.signal.aborted && grown() && shotRunning && Date.now() - runStarted >= MIN_RUN_MS) stop.abort()
    await new Promise((r) => setTimeout(r, 400))
  }
  const outcomes = await running
  const delivered = outcomes.reduce((a, o) => a + o.delivery.sentEvents, 0)
  assert.ok(delivered > 0)
  const growth = [...new Set(seen.map((s) => s.points).filter((p) => p > 0))]
  t.diagnostic(`during the run: ${seen.map((s) => `${s.at}ms:${s.points}/${s.updates}`).join(' ')}`)
  // On two shared cores a window may take a few seconds to become complete: growing once is the proof asked for.
  assert.ok(
    growth.length >= 2 && growth.every((p, i) => i === 0 || p > growth[i - 1]!),
    `the plotted windows grew while the run went on (SSE updates): ${JSON.stringify(growth)}`,
  )
  assert.ok(Math.max(...seen.map((s) => s.updates)) >= 1, 'updates arrived during the run')

  // Everything in ClickHouse, then the page final.
  const ch = svc.ch
  await waitForRun(ch, runId, { events: delivered, clients: CLIENTS.length })
  await page.waitForSelector('#charts[data-final="true"]', { timeout: 90_000 })
  const f = await figures(page)
  await page.screenshot({ path: path.join(shots, 'live-view.png'), fullPage: true })
  assert.deepEqual(pageErrors, [], 'the page logged no errors')
  assert.equal(f.state, 'final')
  assert.ok(f.options.includes(runId))

  const res = await svc.api!.inject({ method: 'GET', url: `/api/v1/runs/${runId}/report` })
  assert.equal(res.statusCode, 200)
  const report = res.json<RunReport>()
  const W = Number(report.run!.window_ms)

  // Totals and per-operation figures: exactly the report's.
  assert.equal(Number(f.total), report.operations)
  assert.equal(report.operations, delivered)
  const ops = Object.keys(f.rows).sort()
  // Intended latency is a column of each operation's row, not a row of its own.
  assert.deepEqual(
    ops,
    report.measurements
      .filter((m) => !m.name.endsWith('-FAILED') && !m.name.startsWith('Intended-'))
      .map((m) => m.name)
      .sort(),
  )
  for (const op of ops) {
    const m = report.measurements.find((x) => x.name === op)!
    const row = f.rows[op]!
    assert.equal(Number(row.operations), m.operations, `${op} operations`)
    assert.equal(
      Number(row.failed),
      report.measurements.find((x) => x.name === `${op}-FAILED`)?.operations ?? 0,
      `${op} failed`,
    )
    assert.equal(Number(row.p50), m.p50LatencyUs, `${op} p50`)
    assert.equal(Number(row.p95), m.p95LatencyUs, `${op} p95`)
    assert.equal(Number(row.p99), m.p99LatencyUs, `${op} p99`)
    assert.equal(Number(row.p999), m.p999LatencyUs, `${op} p99.9`)
    assert.equal(Number(row.maxUs), m.maxLatencyUs, `${op} max`)
    assert.ok(
      Math.abs(Number(row.averageUs) - m.averageLatencyUs) < 1e-6,
      `${op} average ${row.averageUs} vs ${m.averageLatencyUs}`,
    )
    assert.ok(Math.abs(Number(row.cacheHitRatio) - report.cacheHitRatio[op]!) < 1e-12, `${op} client cache-hit ratio`)
  }
  const intended = await queryRows<{ op: string; p99: string }>(
    ch,
    `SELECT op, bs_quantile(0.99, sumMap(intended_hist)) AS p99 FROM benchstream.op_windows WHERE ` +
      `run_id = {runId:String} AND status = 'OK' GROUP BY op`,
    { runId },
  )
  for (const r of intended) {
    assert.equal(Number(f.rows[r.op]!.intendedP99), Number(r.p99), `${r.op} intended p99`)
    // The report's Intended- section (a throttled run) says the same, clamped to its maximum.
    const im = report.measurements.find((x) => x.name === `Intended-${r.op}`)!
    assert.equal(
      Number(f.rows[r.op]!.intendedP99),
      Math.min(Number(r.p99), im.maxLatencyUs),
      `${r.op} intended p99 = report's Intended-${r.op}`,
    )
  }

  // Every window, as ClickHouse counts it: total, per operation, per client.
  const perWindow = await queryRows<{ t: string; op: string; client_id: string; n: string }>(
    ch,
    `SELECT toUnixTimestamp64Milli(window_start) AS t, op, client_id, sum(count) AS n FROM benchstream.op_windows ` +
      `WHERE run_id = {runId:String} GROUP BY t, op, client_id`,
    { runId },
  )
  const sum = (pred: (r: (typeof perWindow)[number]) => boolean): Map<number, number> => {
    const m = new Map<number, number>()
    for (const r of perWindow) if (pred(r)) m.set(Number(r.t), (m.get(Number(r.t)) ?? 0) + Number(r.n))
    return m
  }
  const totals = sum(() => true)
  const starts = [...totals.keys()].sort((a, b) => a - b)
  const expectedX: number[] = []
  for (let s = starts[0]!; s <= starts[starts.length - 1]!; s += W) expectedX.push(s / 1000)
  const thr = f.charts.throughput!
  assert.deepEqual(thr.x, expectedX, 'one point per window, first to last, none left out')
  assert.equal(f.points, expectedX.length)
  const rate = (m: Map<number, number>): number[] =>
    expectedX.map((x) => ((m.get(Math.round(x * 1000)) ?? 0) * 1000) / W)
  assert.deepEqual(thr.series.total, rate(totals), 'total ops/s per window')
  for (const op of ops) assert.deepEqual(thr.series[op], rate(sum((r) => r.op === op)), `${op} ops/s per window`)
  assert.deepEqual(
    thr.series.target,
    expectedX.map(() => CLIENTS.length * TARGET),
    'the target line',
  )
  const clients = f.charts.clients!
  for (const c of CLIENTS)
    assert.deepEqual(clients.series[c], rate(sum((r) => r.client_id === c)), `${c} ops/s per window`)

  // Only complete windows were ever drawn: every value shown during the run is the window's final one.
  let compared = 0
  for (const s of seen) {
    if (s.throughput === undefined) continue
    s.throughput.x.forEach((x, i) => {
      const final = ((totals.get(Math.round(x * 1000)) ?? 0) * 1000) / W
      assert.equal(
        s.throughput!.series.total![i],
        final,
        `window ${new Date(x * 1000).toISOString()} was drawn at ${s.throughput!.series.total![i]} ops/s ` +
          `during the run; its final count is ${final} ops/s`,
      )
      compared++
    })
  }
  assert.ok(compared > 0)

  // The headline: the newest window that covers a whole window length (the last one is cut short by the end).
  const lastFull = starts[starts.length - 2]!
  assert.equal(Number(f.lastT), lastFull)
  assert.equal(Number(f.lastOps), (totals.get(lastFull)! * 1000) / W)
  assert.equal(Number(f.target), CLIENTS.length * TARGET)
  assert.equal(Number(f.target), report.run!.target)
  assert.equal(Number(f.errors), 0)
  assert.equal(f.meta.run, runId)
  assert.equal(f.meta.workload, report.run!.workload)
  assert.equal(f.meta.binding, 'memory')
  assert.match(f.meta.clients ?? '', /^2 of 2 ended$/)
  assert.match(f.meta.labels ?? '', /build=e2e/)
  assert.match(f.meta.labels ?? '', /test=live-view/)

  // Cache hits: client side from the windows, server side from the memory store's cumulative counters.
  const hm = await queryRows<{ h: string; m: string }>(
    ch,
    `SELECT sum(cache_hits) AS h, sum(cache_misses) AS m FROM benchstream.op_windows WHERE run_id = {runId:String}`,
    { runId },
  )
  assert.equal(Number(f.hitClient), Number(hm[0]!.h) / (Number(hm[0]!.h) + Number(hm[0]!.m)))
  const samples = await queryRows<{ client_id: string; name: string; at_ms: string; value: number }>(
    ch,
    `SELECT client_id, name, toUnixTimestamp64Milli(at) AS at_ms, value FROM benchstream.server_metrics ` +
      `WHERE run_id = {runId:String} AND source = 'memory' AND name IN ('cache_hits', 'cache_misses') ` +
      `ORDER BY client_id, name, at`,
    { runId },
  )
  const inc = { cache_hits: 0, cache_misses: 0 }
  const end = starts[starts.length - 1]! + W
  samples.forEach((s, i) => {
    const prev = samples[i - 1]
    if (prev === undefined || prev.client_id !== s.client_id || prev.name !== s.name) return
    const at = Number(s.at_ms)
    if (at >= starts[0]! && at < end)
      inc[s.name as keyof typeof inc] += s.value >= prev.value ? s.value - prev.value : s.value
  })
  assert.ok(inc.cache_hits + inc.cache_misses > 0, 'the memory store sampled its counters')
  assert.ok(
    Math.abs(Number(f.hitServer) - inc.cache_hits / (inc.cache_hits + inc.cache_misses)) < 1e-12,
    `server-side hit ratio ${f.hitServer} vs ${inc.cache_hits / (inc.cache_hits + inc.cache_misses)}`,
  )

  // What a person sees, on a page opened on a run that already has windows (every chart made in the first render):
  // each chart container holds one plot with one x and one y axis, inside its container; no two plots, legends
  // or axis labels overlap. A chart sized while its figure was alone in the grid used to overflow onto the next.
  await page.goto(`${svc.apiUrl}/?run=${runId}`)
  await page.waitForSelector('#charts[data-final="true"]')
  const layout = await chartLayout(page)
  await page.screenshot({ path: path.join(shots, 'live-view-opened-final.png'), fullPage: true })
  assert.equal(layout.charts.length, 4 + ops.length, `${layout.charts.map((c) => c.id).join(', ')}`)
  for (const c of layout.charts) {
    assert.equal(c.plots, 1, `${c.id}: one plot in its container`)
    assert.equal(c.axes, 2, `${c.id}: one x and one y axis`)
    assert.ok(
      c.plot.left >= c.box.left - 1 && c.plot.right <= c.box.right + 1,
      `${c.id}: its plot ${JSON.stringify(c.plot)} lies inside its container ${JSON.stringify(c.box)}`,
    )
  }
  const overlaps = (a: Box, b: Box): boolean =>
    a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1
  for (const kind of ['plot', 'legend'] as const)
    for (const [i, a] of layout.charts.entries())
      for (const b of layout.charts.slice(i + 1))
        assert.ok(!overlaps(a[kind], b[kind]), `the ${kind}s of ${a.id} and ${b.id} overlap`)
  for (const a of layout.charts)
    for (const label of a.labels)
      for (const b of layout.charts)
        if (b !== a) assert.ok(!overlaps(label, b.plot), `an axis label of ${a.id} lies on the plot of ${b.id}`)

  // A baseline overlay, aligned on seconds since start: the run against itself lies on top of itself.
  await page.goto(`${svc.apiUrl}/?run=${runId}&baseline=${runId}`)
  await page.waitForSelector('#charts[data-final="true"]')
  await page.waitForFunction(
    () => document.querySelector('[data-field="baseline"]')?.textContent?.includes('(waiting)') === false,
  )
  const b = await figures(page)
  const overlay = b.charts.throughput!
  const label = `baseline total (${runId})`
  assert.deepEqual(
    overlay.series[label],
    overlay.series.total,
    'the baseline overlay is aligned on seconds since start',
  )
  for (const op of ops)
    assert.deepEqual(b.charts[`latency:${op}`]!.series['baseline p99'], b.charts[`latency:${op}`]!.series.p99)

  // Kept as the test's artefacts: test-results/live-view/ unless LIVE_VIEW_SCREENSHOT_DIR names another folder.
  const keep = process.env.LIVE_VIEW_SCREENSHOT_DIR || path.join(repoRoot(), 'test-results', 'live-view')
  {
    mkdirSync(keep, { recursive: true })
    for (const name of ['live-view.png', 'live-view-running.png', 'live-view-opened-final.png'])
      if (existsSync(path.join(shots, name))) copyFileSync(path.join(shots, name), path.join(keep, name))
  }
  t.diagnostic(
    `screenshots in ${keep}; ${seen.length} samples during the run, windows drawn ${JSON.stringify(growth)}; ` +
      `${((Date.now() - started) / 1000).toFixed(1)} s`,
  )
})

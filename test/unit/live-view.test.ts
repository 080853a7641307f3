/**
 * The live view's server side without infrastructure (the read model is a
 * small fake over generated windows), over real HTTP since event streams do
 * not end: only complete windows are sent, updates follow the watermark, an
 * ended run's last window comes once all it sent is counted; streams are
 * bounded (503 BS_ERR_LIVE_LIMIT) and a feed stops reading when its last
 * page leaves; totals equal the report's for the same rows; the page and
 * uPlot's files are served from this machine.
 */
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { test } from 'node:test'
import type { Alert } from '../../schemas/alerts-api.v1.js'
import type { LiveAlerts, LiveSnapshot, LiveUpdate } from '../../schemas/live-api.v1.js'
import { build } from '../../services/api/app.js'
import { readApiConfig } from '../../services/api/config.js'
import { assembleWindows, LiveTotals } from '../../services/api/live/windows.js'
import type { RunProgress } from '../../services/core/stats/window-completeness.js'
import type { AdHocQueries } from '../../services/core/ports/ad-hoc-queries.js'
import { NO_AD_HOC } from '../helpers/ad-hoc-fake.js'
import type { ReadModel, RunInfo, WindowOpStatusRow } from '../../services/core/ports/read-model.js'
import { buildReport } from '../../services/core/reports/ycsb-report.js'
import { Histogram } from '../../services/core/stats/histogram.js'
import { servedModules } from '../helpers/served-modules.js'

const W = 1000
const T0 = Date.UTC(2026, 11, 3, 10, 0, 0)

/**
 * Rows of a run: READ and UPDATE every window but a stall at window 4, a few errors, latencies spread over the
 * histogram.
 */
function rowsOf(windows: number): WindowOpStatusRow[] {
  const rows: WindowOpStatusRow[] = []
  let seed = 7
  const rand = (): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
  for (let i = 0; i < windows; i++) {
    if (i === 4) continue
    for (const op of ['READ', 'UPDATE']) {
      for (const status of i % 3 === 0 && op === 'UPDATE' ? ['OK', 'ERROR'] : ['OK']) {
        const h = new Histogram()
        const ih = new Histogram()
        let sum = 0
        let min = Infinity
        let max = 0
        const n = status === 'OK' ? 50 + i * 7 : 3
        for (let k = 0; k < n; k++) {
          const v = Math.floor(20 + rand() ** 4 * 30_000)
          h.record(v)
          ih.record(v + Math.floor(rand() * 1000))
          sum += v
          min = Math.min(min, v)
          max = Math.max(max, v)
        }
        rows.push({
          startMs: T0 + i * W,
          op,
          status,
          count: n,
          sumUs: sum,
          minUs: min,
          maxUs: max,
          hist: h.entries(),
          intendedHist: ih.entries(),
          cacheHits: op === 'READ' ? Math.floor(n / 3) : 0,
          cacheMisses: op === 'READ' ? n - Math.floor(n / 3) : 0,
        })
      }
    }
  }
  return rows
}

function utc(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', '000')
}

/** A fake read model over rowsOf(10); the test moves the watermark and ends the run. */
function fakeRun() {
  const rows = rowsOf(10)
  const total = rows.reduce((a, r) => a + r.count, 0)
  const state = { watermarkMs: T0 + 8500, endedAt: null as string | null, reads: 0, alerts: [] as Alert[] }
  const run = (): RunInfo => ({
    run_id: 'r1',
    started_at: utc(T0 + 200),
    ended_at: state.endedAt,
    clients: 1,
    clients_ended: state.endedAt === null ? 0 : 1,
    threads: 4,
    target: 1000,
    labels: { v: '1' },
    workload: 'workloada',
    binding: 'memory',
    sent: state.endedAt === null ? {} : { 'READ/OK': total },
    undelivered: 0,
    runtime_ms: 0,
    window_ms: W,
    group_id: '',
    repeat: 0,
    properties: {},
    schedule_lag_max_ms: 0,
    behind_schedule_episodes: 0,
    expected_clients: 0,
    start_skew_ms: null,
    clock_offset_max_ms: null,
  })
  const inRange = (from: number, to: number) => rows.filter((r) => r.startMs >= from && r.startMs < to)
  const rm = {
    alerts: async () => (state.reads++, { alerts: state.alerts, nextCursor: null }),
    listRuns: async () => [{ ...run(), operations: total }],
    getRun: async (id: string) => (state.reads++, id === 'r1' ? run() : undefined),
    runCounts: async () => (state.reads++, { byOpStatus: {}, total, clientsEnded: run().clients_ended }),
    liveProgress: async (): Promise<RunProgress> => (
      state.reads++,
      {
        windowMs: W,
        firstWindowMs: T0,
        lastWindowMs: T0 + 9 * W,
        partitionMaxEndUs: [state.watermarkMs * 1000, (state.watermarkMs + 300) * 1000],
        lastDataMs: state.watermarkMs + 300,
      }
    ),
    liveWindows: async (_id: string, from: number, to: number) => (state.reads++, inRange(from, to)),
    clientWindows: async (_id: string, from: number, to: number) => (
      state.reads++,
      inRange(from, to).map((r) => ({ startMs: r.startMs, clientId: 'c1', count: r.count }))
    ),
    serverCacheWindows: async (_id: string, from: number, to: number) => (
      state.reads++,
      inRange(from, to)
        .filter((r) => r.op === 'READ')
        .map((r) => ({ startMs: r.startMs, source: 'memory', hits: r.cacheHits, misses: r.cacheMisses }))
    ),
  } as unknown as ReadModel
  return { rm, rows, total, state }
}

const adHoc: AdHocQueries = NO_AD_HOC

async function serve(rm: ReadModel, env: Record<string, string> = {}) {
  const app = build(readApiConfig({ API_PORT: '0', API_LIVE_INTERVAL_MS: '100', ...env }), {
    readModel: rm,
    adHoc,
    database: 'benchstream',
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` }
}

/** A minimal EventSource: events as they arrive, and a way to wait for the next of a kind. */
class Events {
  readonly list: Array<{ event: string; data: unknown }> = []
  readonly comments: string[] = []
  private readonly abort = new AbortController()
  status = 0
  headers: Headers | undefined

  static async open(url: string): Promise<Events> {
    const e = new Events()
    const res = await fetch(url, { signal: e.abort.signal })
    e.status = res.status
    e.headers = res.headers
    if (res.ok) void e.pump(res.body!)
    else e.list.push({ event: 'refused', data: await res.json() })
    return e
  }

  private async pump(body: ReadableStream<Uint8Array>): Promise<void> {
    const reader = body.getReader()
    const dec = new TextDecoder()
    let buf = ''
    for (;;) {
      const r = await reader.read().catch(() => ({ done: true as const, value: undefined }))
      if (r.done) return
      buf += dec.decode(r.value, { stream: true })
      for (let i = buf.indexOf('\n\n'); i >= 0; i = buf.indexOf('\n\n')) {
        const block = buf.slice(0, i)
        buf = buf.slice(i + 2)
        let event = 'message'
        let data: string | undefined
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) this.comments.push(line)
          else if (line.startsWith('event: ')) event = line.slice(7)
          else if (line.startsWith('data: ')) data = line.slice(6)
        }
        if (data !== undefined) this.list.push({ event, data: JSON.parse(data) })
      }
    }
  }

  async next<T>(event: string, after = 0, timeoutMs = 5000): Promise<{ data: T; index: number }> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const i = this.list.findIndex((e, k) => k >= after && e.event === event)
      if (i >= 0) return { data: this.list[i]!.data as T, index: i + 1 }
      if (Date.now() > deadline)
        throw new Error(`no ${event} event within ${timeoutMs} ms; got ${this.list.map((e) => e.event).join(', ')}`)
      await new Promise((r) => setTimeout(r, 20))
    }
  }

  close(): void {
    this.abort.abort()
  }
}

test(
  'only complete windows are sent; updates follow the watermark; ' + 'the last window once the run is final',
  async (t) => {
    const { rm, rows, total, state } = fakeRun()
    const { app, base } = await serve(rm)
    t.after(() => app.close())
    const s = await Events.open(`${base}/api/v1/runs/r1/live`)
    t.after(() => s.close())
    assert.equal(s.status, 200)
    assert.match(s.headers!.get('content-type') ?? '', /^text\/event-stream/)
    const runs = await s.next<{ runs: Array<{ run_id: string; origin: string }> }>('runs')
    // A run with windows; summary runs (imported YCSB reports) are marked `reported` for the picker.
    assert.deepEqual(
      runs.data.runs.map((r) => [r.run_id, r.origin]),
      [['r1', 'events']],
    )

    // Watermark T0+8.5 s, lateness 2 s: windows starting before T0+6 s are complete (their end + 2 s <= 8.5 s).
    const snap = await s.next<LiveSnapshot>('snapshot')
    assert.deepEqual(
      snap.data.windows.map((w) => (w.t - T0) / W),
      [0, 1, 2, 3, 4, 5],
    )
    assert.deepEqual(snap.data.frontier, { completeBeforeMs: T0 + 6 * W, newestWindowMs: T0 + 9 * W, final: false })
    assert.equal(snap.data.windowMs, W)
    assert.equal(snap.data.startMs, T0 + 200)
    const stall = snap.data.windows[4]!
    assert.deepEqual(
      [stall.ops, stall.statuses, stall.clients],
      [{}, {}, {}],
      'a window without calls is sent as a stall, not left out',
    )
    const w3 = snap.data.windows[3]!
    assert.equal(
      w3.ops.UPDATE!.operations,
      rows.filter((r) => r.startMs === T0 + 3 * W && r.op === 'UPDATE').reduce((a, r) => a + r.count, 0),
    )
    assert.equal(w3.statuses.ERROR, 3)
    assert.equal(
      w3.clients.c1,
      rows.filter((r) => r.startMs === T0 + 3 * W).reduce((a, r) => a + r.count, 0),
    )
    assert.ok(w3.serverCacheHit.memory! > 0 && w3.serverCacheHit.memory! < 1)

    // The watermark moves to T0+10.5 s: windows 6 and 7 (8 ends at 9 s, + 2 s > 10.5 s).
    state.watermarkMs = T0 + 10_500
    const up = await s.next<LiveUpdate>('update', snap.index)
    assert.deepEqual(
      up.data.windows.map((w) => (w.t - T0) / W),
      [6, 7],
    )
    assert.equal(up.data.frontier.completeBeforeMs, T0 + 8 * W)

    // Ended (longer ago than the grace), and everything it sent is counted: the rest, the last window included.
    state.endedAt = utc(Date.now() - 10_000)
    const last = await s.next<LiveUpdate>('update', up.index)
    assert.deepEqual(
      last.data.windows.map((w) => (w.t - T0) / W),
      [8, 9],
    )
    assert.equal(last.data.frontier.final, true)
    assert.equal(last.data.summary.operations, total)

    // The totals are the report's, from the same rows by the same rule.
    const report = buildReport(
      rows.map((r) => ({
        op: r.op,
        status: r.status,
        count: r.count,
        sumUs: r.sumUs,
        minUs: r.minUs,
        maxUs: r.maxUs,
        hist: r.hist,
      })),
      10_000,
    )
    for (const op of ['READ', 'UPDATE']) {
      const m = report.measurements.find((x) => x.name === op)!
      const o = last.data.summary.byOp[op]!
      assert.deepEqual(
        [o.operations, o.p50, o.p95, o.p99, o.p999, o.maxUs, o.minUs],
        [m.operations, m.p50LatencyUs, m.p95LatencyUs, m.p99LatencyUs, m.p999LatencyUs, m.maxLatencyUs, m.minLatencyUs],
        op,
      )
      assert.equal(o.failed, report.measurements.find((x) => x.name === `${op}-FAILED`)?.operations ?? 0)
    }

    // A final run is read no more.
    const reads = state.reads
    await new Promise((r) => setTimeout(r, 400))
    assert.equal(state.reads, reads)
  },
)

function alertOf(state: Alert['state']): Alert {
  return {
    fingerprint: '0123456789abcdef',
    rule: 'BenchstreamThroughputDrop',
    ruleType: 'drop_vs_baseline',
    severity: 'warning',
    runId: 'r1',
    op: 'READ',
    state,
    startsAt: new Date(T0 + 4 * W).toISOString(),
    endsAt: state === 'resolved' ? new Date(T0 + 6 * W).toISOString() : null,
    value: 0,
    threshold: 700,
    summary: 'READ throughput of run r1 dropped to 0 ops/s',
    description: '',
    resolvedSummary: state === 'resolved' ? 'READ throughput of run r1 recovered' : null,
    silencedBy: null,
  }
}

test(
  'alerts ride the same stream: in the snapshot, then an alerts event whenever they change, also after the run is ' +
    'final while one fires',
  async (t) => {
    const { rm, state } = fakeRun()
    state.alerts = [alertOf('firing')]
    const { app, base } = await serve(rm)
    t.after(() => app.close())
    const s = await Events.open(`${base}/api/v1/runs/r1/live`)
    t.after(() => s.close())
    const snap = await s.next<LiveSnapshot>('snapshot')
    assert.deepEqual(snap.data.alerts, [alertOf('firing')])
    // The run ends and is final while the alert still fires: the feed goes on reading the alerts.
    state.endedAt = utc(Date.now() - 10_000)
    const last = await s.next<LiveUpdate>('update', snap.index)
    assert.equal(last.data.frontier.final, true)
    state.alerts = [alertOf('resolved')]
    const resolved = await s.next<LiveAlerts>('alerts', last.index)
    assert.deepEqual(resolved.data.alerts, [alertOf('resolved')])
    // Nothing fires any more: reading stops.
    await new Promise((r) => setTimeout(r, 300))
    const reads = state.reads
    await new Promise((r) => setTimeout(r, 400))
    assert.equal(state.reads, reads)
    assert.equal(s.list.filter((e) => e.event === 'alerts').length, 1, 'one event per change')
  },
)

test(
  'streams are bounded: one more is 503 BS_ERR_LIVE_LIMIT; a closed ' + 'one frees its place; no listener, no reads',
  async (t) => {
    const { rm, state } = fakeRun()
    const { app, base } = await serve(rm, { API_LIVE_MAX_STREAMS: '2' })
    t.after(() => app.close())
    // An unknown run is a 404 before any stream opens, and it takes no place.
    const e = await Events.open(`${base}/api/v1/runs/nope/live`)
    assert.equal(e.status, 404)
    assert.equal((e.list[0]!.data as { code: string }).code, 'BS_ERR_NOT_FOUND')
    const a = await Events.open(`${base}/api/v1/live`)
    const b = await Events.open(`${base}/api/v1/runs/r1/live`)
    t.after(() => a.close())
    t.after(() => b.close())
    await b.next('snapshot')
    const c = await Events.open(`${base}/api/v1/runs/r1/live`)
    assert.equal(c.status, 503)
    assert.equal(c.headers!.get('retry-after'), '10')
    const refused = c.list[0]!.data as { statusCode: number; code: string; message: string }
    assert.equal(refused.code, 'BS_ERR_LIVE_LIMIT')
    assert.match(refused.message, /2 live views are open.*API_LIVE_MAX_STREAMS/)
    const health = async () =>
      (await app.inject({ method: 'GET', url: '/healthz' })).json<{
        live: { streamsOpen: number; streamsRefused: number; feeds: number }
      }>().live
    assert.deepEqual(await health(), { streamsOpen: 2, streamsRefused: 1, streamsCutSlow: 0, feeds: 1 })

    // The page went away: its place is free, and the run's feed stops reading.
    b.close()
    for (let i = 0; i < 100 && (await health()).streamsOpen !== 1; i++) await new Promise((r) => setTimeout(r, 20))
    assert.deepEqual(await health(), { streamsOpen: 1, streamsRefused: 1, streamsCutSlow: 0, feeds: 0 })
    const reads = state.reads
    await new Promise((r) => setTimeout(r, 500))
    assert.equal(state.reads, reads, 'no page watches the run: its feed reads nothing')
    const d = await Events.open(`${base}/api/v1/runs/r1/live`)
    t.after(() => d.close())
    assert.equal(d.status, 200)
    await d.next('snapshot')

    // Closing the server ends the open streams instead of waiting for them.
    await app.close()
  },
)

test('the page, its script and uPlot are served from this machine', async () => {
  const { rm } = fakeRun()
  const app = build(readApiConfig({ API_PORT: '0' }), { readModel: rm, adHoc, database: 'benchstream' })
  const page = await app.inject({ method: 'GET', url: '/' })
  assert.equal(page.statusCode, 200)
  assert.match(page.headers['content-type'] as string, /^text\/html/)
  assert.match(page.headers['content-security-policy'] as string, /default-src 'self'/)
  for (const src of [
    '/live/uPlot.iife.min.js',
    '/live/live-view/main.js',
    '/live/uPlot.min.css',
    '/live/live-view.css',
  ]) {
    assert.ok(page.body.includes(`"${src}"`), `the page loads ${src}`)
    const r = await app.inject({ method: 'GET', url: src })
    assert.equal(r.statusCode, 200, src)
    assert.match(r.headers['content-type'] as string, src.endsWith('.js') ? /^text\/javascript/ : /^text\/css/)
  }
  assert.match(page.body, /<script type="module" src="\/live\/live-view\/main.js">/, 'the script is an ES module')
  assert.match((await app.inject({ method: 'GET', url: '/live/uPlot.iife.min.js' })).body, /uPlot/)
  assert.doesNotMatch(page.body, /https?:\/\//, 'nothing from outside')
  const modules = await servedModules(app, '/live/live-view/main.js')
  for (const m of ['main', 'stream', 'stream-state', 'figures', 'charts', 'chart-series', 'alert-spans', 'render'])
    assert.ok(modules.has(`/live/live-view/${m}.js`), `${m}.js is loaded: ${[...modules].join(', ')}`)
  assert.ok(modules.has('/live/common/format.js'))
  const bad = await app.inject({ method: 'GET', url: '/api/v1/runs/r1/live?baseline=a%20b' })
  assert.equal(bad.statusCode, 400)
  await app.close()
})

test('windows: percentiles of OK calls per window from its merged histogram; totals as the report', () => {
  const rows = rowsOf(6)
  const ws = assembleWindows(T0, T0 + 6 * W, W, rows, [], [])
  assert.equal(ws.length, 6)
  const ok = rows.find((r) => r.startMs === T0 + 3 * W && r.op === 'UPDATE' && r.status === 'OK')!
  const w = ws[3]!.ops.UPDATE!
  assert.equal(w.ok, ok.count)
  assert.equal(w.operations, ok.count + 3)
  const single = buildReport(
    [{ op: 'UPDATE', status: 'OK', count: ok.count, sumUs: ok.sumUs, minUs: ok.minUs, maxUs: ok.maxUs, hist: ok.hist }],
    1000,
  ).measurements[0]!
  assert.deepEqual(
    [w.p50, w.p95, w.p99, w.p999, w.max],
    [single.p50LatencyUs, single.p95LatencyUs, single.p99LatencyUs, single.p999LatencyUs, single.maxLatencyUs],
  )
  const totals = new LiveTotals()
  totals.add(rows.slice(0, 5), [])
  totals.add(rows.slice(5), [{ startMs: T0, source: 'redis', hits: 3, misses: 1 }])
  const s = totals.summary()
  assert.equal(
    s.operations,
    rows.reduce((a, r) => a + r.count, 0),
  )
  assert.equal(s.serverCacheHit.redis, 0.75)
  assert.equal(s.byStatus.ERROR, 6)
  const report = buildReport(
    rows.map((r) => ({
      op: r.op,
      status: r.status,
      count: r.count,
      sumUs: r.sumUs,
      minUs: r.minUs,
      maxUs: r.maxUs,
      hist: r.hist,
    })),
    6000,
  )
  assert.equal(s.byOp.READ!.p99, report.measurements.find((m) => m.name === 'READ')!.p99LatencyUs)
  assert.equal(s.byOp.READ!.averageUs, report.measurements.find((m) => m.name === 'READ')!.averageLatencyUs)
})

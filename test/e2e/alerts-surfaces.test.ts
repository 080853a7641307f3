/**
 * Alerts where people look, on real components: driver (memory binding,
 * -target) -> Kafka -> processor -> ClickHouse -> alert evaluator -> the
 * alerts table, the alerts topic and the webhook; and from there the live
 * view (headless Chromium), GET /api/v1/alerts, the run's report (JSON, and
 * the YCSB-layout text of `benchstream report`), `benchstream alerts
 * --follow` in its own process, and a silence made with `benchstream alerts
 * silence` before the run.
 *
 * The datastore stalls in the middle of the run (200 ms per operation, 10
 * threads: at most 50 ops/s against a target of 1000, a 95% drop, far beyond
 * what a busy machine does), so both rules fire: BelowTarget (whole run,
 * under 20% of the target) and ThroughputDrop (per operation, 80% under its
 * baseline), the latter silenced for this run. Where an
 * incident starts is checked in event time (the windows), and on the page
 * against the page's own throughput curve: the marker starts at the first
 * window the curve shows below the rule's threshold.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import type { Page } from 'playwright-core'
import type { Alert, AlertsPage, Silence } from '../../schemas/alerts-api.v1.js'
import type { RunReport } from '../../schemas/run-reports-api.v1.js'
import { createKafka } from '../../services/adapters/kafka/client.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { runDriver } from '../../services/driver/app.js'
import { startServer } from '../../services/server/main.js'
import { collectPageErrors, openBrowser } from '../helpers/chromium.js'
import { cli } from '../helpers/cli.js'
import { testEnv, waitFor } from '../helpers/env.js'
import { STALL_MS, StalledBinding } from '../helpers/stalled-binding.js'
import { loadClient, openClientSink } from '../helpers/driven-run.js'
import { startWebhookReceiver } from '../helpers/webhook-receiver.js'

const BIN = path.join(repoRoot(), 'bin', 'benchstream.js')
const TARGET = 1000
const W = 1000
/**
 * BelowTarget fires below this share of the target, ThroughputDrop 80% under its baseline: the stall's 95% drop is far
 * past both, a busy machine's dips are not (two windows in a row, after a warm-up window).
 */
const FRACTION = 0.2
const DROP_PERCENT = 80
/** When the datastore stalls and recovers, seconds after the run starts (after the warm-up and baseline windows). */
const STALL_FROM_S = 4.5
const STALL_TO_S = 8
const RUN_S = 12

// Globals of the page, for the functions that run inside it; the project's tsconfig has no DOM library.
declare const document: {
  querySelectorAll(selector: string): Iterable<{ dataset: Record<string, string | undefined> }>
  querySelector(selector: string): { getBoundingClientRect(): { left: number; top: number } } | null
}
declare const window: unknown

interface Mark {
  fingerprint: string
  rule: string
  op: string
  startsAt: string
  endsAt: string | null
  summary: string
  left: number
  right: number
}
interface ChartView {
  marks: Mark[]
  /** valToPos of each mark's start and end, computed in the page. */
  expected: Array<{ left: number; right: number | null }>
  x: number[]
  total: Array<number | null>
  over: { left: number; top: number; width: number; height: number }
  /** Per mark: whether the canvas is tinted at the top of its span (5 samples), and at a point left of every span. */
  tinted: boolean[][]
  plain: boolean
}

/** A chart's alert spans as the page drew them, with what they should be and the canvas under them. */
async function chartView(page: Page, key: string): Promise<ChartView> {
  return page.evaluate((k) => {
    interface U {
      alertMarks: Mark[]
      data: Array<Array<number | null>>
      bbox: { left: number; top: number; width: number; height: number }
      ctx: { getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray } }
      over: { getBoundingClientRect(): { left: number; top: number; width: number; height: number } }
      valToPos(v: number, scale: string, canvas?: boolean): number
    }
    const u = (window as { benchstreamLive: { charts: Record<string, { u: U }> } }).benchstreamLive.charts[k]!.u
    const dpr = (window as { devicePixelRatio?: number }).devicePixelRatio ?? 1
    const tintedAt = (cssX: number): boolean => {
      const p = u.ctx.getImageData(Math.round(u.bbox.left + cssX * dpr), Math.round(u.bbox.top + 4 * dpr), 1, 1).data
      return Math.max(p[0]!, p[2]!) - p[1]! > 12
    }
    const marks = u.alertMarks
    const firstLeft = Math.min(...marks.map((m) => m.left))
    const r = u.over.getBoundingClientRect()
    return {
      marks,
      expected: marks.map((m) => ({
        left: u.valToPos(Date.parse(m.startsAt) / 1000, 'x'),
        right: m.endsAt === null ? null : u.valToPos(Date.parse(m.endsAt) / 1000, 'x'),
      })),
      x: [...(u.data[0] as number[])],
      total: [...u.data[1]!],
      over: { left: r.left, top: r.top, width: r.width, height: r.height },
      tinted: marks.map((m) => [0.1, 0.3, 0.5, 0.7, 0.9].map((f) => tintedAt(m.left + f * (m.right - m.left)))),
      plain: !tintedAt(firstLeft / 2),
    }
  }, key)
}

test(
  'an alert fired in a run reaches the live view, the API, alerts --follow and the report; ' +
    'a silence holds its webhook back and keeps its row',
  { timeout: 180_000 },
  async (t) => {
    const receiver = await startWebhookReceiver(t, '/alerts')
    const hooks = receiver.payloads

    const te = testEnv()
    t.after(te.cleanup)
    const rulesFile = path.join(te.dataDir, 'rules.json')
    writeFileSync(
      rulesFile,
      JSON.stringify({
        version: 1,
        rules: [
          {
            type: 'drop_vs_baseline',
            name: 'ThroughputDrop',
            severity: 'warning',
            percent: DROP_PERCENT,
            baselineWindows: 2,
            warmupWindows: 1,
            minBaselineOpsPerSec: 10,
            windows: 2,
            resolveWindows: 2,
          },
          {
            type: 'below_target',
            name: 'BelowTarget',
            severity: 'critical',
            fraction: FRACTION,
            warmupWindows: 1,
            windows: 2,
            resolveWindows: 2,
          },
        ],
      }),
    )
    const env = {
      ...te.env,
      ALERTS_RULES_FILE: rulesFile,
      ALERTS_WEBHOOK_URL: receiver.url,
      ALERTS_INTERVAL_MS: '500',
      API_LIVE_INTERVAL_MS: '500',
      WINDOW_END_GRACE_MS: '3000',
      METRICS_PORT: '0',
    }
    const svc = await startServer(env, { api: true })
    t.after(() => svc.stop())
    const runId = `surfaces-${Date.now()}`

    // A silence of ThroughputDrop for this run, made before it starts, through the server's API.
    const made = await cli(env, [
      'alerts',
      'silence',
      '--rule',
      'ThroughputDrop',
      '--run',
      runId,
      '--comment',
      'the stall is on purpose',
      '--json',
    ])
    assert.equal(made.code, 0, made.stderr)
    const silence = JSON.parse(made.stdout) as Silence
    assert.deepEqual(
      [silence.status.state, silence.endsAt, silence.comment, silence.matchers],
      [
        'active',
        null,
        'the stall is on purpose',
        [
          { name: 'alertname', value: 'ThroughputDrop', isEqual: true },
          { name: 'run_id', value: runId, isEqual: true },
        ],
      ],
    )

    // `benchstream alerts --follow --run R` in its own process, from before the run to the end.
    const follow = spawn(process.execPath, [BIN, 'alerts', '--follow', '--run', runId], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: repoRoot(),
    })
    let followOut = ''
    let followErr = ''
    follow.stdout.on('data', (d: Buffer) => (followOut += d.toString()))
    follow.stderr.on('data', (d: Buffer) => (followErr += d.toString()))
    const followExit = new Promise<number | null>((r) => follow.on('close', r))
    t.after(async () => {
      follow.kill('SIGTERM')
      await followExit
    })
    await waitFor(
      'alerts --follow on the topic',
      async () => (followErr.includes('following alert transitions') ? true : undefined),
      60_000,
    )

    // The page, open before the run exists: it follows the newest run by itself.
    const browser = await openBrowser(t)
    const page = await browser.newPage()
    const pageErrors = collectPageErrors(page)
    await page.goto(`${svc.apiUrl}/`)
    await page.waitForSelector('#state[data-state="waiting"]')

    // The run: steady, then the datastore stalls from STALL_FROM_S to STALL_TO_S, then recovers.
    const infra = readInfraConfig(env)
    const { cfg, workload, binding } = await loadClient(
      env,
      [
        ...'-P workloads/workloada -p recordcount=1000 -p operationcount=100000000'.split(' '),
        '-p',
        `maxexecutiontime=${RUN_S}`,
        ...`-threads 10 -target ${TARGET} -db memory --run-id ${runId} --client-id c1`.split(' '),
      ],
      (b) => new StalledBinding(b),
    )
    const sink = await openClientSink(createKafka(infra.kafka, 'e2e-surfaces'), env, cfg)
    const stall = { fromMs: 0, toMs: 0 }
    const timers = [
      setTimeout(() => {
        stall.fromMs = Date.now()
        binding.delayMs = STALL_MS
      }, STALL_FROM_S * 1000),
      setTimeout(() => {
        stall.toMs = Date.now()
        binding.delayMs = 0
      }, STALL_TO_S * 1000),
    ]
    try {
      const outcome = await runDriver(cfg, { workload, binding, sink, status: () => undefined })
      assert.equal(outcome.delivery.undelivered, 0, 'every operation was delivered: the drop is real')
    } finally {
      for (const x of timers) clearTimeout(x)
      await sink.close()
    }
    assert.ok(stall.fromMs > 0 && stall.toMs > stall.fromMs)

    // GET /api/v1/alerts: both rules fired and every incident resolved (by recovery or by the run's end).
    const get = async <T>(url: string): Promise<T> => {
      const res = await svc.api!.inject({ method: 'GET', url })
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`)
      return res.json<T>()
    }
    const alerts = await waitFor(
      'both rules fired and resolved',
      async () => {
        const p = await get<AlertsPage>(`/api/v1/alerts?run=${runId}`)
        const rules = new Set(p.alerts.map((a) => a.rule))
        return rules.has('BelowTarget') && rules.has('ThroughputDrop') && p.alerts.every((a) => a.state === 'resolved')
          ? p.alerts
          : undefined
      },
      60_000,
    )
    const below = alerts.find((a) => a.rule === 'BelowTarget')!
    const drops = alerts.filter((a) => a.rule === 'ThroughputDrop')
    assert.equal(alerts.filter((a) => a.rule === 'BelowTarget').length, 1)
    assert.equal(below.op, 'ALL')
    assert.equal(below.silencedBy, null)
    for (const d of drops) {
      assert.ok(['READ', 'UPDATE'].includes(d.op), d.op)
      assert.equal(d.silencedBy, silence.id, 'the silence named on the incident')
    }
    // Event time: the incidents start at the stall, in the window it began or the next (a window the stall only
    // reached late may stay above the bar), and end after it.
    for (const a of alerts) {
      const start = Date.parse(a.startsAt)
      assert.ok(
        start >= Math.floor(stall.fromMs / W) * W && start <= Math.floor(stall.fromMs / W) * W + W,
        `${a.rule} ${a.op} starts at ${a.startsAt}, the stall at ${new Date(stall.fromMs).toISOString()}`,
      )
      assert.ok(Date.parse(a.endsAt!) > start)
    }
    assert.ok(below.value < FRACTION * TARGET && below.threshold === FRACTION * TARGET)
    t.diagnostic(
      `stall ${new Date(stall.fromMs).toISOString()} .. ${new Date(stall.toMs).toISOString()}; ` +
        alerts.map((a) => `${a.rule}(${a.op}) ${a.startsAt} .. ${a.endsAt}`).join('; '),
    )

    // Filters, paging, the one error shape.
    const fps = (list: Alert[]): string[] => list.map((a) => a.fingerprint).sort()
    assert.deepEqual((await get<AlertsPage>(`/api/v1/alerts?run=${runId}&state=firing`)).alerts, [])
    assert.deepEqual(fps((await get<AlertsPage>(`/api/v1/alerts?run=${runId}&state=resolved`)).alerts), fps(alerts))
    assert.deepEqual(fps((await get<AlertsPage>(`/api/v1/alerts?run=${runId}&rule=BelowTarget`)).alerts), [
      below.fingerprint,
    ])
    const lastEnd = Math.max(...alerts.map((a) => Date.parse(a.endsAt!)))
    assert.deepEqual((await get<AlertsPage>(`/api/v1/alerts?run=${runId}&since=${lastEnd + 1}`)).alerts, [])
    assert.deepEqual(
      fps((await get<AlertsPage>(`/api/v1/alerts?run=${runId}&since=${lastEnd}`)).alerts).length >= 1,
      true,
    )
    const paged: Alert[] = []
    let cursor = ''
    for (let i = 0; i <= alerts.length; i++) {
      const p = await get<AlertsPage>(`/api/v1/alerts?run=${runId}&limit=1${cursor === '' ? '' : `&cursor=${cursor}`}`)
      paged.push(...p.alerts)
      if (p.nextCursor === null) break
      cursor = p.nextCursor
    }
    assert.deepEqual(paged, alerts, 'pages of one give the whole list, in order')
    const bad = await svc.api!.inject({ method: 'GET', url: `/api/v1/alerts?run=${runId}&state=open` })
    assert.equal(bad.statusCode, 400)
    assert.equal(bad.json<{ code: string }>().code, 'BS_ERR_BAD_REQUEST')

    // The run's report lists them.
    const report = await get<RunReport>(`/api/v1/runs/${runId}/report`)
    assert.deepEqual(report.alerts, alerts)

    // The webhook: BelowTarget fired and resolved; the silenced ThroughputDrop never reached it. Its rows are stored.
    const posted = hooks.flatMap((h) => h.alerts).filter((a) => a.labels.run_id === runId)
    assert.deepEqual(
      posted.map((a) => [a.labels.alertname, a.status]),
      [
        ['BelowTarget', 'firing'],
        ['BelowTarget', 'resolved'],
      ],
    )
    assert.ok(svc.alerts!.stats.notifications.webhook!.silenced >= 2 * drops.length)
    assert.equal(svc.alerts!.stats.notifications.webhook!.failed, 0)

    // benchstream alerts --follow printed every transition as the topic carried it, silenced ones marked.
    const transitions = await waitFor(
      'every transition printed by alerts --follow',
      async () => {
        const lines = followOut.split('\n').filter((l) => l !== '')
        return lines.length >= 2 * alerts.length ? lines : undefined
      },
      30_000,
    )
    assert.equal(transitions.length, 2 * alerts.length, followOut)
    for (const a of alerts) {
      const mine = transitions.filter((l) => l.includes(`\t${a.rule}\t`) && l.includes(`\t${a.op}\t`))
      assert.deepEqual(
        mine.map((l) => l.split('\t')[0]),
        ['firing', 'resolved'],
        `${a.rule} ${a.op}: firing, then resolved`,
      )
      assert.ok(mine[0]!.startsWith(`firing\t${a.startsAt}\t-\t${a.rule}\t`), mine[0])
      assert.ok(mine[1]!.startsWith(`resolved\t${a.startsAt}\t${a.endsAt}\t${a.rule}\t`), mine[1])
      for (const l of mine)
        assert.equal(l.endsWith(`\tsilenced by ${silence.id}`), a.silencedBy !== null, `${l}: silenced mark`)
    }

    // `benchstream report` (YCSB layout) ends with the alerts, one [ALERT] line each, oldest first.
    const text = await cli(env, ['report', runId])
    assert.equal(text.code, 0, text.stderr)
    const tail = text.stdout.trimEnd().split('\n').slice(-alerts.length)
    const oldestFirst = [...alerts].sort((a, b) => a.startsAt.localeCompare(b.startsAt) || a.rule.localeCompare(b.rule))
    assert.deepEqual(
      tail.map((l) => l.split(', ')[0]),
      alerts.map(() => '[ALERT]'),
      text.stdout,
    )
    oldestFirst.forEach((a, i) => {
      assert.ok(
        tail[i]!.startsWith(`[ALERT], ${a.rule}(${a.op}) ${a.severity} resolved ${a.startsAt}..${a.endsAt}`),
        tail[i],
      )
      assert.equal(tail[i]!.includes(`silenced by ${silence.id}`), a.silencedBy !== null)
    })

    // The live view: the list above the charts and a span per incident on the throughput chart, at the drop.
    await page.waitForSelector(`#alerts[data-count="${alerts.length}"][data-firing="0"]`, { timeout: 60_000 })
    await page.waitForSelector('#charts[data-final="true"]', { timeout: 60_000 })
    const listed = await page.evaluate(() =>
      [...document.querySelectorAll('#alerts-list li')].map((li) => ({ ...li.dataset })),
    )
    assert.deepEqual(
      listed.map((l) => [l.fingerprint, l.state, l.rule, l.op, l.startsAt, l.endsAt, l.silenced]),
      alerts.map((a) => [a.fingerprint, 'resolved', a.rule, a.op, a.startsAt, a.endsAt, String(a.silencedBy !== null)]),
    )
    const thr = await waitFor(
      'every alert drawn on the throughput chart',
      async () => {
        const v = await chartView(page, 'throughput')
        return v.marks.length === alerts.length && v.marks.every((m) => m.endsAt !== null) ? v : undefined
      },
      30_000,
    )
    for (const [i, m] of thr.marks.entries()) {
      const a = alerts.find((x) => x.fingerprint === m.fingerprint) ?? assert.fail(`no alert ${m.fingerprint}`)
      assert.deepEqual([m.startsAt, m.endsAt, m.rule, m.summary], [a.startsAt, a.endsAt, a.rule, a.summary])
      assert.ok(Math.abs(m.left - thr.expected[i]!.left) < 0.5, 'the span starts at the incident start')
      assert.ok(Math.abs(m.right - thr.expected[i]!.right!) < 0.5, 'and ends at its end')
      assert.ok(
        thr.tinted[i]!.filter(Boolean).length >= 3,
        `the span is shaded on the canvas: ${JSON.stringify(thr.tinted[i])}`,
      )
    }
    assert.ok(thr.plain, 'before the first span the canvas is not shaded')
    // BelowTarget's span starts at the first window of the page's own curve below the bar, and the window before
    // is above it.
    const perS = 1000 / W
    const at = (ms: number): number => {
      const i = thr.x.indexOf(ms / 1000)
      assert.ok(i >= 0, `the page has the window at ${new Date(ms).toISOString()}`)
      return thr.total[i]! * perS
    }
    const startMs = Date.parse(below.startsAt)
    assert.ok(at(startMs) < FRACTION * TARGET, `the curve is below the bar where the span starts: ${at(startMs)}`)
    assert.ok(at(startMs - W) >= FRACTION * TARGET, `and above it the window before: ${at(startMs - W)}`)

    // READ's latency chart: the run-wide alert and READ's own, not UPDATE's.
    const read = await chartView(page, 'latency:READ')
    assert.deepEqual(
      read.marks.map((m) => m.fingerprint).sort(),
      alerts
        .filter((a) => a.op === 'ALL' || a.op === 'READ')
        .map((a) => a.fingerprint)
        .sort(),
    )

    // Hovering a span shows its rule and summary, and those of every other span under the cursor.
    const target = thr.marks.find((m) => m.rule === 'BelowTarget')!
    const hx = (target.left + target.right) / 2
    await page.mouse.move(thr.over.left + hx, thr.over.top + thr.over.height / 2)
    const tip = await page.waitForSelector('#chart-throughput .alert-tip:not([hidden])', { timeout: 10_000 })
    const tipText = (await tip.textContent()) ?? ''
    const under = thr.marks.filter((m) => hx >= m.left - 3 && hx <= m.right + 3)
    assert.deepEqual(
      ((await tip.getAttribute('data-fingerprints')) ?? '').split(' ').sort(),
      under.map((m) => m.fingerprint).sort(),
    )
    for (const m of under) assert.ok(tipText.includes(m.rule) && tipText.includes(m.summary), tipText)

    // Kept as the test's artefact, beside the live view test's: test-results/live-view/ (or LIVE_VIEW_SCREENSHOT_DIR).
    const shots = mkdtempSync(path.join(os.tmpdir(), 'benchstream-alerts-view-'))
    await page.screenshot({ path: path.join(shots, 'live-view-alerts.png'), fullPage: true })
    const keep = process.env.LIVE_VIEW_SCREENSHOT_DIR || path.join(repoRoot(), 'test-results', 'live-view')
    mkdirSync(keep, { recursive: true })
    copyFileSync(path.join(shots, 'live-view-alerts.png'), path.join(keep, 'live-view-alerts.png'))
    assert.deepEqual(pageErrors, [], 'the page logged no errors')
  },
)

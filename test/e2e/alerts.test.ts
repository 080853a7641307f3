/**
 * Alerts end to end on real components: driver (-target, memory binding)
 * -> Kafka -> processor -> ClickHouse -> alerts service -> webhook, alerts
 * topic and `alerts` table.
 *
 * The datastore nearly stalls in the middle of the first run: a wrapper
 * binding adds 200 ms to every operation, so the workers cannot keep the
 * -target schedule and throughput falls by 95% (10 threads, 200 ms per
 * operation -> at most 50 ops/s against a target of 1000), far beyond what a
 * busy machine does to a run. Nothing is dropped; the workers are simply
 * slower. Where the incident starts and ends is read in event time (the
 * windows), not from when the webhook arrived. A second, steady run must raise
 * no alert at all. A second engine on the same table then replays both runs,
 * as a restarted service would, and must notify nothing. How the rules behave
 * on noise is proved on seeded series in test/unit/alert-false-positives.test.ts.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { Value } from 'typebox/value'
import { AlertNotice } from '../../schemas/alert-rules.v1.js'
import { queryRows } from '../../services/adapters/clickhouse/client.js'
import { ClickHouseAlertSource, ClickHouseAlertStore } from '../../services/adapters/clickhouse/alerts.js'
import { createKafka } from '../../services/adapters/kafka/client.js'
import { build } from '../../services/alerts/app.js'
import type { AlertNotifier } from '../../services/core/ports/alerts.js'
import { readAlertsConfig } from '../../services/alerts/config.js'
import type { AlertmanagerPayload } from '../../services/core/alerting/notices.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import type { AlertTransition } from '../../services/core/alerting/alert-window.js'
import { runDriver } from '../../services/driver/app.js'
import { startServer } from '../../services/server/main.js'
import { testEnv, waitFor } from '../helpers/env.js'
import { STALL_MS, StalledBinding } from '../helpers/stalled-binding.js'
import { loadClient, openClientSink } from '../helpers/driven-run.js'
import { startWebhookReceiver } from '../helpers/webhook-receiver.js'

const THREADS = 10
const TARGET = 1000
/** Per-operation latency while throttled: THREADS / 200 ms = 50 ops/s at most, 5% of the target. */
const THROTTLE_MS = STALL_MS
const W = 1000

test(
  'a throughput drop fires within 5 windows, resolves after recovery, and a steady run raises nothing',
  { timeout: 180_000 },
  async (t) => {
    const { url: webhookUrl, payloads: hooks } = await startWebhookReceiver(t, '/alerts')

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
            percent: 30,
            baselineWindows: 5,
            warmupWindows: 2,
            minBaselineOpsPerSec: 10,
            windows: 3,
            resolveWindows: 3,
          },
          {
            type: 'below_target',
            name: 'BelowTarget',
            severity: 'warning',
            fraction: 0.7,
            warmupWindows: 2,
            windows: 3,
            resolveWindows: 3,
          },
          { type: 'error_rate', name: 'Errors', severity: 'critical', threshold: 0.05, windows: 3 },
          { type: 'no_data', name: 'NoData', severity: 'critical', seconds: 15 },
        ],
      }),
    )
    const env = {
      ...te.env,
      ALERTS_ENABLED: 'true',
      ALERTS_RULES_FILE: rulesFile,
      ALERTS_WEBHOOK_URL: webhookUrl,
      ALERTS_INTERVAL_MS: '500',
      WINDOW_END_GRACE_MS: '3000',
      METRICS_PORT: '0',
    }
    const svc = await startServer(env, { api: true })
    t.after(() => svc.stop())
    assert.ok(svc.alerts !== undefined, 'ALERTS_ENABLED starts the evaluator')
    const engine = svc.alerts
    const infra = readInfraConfig(env)
    const kafka = createKafka(infra.kafka, 'e2e-alerts')

    const drive = async (
      runId: string,
      seconds: number,
      cacheSize: number,
      throttle?: { fromS: number; toS: number; marks: { startMs: number; endMs: number } },
    ): Promise<void> => {
      const { cfg, workload, binding } = await loadClient(
        env,
        [
          ...'-P workloads/workloada -p recordcount=1000 -p operationcount=100000000'.split(' '),
          ...`-p maxexecutiontime=${seconds} -p memory.cachesize=${cacheSize}`.split(' '),
          ...`-threads ${THREADS} -target ${TARGET} -db memory --run-id ${runId} --client-id c1`.split(' '),
        ],
        (b) => new StalledBinding(b),
      )
      const sink = await openClientSink(kafka, env, cfg)
      const timers: NodeJS.Timeout[] = []
      if (throttle !== undefined) {
        timers.push(
          setTimeout(() => {
            throttle.marks.startMs = Date.now()
            binding.delayMs = THROTTLE_MS
          }, throttle.fromS * 1000),
        )
        timers.push(
          setTimeout(() => {
            throttle.marks.endMs = Date.now()
            binding.delayMs = 0
          }, throttle.toS * 1000),
        )
      }
      try {
        const outcome = await runDriver(cfg, { workload, binding, sink, status: () => undefined })
        assert.equal(
          outcome.delivery.undelivered,
          0,
          'every measured operation was delivered: the drop is real, not lost events',
        )
      } finally {
        for (const x of timers) clearTimeout(x)
        await sink.close()
      }
    }

    // Run 1: steady (2 warm-up and 5 baseline windows), then the datastore stalls from 8 s to 12 s, then recovers
    // and runs 10 s more, so a resolution is seen well before the run's end.
    const stamp = Date.now()
    const slowRun = `alerts-slow-${stamp}`
    const marks = { startMs: 0, endMs: 0 }
    await drive(slowRun, 22, 301, { fromS: 8, toS: 12, marks })
    assert.ok(marks.startMs > 0 && marks.endMs > marks.startMs)

    const forRun = (runId: string, rule: string, status: string): AlertmanagerPayload | undefined =>
      hooks.find(
        (h) => h.status === status && h.alerts.some((a) => a.labels.run_id === runId && a.labels.alertname === rule),
      )
    const fired = await waitFor(
      'the ThroughputDrop firing webhook',
      async () => forRun(slowRun, 'ThroughputDrop', 'firing'),
      30_000,
    )
    const firedAlert = fired.alerts[0]!
    assert.equal(fired.version, '4')
    assert.equal(fired.receiver, 'benchstream')
    assert.equal(firedAlert.labels.run_id, slowRun)
    assert.ok(['READ', 'UPDATE'].includes(firedAlert.labels.op), `op label ${firedAlert.labels.op}`)
    assert.equal(firedAlert.labels.severity, 'warning')
    assert.equal(firedAlert.endsAt, '0001-01-01T00:00:00Z')
    const resolved = await waitFor(
      'the ThroughputDrop resolved webhook',
      async () => hooks.find((h) => h.status === 'resolved' && h.alerts[0]!.fingerprint === firedAlert.fingerprint),
      30_000,
    )
    assert.deepEqual(resolved.alerts[0]!.labels, firedAlert.labels)

    // The alerts table: firing and resolved of the same incident, both notified.
    const rows = await waitFor(
      'firing and resolved rows in the alerts table',
      async () => {
        const r = await queryRows<{
          state: string
          starts_ms: string
          ends_ms: string | null
          at_window_ms: string
          notified: number
          value: number
          threshold: number
          op: string
        }>(
          svc.ch,
          `
      SELECT state, toUnixTimestamp64Milli(starts_at) AS starts_ms, toUnixTimestamp64Milli(ends_at) AS ends_ms,
             toUnixTimestamp64Milli(at_window) AS at_window_ms,
             notified_at IS NOT NULL AS notified, value, threshold, op
      FROM benchstream.alerts WHERE fingerprint = {fp:String} ORDER BY state`,
          { fp: firedAlert.fingerprint },
        )
        return r.length === 2 ? r : undefined
      },
      15_000,
    )
    const [firingRow, resolvedRow] = rows as [(typeof rows)[number], (typeof rows)[number]]
    assert.deepEqual([firingRow.state, resolvedRow.state], ['firing', 'resolved'])
    assert.equal(firingRow.notified, 1)
    assert.equal(resolvedRow.notified, 1)
    // What throughput did (printed before the assertions, so a failure shows the run it judged).
    const perSec = await queryRows<{ t: string; n: string }>(
      svc.ch,
      `SELECT toUnixTimestamp64Milli(window_start) AS t, sum(count) AS n FROM benchstream.op_windows ` +
        `WHERE run_id = {r:String} GROUP BY t ORDER BY t`,
      { r: slowRun },
    )
    process.stdout.write(`# run 1 ops per window: ${perSec.map((r) => r.n).join(' ')}\n`)

    const startsAt = Number(firingRow.starts_ms)
    const detectedAt = Number(firingRow.at_window_ms) + W
    const endsAt = Number(resolvedRow.ends_ms)
    process.stdout.write(
      `# throttle ${new Date(marks.startMs).toISOString()} .. ${new Date(marks.endMs).toISOString()}; ` +
        `incident ${new Date(startsAt).toISOString()} .. ${new Date(endsAt).toISOString()}; ` +
        (`fired at the end of window ${new Date(detectedAt - W).toISOString()} ` +
          `(${((detectedAt - marks.startMs) / W).toFixed(2)} ` +
          `windows after the drop) with ${firingRow.value} ops/s vs threshold ${firingRow.threshold.toFixed(0)}\n`),
    )
    assert.ok(startsAt >= marks.startMs - W, 'the incident starts at the drop, not before')
    assert.ok(
      detectedAt - marks.startMs <= 5 * W,
      `fired ${detectedAt - marks.startMs} ms after the drop: more than 5 windows`,
    )
    assert.ok(firingRow.value < firingRow.threshold)
    // When it must resolve is computed from the run's own windows, as the rule reads them: the start of the first
    // of resolveWindows (3) consecutive windows of the alert's operation at or above the threshold, which is fixed
    // while the incident is open (no window enters the baseline then). The driver runs in this process beside the
    // server, so a loaded machine can starve it for a window after the recovery: a clean-clone CI run with one core
    // hogged saw windows of 4,527, 971 and then 540 operations, the 540 below the threshold, and the incident rightly
    // stayed open a window longer than "recovery + 2 windows" allowed. The product was right; the test had assumed
    // that the machine keeps the schedule in every window after the recovery.
    const opWindows = await queryRows<{ t: string; n: string }>(
      svc.ch,
      `SELECT toUnixTimestamp64Milli(window_start) AS t, sum(count) AS n FROM benchstream.op_windows ` +
        `WHERE run_id = {r:String} AND op = {op:String} GROUP BY t ORDER BY t`,
      { r: slowRun, op: firedAlert.labels.op },
    )
    const perOp = new Map(opWindows.map((r) => [Number(r.t), Number(r.n)]))
    const lastWindow = Number(opWindows[opWindows.length - 1]!.t)
    let expectedEnd: number | undefined
    for (let at = detectedAt, good = 0, since = 0; at <= lastWindow; at += W) {
      if ((perOp.get(at) ?? 0) / (W / 1000) < firingRow.threshold) good = 0
      else if (good++ === 0) since = at
      if (good === 3) {
        expectedEnd = since
        break
      }
    }
    process.stdout.write(
      `# ${firedAlert.labels.op} ops per window from the firing one: ` +
        `${opWindows
          .filter((r) => Number(r.t) >= detectedAt - W)
          .map((r) => r.n)
          .join(' ')} ` +
        `(threshold ${firingRow.threshold.toFixed(0)}/s); expected end ${expectedEnd ?? "the run's end"}\n`,
    )
    assert.ok(
      expectedEnd !== undefined,
      `no 3 windows in a row reached the threshold after the recovery at ${marks.endMs}: the run never recovered`,
    )
    assert.equal(endsAt, expectedEnd, `resolved at ${endsAt}: the first of 3 good windows after the drop began then`)
    assert.ok(
      endsAt >= marks.endMs - W && endsAt < lastWindow,
      `resolved at ${endsAt}, recovery at ${marks.endMs}, last window ${lastWindow}: it resolved on recovery, ` +
        `not at the run's end`,
    )
    assert.equal(Date.parse(firedAlert.startsAt), startsAt)
    assert.equal(Date.parse(resolved.alerts[0]!.endsAt), endsAt)

    // Run 2: steady all along. Judged to its end (finalized), it must have raised nothing.
    const steadyRun = `alerts-steady-${stamp}`
    await drive(steadyRun, 12, 302)
    await waitFor(
      'the steady run judged to its end',
      async () => (engine.runStatus(steadyRun)?.finalized === true ? true : undefined),
      30_000,
    )
    const steadyStatus = engine.runStatus(steadyRun)!
    const steadyFirst = await queryRows<{ first: string }>(
      svc.ch,
      `SELECT toUnixTimestamp64Milli(min(window_start)) AS first FROM benchstream.op_windows WHERE run_id = {r:String}`,
      { r: steadyRun },
    )
    assert.ok(
      steadyStatus.cursorMs! - Number(steadyFirst[0]!.first) >= 10 * W,
      'the steady run was judged over its whole length',
    )
    assert.deepEqual(
      hooks.filter((h) => h.alerts.some((a) => a.labels.run_id === steadyRun)),
      [],
      'no webhook for the steady run',
    )
    const steadyRows = await queryRows<{ n: string }>(
      svc.ch,
      `SELECT count() AS n FROM benchstream.alerts WHERE run_id = {r:String}`,
      { r: steadyRun },
    )
    assert.equal(Number(steadyRows[0]!.n), 0, 'no alert row for the steady run')
    await waitFor(
      'the slow run judged to its end',
      async () => (engine.runStatus(slowRun)?.finalized === true ? true : undefined),
      30_000,
    )
    assert.ok(engine.stats.notifications.webhook!.sent >= 2)
    assert.equal(engine.stats.notifications.webhook!.failed, 0)
    assert.equal(engine.stats.openIncidents, 0)

    // The alerts topic has the same two state changes.
    const consumer = kafka.consumer({ groupId: `${te.env.PROCESSOR_GROUP_ID}-alerts-reader` })
    await consumer.connect()
    await consumer.subscribe({ topic: infra.topics.alerts, fromBeginning: true })
    const notices: AlertNotice[] = []
    void consumer.run({
      eachMessage: async ({ message }) => void notices.push(JSON.parse(String(message.value)) as AlertNotice),
    })
    await waitFor(
      'firing and resolved notices on the alerts topic',
      async () => {
        const mine = notices.filter((n) => n.fingerprint === firedAlert.fingerprint)
        return mine.some((n) => n.state === 'firing') && mine.some((n) => n.state === 'resolved') ? true : undefined
      },
      30_000,
    )
    await consumer.disconnect()
    const fn = notices.find((n) => n.fingerprint === firedAlert.fingerprint && n.state === 'firing')!
    assert.ok(Value.Check(AlertNotice, fn), 'the notice matches its schema')
    assert.equal(fn.runId, slowRun)
    assert.equal(fn.rule, 'ThroughputDrop')
    assert.equal(fn.op, firedAlert.labels.op)
    assert.equal(notices.filter((n) => n.runId === steadyRun).length, 0, 'nothing on the topic for the steady run')
    // One notice per state change: no duplicates on the topic.
    const perFp = new Map<string, number>()
    for (const n of notices)
      perFp.set(`${n.fingerprint}/${n.state}`, (perFp.get(`${n.fingerprint}/${n.state}`) ?? 0) + 1)
    assert.deepEqual(
      [...perFp.values()].filter((c) => c > 1),
      [],
    )

    // A restarted evaluator (new engine, same table) replays both runs and notifies nothing.
    const replayed: AlertTransition[] = []
    const capture: AlertNotifier = {
      channel: 'capture',
      mutedBySilences: false,
      notify: async (x) => (replayed.push(x), { ok: true }),
    }
    const cfg = readAlertsConfig(env)
    const again = build(cfg, {
      source: new ClickHouseAlertSource(svc.ch),
      store: new ClickHouseAlertStore(svc.ch),
      notifiers: [capture],
    })
    await waitFor(
      'the replay of both runs',
      async () => {
        await again.tick()
        return again.runStatus(slowRun)?.finalized === true && again.runStatus(steadyRun)?.finalized === true
          ? true
          : undefined
      },
      30_000,
      10,
    )
    assert.deepEqual(
      replayed.map((x) => `${x.state} ${x.rule} ${x.op}`),
      [],
    )
    assert.ok(again.stats.suppressed >= 2, `suppressed ${again.stats.suppressed}`)
    assert.equal(again.stats.tickErrors, 0, again.stats.lastError)
  },
)

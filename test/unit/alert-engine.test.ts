/**
 * The alert engine over in-memory ports: complete windows only, gaps as
 * zeros, one notification per state change, no re-notification after a
 * restart (state reloaded from the store), and failures counted.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { AlertRule } from '../../schemas/alert-rules.v1.js'
import { AlertEngine } from '../../services/alerts/app.js'
import type {
  AlertNotifier,
  AlertRunInfo,
  AlertStore,
  AlertWindowSource,
  DeliveryResult,
  WindowCountRow,
} from '../../services/core/ports/alerts.js'
import type { AlertTransition } from '../../services/core/alerting/alert-window.js'
import type { RunProgress } from '../../services/core/stats/window-completeness.js'
import type { BaselineWindowRow } from '../../services/core/alerting/baseline-profile.js'
import type { SilenceSpec } from '../../services/core/alerting/silences.js'

const T0 = 1_700_000_000_000
const rules: AlertRule[] = [
  {
    type: 'drop_vs_baseline',
    name: 'Drop',
    severity: 'warning',
    percent: 30,
    baselineWindows: 5,
    warmupWindows: 1,
    windows: 3,
    resolveWindows: 2,
  },
]
const config = {
  rules,
  intervalMs: 1000,
  completeness: { allowedLatenessMs: 2000, endGraceMs: 3000, partitionIdleMs: 10_000 },
  lookbackS: 3600,
  maxWindowsPerQuery: 7,
}

interface Row {
  partition: number
  startMs: number
  op: string
  count: number
  errors: number
}

/** op_windows and runs in memory, answering like ClickHouseAlertSource. */
class FakeSource implements AlertWindowSource {
  readonly rows: Row[] = []
  readonly infos = new Map<string, AlertRunInfo>()
  readonly baseline: BaselineWindowRow[] = []
  queries = 0
  addWindow(i: number, read: number, partitions = 2): void {
    // Partial rows per partition, as the processor writes them.
    for (let p = 0; p < partitions; p++)
      if (read > 0)
        this.rows.push({ partition: p, startMs: T0 + i * 1000, op: 'READ', count: read / partitions, errors: 0 })
  }
  async runs(sinceMs: number): Promise<AlertRunInfo[]> {
    return [...this.infos.values()].filter((r) =>
      r.endedAtMs === undefined ? r.startedAtMs >= sinceMs : r.endedAtMs >= sinceMs,
    )
  }
  async progress(_runId: string, sinceMs: number): Promise<RunProgress | undefined> {
    const rows = this.rows.filter((r) => r.startMs >= sinceMs)
    if (rows.length === 0) return undefined
    const parts = new Map<number, number>()
    for (const r of rows) parts.set(r.partition, Math.max(parts.get(r.partition) ?? 0, (r.startMs + 999) * 1000))
    return {
      windowMs: 1000,
      firstWindowMs: Math.min(...rows.map((r) => r.startMs)),
      lastWindowMs: Math.max(...rows.map((r) => r.startMs)),
      partitionMaxEndUs: [...parts.values()],
      lastDataMs: Math.max(...rows.map((r) => r.startMs + 999)),
    }
  }
  async baselineWindows(): Promise<BaselineWindowRow[]> {
    return this.baseline
  }
  async windows(_runId: string, fromMs: number, toMs: number): Promise<WindowCountRow[]> {
    this.queries++
    const m = new Map<string, WindowCountRow>()
    for (const r of this.rows) {
      if (r.startMs < fromMs || r.startMs >= toMs) continue
      const k = `${r.startMs}/${r.op}`
      const w = m.get(k) ?? { startMs: r.startMs, op: r.op, count: 0, errors: 0 }
      w.count += r.count
      w.errors += r.errors
      m.set(k, w)
    }
    return [...m.values()]
  }
}

class FakeStore implements AlertStore {
  readonly rows: Array<{ t: AlertTransition; notifiedAtMs: number | undefined }> = []
  failNext = 0
  async loadOpen(): Promise<AlertTransition[]> {
    const latest = this.latest()
    return [...latest.values()].filter((t) => t.state === 'firing')
  }
  async loadRuns(runIds: readonly string[]): Promise<AlertTransition[]> {
    return [...this.latest().values()].filter((t) => runIds.includes(t.runId))
  }
  async record(t: AlertTransition, notifiedAtMs: number | undefined): Promise<void> {
    if (this.failNext > 0) {
      this.failNext--
      throw new Error('store down')
    }
    this.rows.push({ t, notifiedAtMs })
  }
  private latest(): Map<string, AlertTransition> {
    const m = new Map<string, AlertTransition>()
    for (const { t } of this.rows) if (m.get(t.fingerprint)?.state !== 'resolved') m.set(t.fingerprint, t)
    return m
  }
}

class Capture implements AlertNotifier {
  readonly got: AlertTransition[] = []
  fail = false
  constructor(
    readonly channel = 'webhook',
    readonly mutedBySilences = true,
  ) {}
  async notify(t: AlertTransition): Promise<DeliveryResult> {
    if (this.fail) return { ok: false, error: 'HTTP 500' }
    this.got.push(t)
    return { ok: true }
  }
}

function engine(source: FakeSource, store: FakeStore, notifier: Capture, clock: { now: number }): AlertEngine {
  return new AlertEngine(config, { source, store, notifiers: [notifier], now: () => clock.now })
}

test(
  'an ended run is judged whole: a stall (no rows) fires, recovery resolves, the partial last ' + 'window is ignored',
  async () => {
    const src = new FakeSource()
    // Windows 0..29 at 1000 ops/s, 12..15 without any row (stall), 29 is the cut-short last window.
    for (let i = 0; i < 30; i++) src.addWindow(i, i >= 12 && i <= 15 ? 0 : i === 29 ? 10 : 1000)
    src.infos.set('r1', { runId: 'r1', startedAtMs: T0, endedAtMs: T0 + 29_500, targetOpsPerSec: 0 })
    const store = new FakeStore()
    const cap = new Capture()
    const clock = { now: T0 + 40_000 }
    const e = engine(src, store, cap, clock)
    await e.tick()
    assert.deepEqual(
      cap.got.map((t) => [t.state, t.op, t.value, t.startsAtMs - T0, t.atWindowMs - T0]),
      [
        ['firing', 'READ', 0, 12_000, 14_000],
        ['resolved', 'READ', 1000, 12_000, 17_000],
      ],
    )
    assert.equal(cap.got[1]!.endsAtMs, T0 + 16_000)
    assert.deepEqual(e.runStatus('r1'), { cursorMs: T0 + 29_000, finalized: true })
    assert.equal(e.stats.windowsEvaluated, 28, 'windows 1..28: not the first, not the last')
    assert.ok(src.queries >= 4, 'bounded queries of at most 7 windows')
    assert.equal(store.rows.length, 2)
    assert.ok(store.rows.every((r) => r.notifiedAtMs === T0 + 40_000))
    assert.deepEqual(e.stats.notifications, { webhook: { sent: 2, failed: 0, silenced: 0 } })
    await e.tick()
    assert.equal(cap.got.length, 2, 'nothing new on the next tick')
  },
)

test('a restart replays the run without notifying again', async () => {
  const src = new FakeSource()
  for (let i = 0; i < 30; i++) src.addWindow(i, i >= 12 && i <= 16 ? 500 : 1000)
  src.infos.set('r2', { runId: 'r2', startedAtMs: T0, endedAtMs: undefined, targetOpsPerSec: 0 })
  const store = new FakeStore()
  const clock = { now: T0 + 31_000 }
  const first = new Capture()
  await engine(src, store, first, clock).tick()
  assert.deepEqual(
    first.got.map((t) => t.state),
    ['firing', 'resolved'],
  )
  const second = new Capture()
  const e2 = engine(src, store, second, clock)
  await e2.tick()
  assert.deepEqual(second.got, [])
  assert.equal(e2.stats.suppressed, 2)
  assert.equal(store.rows.length, 2)
})

test('a restart while firing keeps the incident open without re-notifying, then resolves it once', async () => {
  const src = new FakeSource()
  for (let i = 0; i < 20; i++) src.addWindow(i, i >= 12 ? 400 : 1000)
  src.infos.set('r3', { runId: 'r3', startedAtMs: T0, endedAtMs: undefined, targetOpsPerSec: 0 })
  const store = new FakeStore()
  const clock = { now: T0 + 21_000 }
  const first = new Capture()
  const e1 = engine(src, store, first, clock)
  await e1.tick()
  assert.deepEqual(
    first.got.map((t) => t.state),
    ['firing'],
  )
  assert.equal(e1.stats.openIncidents, 1)
  // Restart: a new engine on the same store.
  const second = new Capture()
  const e2 = engine(src, store, second, clock)
  await e2.tick()
  assert.equal(second.got.length, 0, 'the open incident is not announced again')
  assert.equal(e2.stats.openIncidents, 1)
  for (let i = 20; i < 30; i++) src.addWindow(i, 1000)
  clock.now = T0 + 31_000
  await e2.tick()
  assert.deepEqual(
    second.got.map((t) => [t.state, t.fingerprint]),
    [['resolved', first.got[0]!.fingerprint]],
  )
  assert.deepEqual(
    store.rows.map((r) => r.t.state),
    ['firing', 'resolved'],
  )
})

test('incidents only judged on complete windows: the watermark trails the slowest partition', async () => {
  const src = new FakeSource()
  for (let i = 0; i < 20; i++) src.addWindow(i, 1000)
  // Partition 1 lags: it has written up to window 12 only, but is still within the idle time.
  src.rows.splice(0, src.rows.length, ...src.rows.filter((r) => r.partition === 0 || r.startMs <= T0 + 12_000))
  src.infos.set('r4', { runId: 'r4', startedAtMs: T0, endedAtMs: undefined, targetOpsPerSec: 0 })
  const e = engine(src, new FakeStore(), new Capture(), { now: T0 + 21_000 })
  await e.tick()
  // Watermark = 12.999 s; complete: s + 1 + 2 <= 12.999, so windows 1..9 (10 is not).
  assert.equal(e.runStatus('r4')?.cursorMs, T0 + 10_000)
  assert.equal(e.stats.transitions, 0, 'the half-written windows 13..19 (only one partition) are not judged as a drop')
})

test('a failed record is retried on the next tick; failed notifications are counted, not repeated', async () => {
  const src = new FakeSource()
  for (let i = 0; i < 30; i++) src.addWindow(i, i >= 12 && i <= 16 ? 500 : 1000)
  src.infos.set('r5', { runId: 'r5', startedAtMs: T0, endedAtMs: undefined, targetOpsPerSec: 0 })
  const store = new FakeStore()
  store.failNext = 1
  const cap = new Capture()
  cap.fail = true
  const kafka = new Capture('kafka')
  const e = new AlertEngine(config, { source: src, store, notifiers: [cap, kafka], now: () => T0 + 31_000 })
  await e.tick()
  assert.equal(store.rows.length, 0)
  assert.equal(e.stats.recordFailures, 1)
  assert.deepEqual(
    e.stats.notifications,
    { webhook: { sent: 0, failed: 1, silenced: 0 }, kafka: { sent: 1, failed: 0, silenced: 0 } },
    'the queue waits behind the failed record',
  )
  await e.tick()
  assert.deepEqual(
    store.rows.map((r) => r.t.state),
    ['firing', 'resolved'],
  )
  assert.deepEqual(
    e.stats.notifications,
    { webhook: { sent: 0, failed: 2, silenced: 0 }, kafka: { sent: 2, failed: 0, silenced: 0 } },
    'the firing notice was not sent again',
  )
  assert.equal(kafka.got.length, 2)
})

test('an incident left open in the store for a run no longer evaluated is resolved', async () => {
  const store = new FakeStore()
  const stale: AlertTransition = {
    state: 'firing',
    rule: 'Drop',
    ruleType: 'drop_vs_baseline',
    severity: 'warning',
    runId: 'gone',
    op: 'READ',
    fingerprint: 'abc',
    startsAtMs: T0,
    endsAtMs: undefined,
    atWindowMs: T0,
    value: 1,
    threshold: 2,
    summary: 's',
    description: 'd',
  }
  await store.record(stale, T0)
  const cap = new Capture()
  const e = engine(new FakeSource(), store, cap, { now: T0 + 5000 })
  await e.tick()
  assert.deepEqual(
    cap.got.map((t) => [t.state, t.fingerprint, t.endsAtMs]),
    [['resolved', 'abc', T0 + 5000]],
  )
  await e.tick()
  assert.equal(cap.got.length, 1)
  assert.equal(e.stats.openIncidents, 0)
})

/** A silence of rule Drop (this file's rule) on one run, active from T0 on. */
function dropSilence(id: string, runId: string, endsAtMs?: number): SilenceSpec {
  return {
    id,
    matchers: [
      { name: 'alertname', value: 'Drop', isEqual: true },
      { name: 'run_id', value: runId, isEqual: true },
    ],
    startsAtMs: T0,
    endsAtMs,
    createdBy: 'test',
    comment: '',
    updatedAtMs: T0,
  }
}

test(
  'a silenced incident is recorded and published, marked, ' + 'but not sent to the webhook; both of its states',
  async () => {
    const src = new FakeSource()
    for (let i = 0; i < 30; i++) src.addWindow(i, i >= 12 && i <= 16 ? 500 : 1000)
    src.infos.set('s1', { runId: 's1', startedAtMs: T0, endedAtMs: undefined, targetOpsPerSec: 0 })
    src.infos.set('s2', { runId: 's2', startedAtMs: T0, endedAtMs: undefined, targetOpsPerSec: 0 })
    const store = new FakeStore()
    const webhook = new Capture('webhook', true)
    const kafka = new Capture('kafka', false)
    const silences = { current: async () => [dropSilence('b-silence', 's1'), dropSilence('a-silence', 's1')] }
    const e = new AlertEngine(config, {
      source: src,
      store,
      notifiers: [webhook, kafka],
      silences,
      now: () => T0 + 31_000,
    })
    await e.tick()
    // s1 is silenced (the smallest matching id speaks), s2 (same windows, no silence) is not.
    assert.deepEqual(
      kafka.got.map((t) => [t.runId, t.state, t.silencedBy]),
      [
        ['s1', 'firing', 'a-silence'],
        ['s1', 'resolved', 'a-silence'],
        ['s2', 'firing', undefined],
        ['s2', 'resolved', undefined],
      ],
    )
    assert.deepEqual(
      webhook.got.map((t) => [t.runId, t.state]),
      [
        ['s2', 'firing'],
        ['s2', 'resolved'],
      ],
    )
    assert.deepEqual(
      store.rows.map((r) => [r.t.runId, r.t.state, r.t.silencedBy]),
      kafka.got.map((t) => [t.runId, t.state, t.silencedBy]),
      'every transition recorded, silenced ones marked',
    )
    assert.deepEqual(e.stats.notifications, {
      webhook: { sent: 2, failed: 0, silenced: 2 },
      kafka: { sent: 4, failed: 0, silenced: 0 },
    })
    assert.equal(e.stats.silenced, 2)
  },
)

test('an incident is silenced as a whole, decided when it fires', async () => {
  // Windows 0..17 first: the watermark lets windows up to 14 be judged, where the drop (from 12) fires.
  const src = new FakeSource()
  for (let i = 0; i < 18; i++) src.addWindow(i, i >= 12 && i <= 16 ? 500 : 1000)
  src.infos.set('s3', { runId: 's3', startedAtMs: T0, endedAtMs: undefined, targetOpsPerSec: 0 })
  src.infos.set('s4', { runId: 's4', startedAtMs: T0, endedAtMs: undefined, targetOpsPerSec: 0 })
  const clock = { now: T0 + 18_000 }
  const active: SilenceSpec[] = [dropSilence('for-s4', 's4', T0 + 19_000)]
  const store = new FakeStore()
  const webhook = new Capture('webhook', true)
  const e = new AlertEngine(config, {
    source: src,
    store,
    notifiers: [webhook],
    silences: { current: async () => active },
    now: () => clock.now,
  })
  await e.tick()
  assert.deepEqual(
    webhook.got.map((t) => [t.runId, t.state]),
    [['s3', 'firing']],
  )
  // A silence made after s3 fired does not hide its end; s4's silence expires before s4 resolves, which stays silenced.
  active.push(dropSilence('for-s3', 's3'))
  for (let i = 18; i < 30; i++) src.addWindow(i, 1000)
  clock.now = T0 + 31_000
  await e.tick()
  assert.deepEqual(
    webhook.got.map((t) => [t.runId, t.state]),
    [
      ['s3', 'firing'],
      ['s3', 'resolved'],
    ],
  )
  assert.deepEqual(
    store.rows.map((r) => [r.t.runId, r.t.state, r.t.silencedBy]),
    [
      ['s3', 'firing', undefined],
      ['s4', 'firing', 'for-s4'],
      ['s3', 'resolved', undefined],
      ['s4', 'resolved', 'for-s4'],
    ],
  )
})

test(
  'after a restart, the resolved transition of a silenced incident stays silenced; ' +
    'failed reads keep the last silences',
  async () => {
    const src = new FakeSource()
    for (let i = 0; i < 20; i++) src.addWindow(i, i >= 12 ? 400 : 1000)
    src.infos.set('s5', { runId: 's5', startedAtMs: T0, endedAtMs: undefined, targetOpsPerSec: 0 })
    const store = new FakeStore()
    const clock = { now: T0 + 21_000 }
    const first = new Capture('webhook', true)
    await new AlertEngine(config, {
      source: src,
      store,
      notifiers: [first],
      silences: { current: async () => [dropSilence('x', 's5')] },
      now: () => clock.now,
    }).tick()
    assert.deepEqual(first.got, [])
    assert.deepEqual(
      store.rows.map((r) => [r.t.state, r.t.silencedBy]),
      [['firing', 'x']],
    )
    // A new engine whose silence store fails: the run recovers and the incident resolves, still silenced.
    for (let i = 20; i < 30; i++) src.addWindow(i, 1000)
    clock.now = T0 + 31_000
    const second = new Capture('webhook', true)
    const lines: string[] = []
    const e2 = new AlertEngine(config, {
      source: src,
      store,
      notifiers: [second],
      silences: {
        current: async () => {
          throw new Error('ClickHouse down')
        },
      },
      now: () => clock.now,
      log: (l) => lines.push(l),
    })
    await e2.tick()
    assert.deepEqual(second.got, [])
    assert.deepEqual(
      store.rows.map((r) => [r.t.state, r.t.silencedBy]),
      [
        ['firing', 'x'],
        ['resolved', 'x'],
      ],
    )
    assert.equal(e2.stats.silenceReadFailures, 1)
    assert.ok(lines.some((l) => l.includes('reading silences failed')))
  },
)

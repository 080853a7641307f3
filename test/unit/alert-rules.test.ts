/**
 * Pure alert evaluation (services/core/alerting/alert-rules.ts), window completeness
 * (services/core/stats/window-completeness.ts), the rules file validation and the
 * Alertmanager payload: series of complete windows in, transitions out.
 */
import assert from 'node:assert/strict'
import path from 'node:path'
import { test } from 'node:test'
import type { AlertRule } from '../../schemas/alert-rules.v1.js'
import { loadAlertRules, validateAlertRules } from '../../services/alerts/rules-file.js'
import { alertmanagerPayload, alertNotice, ZERO_TIME } from '../../services/core/alerting/notices.js'
import { AlertEvaluator, alertFingerprint, baselineOf } from '../../services/core/alerting/alert-rules.js'
import type { AlertTransition, RunContext } from '../../services/core/alerting/alert-window.js'
import {
  completeBefore,
  runWatermarkUs,
  windowStarts,
  type RunProgress,
} from '../../services/core/stats/window-completeness.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { joinRegExp } from '../helpers/regexp.js'

const W = 1000
const T0 = 1_700_000_000_000
const run: RunContext = { runId: 'run-1', targetOpsPerSec: 2000 }

const drop: AlertRule = {
  type: 'drop_vs_baseline',
  name: 'Drop',
  severity: 'warning',
  percent: 30,
  baselineWindows: 5,
  warmupWindows: 2,
  windows: 3,
  resolveWindows: 2,
}
const below: AlertRule = {
  type: 'below_target',
  name: 'BelowTarget',
  severity: 'warning',
  fraction: 0.8,
  windows: 3,
  resolveWindows: 2,
}
const errors: AlertRule = {
  type: 'error_rate',
  name: 'Errors',
  severity: 'critical',
  threshold: 0.05,
  windows: 2,
  minOps: 10,
}

/**
 * Feeds per-window READ/UPDATE counts (ops per 1 s window) and collects every transition with the index of its window.
 */
function feed(
  ev: AlertEvaluator,
  series: Array<{ read: number; update?: number; readErrors?: number }>,
  ctx: RunContext = run,
  startIndex = 0,
): Array<AlertTransition & { i: number }> {
  const out: Array<AlertTransition & { i: number }> = []
  series.forEach((w, k) => {
    const i = startIndex + k
    const ops = [{ op: 'READ', count: w.read, errors: w.readErrors ?? 0 }]
    if (w.update !== undefined) ops.push({ op: 'UPDATE', count: w.update, errors: 0 })
    for (const t of ev.observeWindow(ctx, {
      startMs: T0 + i * W,
      windowMs: W,
      ops: ops.filter((o) => o.count > 0 || o.errors > 0),
    }))
      out.push({ ...t, i })
  })
  return out
}

const steady = (n: number, read = 1000, update = 1000): Array<{ read: number; update: number }> =>
  Array.from({ length: n }, (_, i) => ({ read: read + ((i * 37) % 41) - 20, update: update + ((i * 53) % 31) - 15 }))

test('a steady series raises nothing', () => {
  const ev = new AlertEvaluator([drop, below, errors])
  assert.deepEqual(feed(ev, steady(60)), [])
  assert.deepEqual(ev.openIncidents(), [])
})

test('a drop to 50% fires on the configured window and resolves after recovery, once', () => {
  const ev = new AlertEvaluator([drop])
  // 2 warm-up + 5 baseline + 3 more steady, then 6 windows at half, then recovery.
  const series = [...steady(10), ...Array.from({ length: 6 }, () => ({ read: 500, update: 1000 })), ...steady(5)]
  const ts = feed(ev, series)
  assert.equal(ts.length, 2, JSON.stringify(ts, null, 1))
  const [fire, res] = ts as [AlertTransition & { i: number }, AlertTransition & { i: number }]
  assert.equal(fire.state, 'firing')
  assert.equal(fire.op, 'READ', 'only READ dropped')
  assert.equal(fire.runId, 'run-1')
  assert.equal(fire.i, 12, 'fires on the 3rd bad window (windows: 3)')
  assert.equal(fire.startsAtMs, T0 + 10 * W, 'the incident starts at the first bad window')
  assert.equal(fire.atWindowMs, T0 + 12 * W)
  assert.equal(fire.value, 500)
  // Baseline: median of windows 2..6 and later good windows; threshold is 70% of it.
  assert.ok(fire.threshold > 650 && fire.threshold < 720, `threshold ${fire.threshold}`)
  assert.match(
    fire.summary,
    /READ throughput of run run-1 dropped to 500 ops\/s, 50% below its baseline of 99\d ops\/s/,
  )
  assert.equal(res.state, 'resolved')
  assert.equal(res.i, 17, 'resolves on the 2nd good window (resolveWindows: 2)')
  assert.equal(res.endsAtMs, T0 + 16 * W, 'ends at the first good window')
  assert.equal(res.fingerprint, fire.fingerprint)
  assert.equal(fire.fingerprint, alertFingerprint('Drop', 'run-1', 'READ', T0 + 10 * W))
  assert.deepEqual(ev.openIncidents(), [])
})

test('two bad windows are not enough with windows: 3, and a long drop fires once', () => {
  const short = new AlertEvaluator([drop])
  assert.deepEqual(
    feed(short, [...steady(10), { read: 500, update: 1000 }, { read: 500, update: 1000 }, ...steady(10)]),
    [],
  )
  const long = new AlertEvaluator([drop])
  const ts = feed(long, [...steady(10), ...Array.from({ length: 40 }, () => ({ read: 400, update: 1000 }))])
  assert.equal(ts.length, 1, 'no duplicate while firing')
  assert.equal(ts[0]!.state, 'firing')
  // The drop never enters the baseline, so it stays firing instead of becoming the new normal.
  assert.equal(long.openIncidents().length, 1)
})

test('warm-up windows are neither judged nor part of the baseline', () => {
  const ev = new AlertEvaluator([drop])
  // Windows 0-1 run at 5x (a warm-up burst); afterwards steady at 1000. Were
  // they in the baseline, its median would not move, but with mean it would:
  const meanRule: AlertRule = { ...drop, name: 'DropMean', baseline: 'mean' }
  const ev2 = new AlertEvaluator([meanRule])
  const series = [{ read: 5000, update: 5000 }, { read: 5000, update: 5000 }, ...steady(20)]
  assert.deepEqual(feed(ev, series), [])
  assert.deepEqual(feed(ev2, series), [], 'mean baseline unaffected by the warm-up burst')
  // A drop during warm-up raises nothing either.
  const ev3 = new AlertEvaluator([{ ...drop, warmupWindows: 4 }])
  assert.deepEqual(
    feed(ev3, [{ read: 1000 }, { read: 10 }, { read: 10 }, { read: 10 }, ...steady(10).map((w) => ({ read: w.read }))]),
    [],
  )
  // Without warm-up the same low start would be the baseline: the later 1000s are not a drop.
  assert.equal(baselineOf([1, 2, 100], 'median'), 2)
  assert.equal(baselineOf([1, 2, 3, 100], 'median'), 2.5)
  assert.equal(baselineOf([1, 2, 3], 'mean'), 2)
})

test('a stall (windows without any operation) counts as zero throughput', () => {
  const ev = new AlertEvaluator([drop])
  const ts = feed(ev, [...steady(10), { read: 0, update: 0 }, { read: 0, update: 0 }, { read: 0, update: 0 }])
  assert.deepEqual(
    ts.map((t) => [t.state, t.op, t.value, t.i]),
    [
      ['firing', 'READ', 0, 12],
      ['firing', 'UPDATE', 0, 12],
    ],
  )
})

test('an ops filter limits a rule to those operations', () => {
  const ev = new AlertEvaluator([{ ...drop, ops: ['UPDATE'] }])
  assert.deepEqual(feed(ev, [...steady(10), ...Array.from({ length: 5 }, () => ({ read: 100, update: 1000 }))]), [])
  const ts = feed(
    ev,
    Array.from({ length: 5 }, () => ({ read: 1000, update: 100 })),
    run,
    15,
  )
  assert.deepEqual(
    ts.map((t) => t.op),
    ['UPDATE'],
  )
})

test('error rate fires above the threshold and resolves below it; sparse windows are skipped', () => {
  const ev = new AlertEvaluator([errors])
  const ts = feed(ev, [
    { read: 1000, readErrors: 10 },
    { read: 1000, readErrors: 100 }, // 10%
    { read: 5, readErrors: 5 }, // below minOps: neither good nor bad
    { read: 1000, readErrors: 60 }, // 6%: second bad window -> fires
    { read: 1000, readErrors: 80 },
    { read: 1000, readErrors: 0 },
    { read: 1000, readErrors: 1 }, // second good window -> resolves
  ])
  assert.deepEqual(
    ts.map((t) => [t.state, t.op, t.i]),
    [
      ['firing', 'READ', 3],
      ['resolved', 'READ', 6],
    ],
  )
  assert.equal(ts[0]!.value, 0.06)
  assert.equal(ts[0]!.threshold, 0.05)
  assert.equal(ts[0]!.startsAtMs, T0 + 1 * W)
  assert.equal(ts[0]!.severity, 'critical')
  assert.match(ts[0]!.summary, /READ error rate of run run-1 is 6\.0%, above 5\.0%/)
})

test('below target compares total throughput over all operations with the run target', () => {
  const ev = new AlertEvaluator([below])
  // 1000 + 1000 = 2000 = target: fine. 900 + 600 = 1500 < 0.8 * 2000 = 1600: bad.
  const ts = feed(ev, [...steady(5), ...Array.from({ length: 4 }, () => ({ read: 900, update: 600 })), ...steady(3)])
  assert.deepEqual(
    ts.map((t) => [t.state, t.op, t.i, t.threshold]),
    [
      ['firing', 'ALL', 7, 1600],
      ['resolved', 'ALL', 10, 1600],
    ],
  )
  assert.equal(ts[0]!.value, 1500)
  assert.ok(ts[1]!.value > 1900, `recovered value ${ts[1]!.value}`)
  // A run without a target is never judged against one.
  const none = new AlertEvaluator([below])
  assert.deepEqual(
    feed(
      none,
      Array.from({ length: 10 }, () => ({ read: 1 })),
      { runId: 'no-target', targetOpsPerSec: 0 },
    ),
    [],
  )
})

test('windows must come in order, once', () => {
  const ev = new AlertEvaluator([drop])
  ev.observeWindow(run, { startMs: T0, windowMs: W, ops: [] })
  assert.throws(() => ev.observeWindow(run, { startMs: T0, windowMs: W, ops: [] }), /not after the previous one/)
})

test('no_data fires once after the silence, resolves when data returns, and a run end closes what is open', () => {
  const ev = new AlertEvaluator([{ type: 'no_data', name: 'NoData', severity: 'critical', seconds: 10 }])
  assert.deepEqual(ev.observeActivity(run, T0 + 9_000, T0), [])
  const [f] = ev.observeActivity(run, T0 + 10_500, T0)
  assert.equal(f?.state, 'firing')
  assert.equal(f?.op, 'ALL')
  assert.equal(f?.startsAtMs, T0 + 10_000)
  assert.deepEqual(ev.observeActivity(run, T0 + 20_000, T0), [], 'no duplicate while silent')
  const [r] = ev.observeActivity(run, T0 + 21_000, T0 + 20_500)
  assert.equal(r?.state, 'resolved')
  assert.equal(r?.fingerprint, f?.fingerprint)
  assert.equal(r?.endsAtMs, T0 + 20_500)
  const [f2] = ev.observeActivity(run, T0 + 40_000, T0 + 20_500)
  assert.equal(f2?.state, 'firing')
  assert.notEqual(f2?.fingerprint, f?.fingerprint, 'a new incident has a new fingerprint')
  const ended = ev.endRun('run-1', T0 + 41_000)
  assert.deepEqual(
    ended.map((t) => [t.state, t.fingerprint, t.endsAtMs]),
    [['resolved', f2?.fingerprint, T0 + 41_000]],
  )
  assert.deepEqual(ev.openIncidents(), [])
})

test('the watermark is the slowest partition still carrying the run; complete windows trail it by the lateness', () => {
  // Partition 2 is 10 s behind: it finished its part of the run and is left out.
  assert.equal(runWatermarkUs([20_000_000, 19_500_000, 10_000_000], 5_000_000), 19_500_000)
  assert.equal(
    runWatermarkUs([20_000_000, 19_500_000, 16_000_000], 5_000_000),
    16_000_000,
    'a partition within the idle time holds the watermark back',
  )
  assert.equal(runWatermarkUs([], 10_000_000), undefined)
  const p: RunProgress = {
    windowMs: 1000,
    firstWindowMs: T0,
    lastWindowMs: T0 + 20_000,
    partitionMaxEndUs: [(T0 + 20_400) * 1000, (T0 + 19_700) * 1000],
    lastDataMs: T0 + 20_400,
  }
  const o = {
    nowMs: T0 + 21_000,
    endedAtMs: undefined,
    allowedLatenessMs: 2000,
    endGraceMs: 5000,
    partitionIdleMs: 10_000,
  }
  // Slowest partition at +19.7 s: [s, s+1) complete when s + 1 + 2 <= 19.7, so s < 17.
  assert.deepEqual(completeBefore(p, o), { beforeMs: T0 + 17_000, final: false })
  // Ended, but within the grace: still by watermark. After it: everything but the last (partial) window.
  assert.deepEqual(completeBefore(p, { ...o, endedAtMs: T0 + 20_500 }), { beforeMs: T0 + 17_000, final: false })
  assert.deepEqual(completeBefore(p, { ...o, endedAtMs: T0 + 20_500, nowMs: T0 + 26_000 }), {
    beforeMs: T0 + 20_000,
    final: true,
  })
  assert.deepEqual(windowStarts(T0, T0 + 3000, 1000), [T0, T0 + 1000, T0 + 2000])
})

test('the Alertmanager payload carries status, labels, annotations and times', () => {
  const ev = new AlertEvaluator([drop])
  const [fire, res] = feed(ev, [
    ...steady(10),
    ...Array.from({ length: 3 }, () => ({ read: 500, update: 1000 })),
    ...steady(2),
  ])
  const p = alertmanagerPayload(fire!, { receiver: 'bs', externalUrl: 'http://x:8080' })
  assert.equal(p.version, '4')
  assert.equal(p.status, 'firing')
  assert.equal(p.receiver, 'bs')
  assert.equal(p.groupKey, '{}:{alertname="Drop", op="READ", run_id="run-1"}')
  assert.deepEqual(p.commonLabels, { alertname: 'Drop', run_id: 'run-1', op: 'READ', severity: 'warning' })
  assert.equal(p.alerts.length, 1)
  assert.equal(p.alerts[0]!.startsAt, new Date(T0 + 10 * W).toISOString())
  assert.equal(p.alerts[0]!.endsAt, ZERO_TIME)
  assert.equal(p.alerts[0]!.fingerprint, fire!.fingerprint)
  assert.equal(p.alerts[0]!.generatorURL, 'http://x:8080/?run=run-1')
  const r = alertmanagerPayload(res!, { receiver: 'bs', externalUrl: 'http://x:8080' })
  assert.equal(r.status, 'resolved')
  assert.equal(r.alerts[0]!.endsAt, new Date(T0 + 13 * W).toISOString())
  const n = alertNotice(res!)
  assert.equal(n.state, 'resolved')
  assert.equal(n.endsAt, new Date(T0 + 13 * W).toISOString())
  assert.equal(n.ruleType, 'drop_vs_baseline')
})

test('the shipped rules file is valid', () => {
  const f = loadAlertRules(path.join(repoRoot(), 'deploy', 'alerts', 'rules.json'))
  assert.deepEqual(f.rules.map((r) => r.type).sort(), [
    'below_target',
    'drop_vs_baseline',
    'error_rate',
    'no_data',
    'vs_baseline',
  ])
})

test('rule validation names the bad field and what it allows', () => {
  const bad = (json: unknown): string => {
    try {
      validateAlertRules(json, 'rules.json')
    } catch (err) {
      assert.ok(isBenchstreamError(err, 'BS_ERR_CONFIG'), String(err))
      return err.message
    }
    assert.fail('expected a validation error')
  }
  const ok = { type: 'below_target', name: 'A', severity: 'warning', fraction: 0.5, windows: 3 }
  assert.equal(validateAlertRules({ version: 1, rules: [ok] }, 'x').rules.length, 1)
  assert.match(
    bad({ version: 1, rules: [{ ...ok, fraction: 1.5 }] }),
    /rules\[0\]\.fraction: got 1\.5; allowed: a number greater than 0 and at most 1/,
  )
  assert.match(
    bad({ version: 1, rules: [{ ...ok, severity: 'page' }] }),
    /rules\[0\]\.severity: got "page"; allowed: one of critical, warning, info/,
  )
  assert.match(
    bad({ version: 1, rules: [{ ...ok, type: 'spike' }] }),
    /rules\[0\]\.type: got "spike"; allowed: below_target, drop_vs_baseline, error_rate, no_data, vs_baseline/,
  )
  assert.match(
    bad({ version: 1, rules: [{ ...ok, windows: undefined }] }),
    joinRegExp([
      /rules\[0\]\.windows: is missing; /,
      /allowed: consecutive windows below the target before it fires: an integer from 1 to 3600/,
    ]),
  )
  assert.match(
    bad({ version: 1, rules: [{ ...ok, ops: ['READ'] }] }),
    joinRegExp([
      /rules\[0\]\.ops: is not a field of a below_target rule; /,
      /allowed fields: type, name, severity, description, fraction, windows, resolveWindows, warmupWindows/,
    ]),
  )
  assert.match(
    bad({
      version: 1,
      rules: [
        {
          type: 'drop_vs_baseline',
          name: 'D',
          severity: 'info',
          percent: 30,
          baselineWindows: 5,
          windows: 2,
          ops: ['READ', 'FETCH'],
        },
      ],
    }),
    /rules\[0\]\.ops\[1\]: got "FETCH"; allowed: one of READ, UPDATE, INSERT, SCAN, READ-MODIFY-WRITE, DELETE/,
  )
  assert.match(
    bad({
      version: 1,
      rules: [
        {
          type: 'drop_vs_baseline',
          name: 'D',
          severity: 'info',
          percent: 30,
          baselineWindows: 5,
          windows: 2,
          baseline: 'p50',
        },
      ],
    }),
    /rules\[0\]\.baseline: got "p50"; allowed: one of median, mean/,
  )
  assert.match(bad({ version: 1, rules: [ok, { ...ok }] }), /rules\[1\]\.name: "A" is already the name of rules\[0\]/)
  assert.match(
    bad({ version: 1, rules: [{ ...ok, name: '1st rule' }] }),
    /rules\[0\]\.name: got "1st rule"; allowed: a name of 1-64 characters/,
  )
  assert.match(bad({ version: 2, rules: [] }), /version: got 2; allowed: 1/)
  assert.match(bad({ rules: [] }), /version: is missing/)
  assert.match(bad({ version: 1, rules: ['x'] }), /rules\[0\]: expected an object with a "type"/)
  // Every problem is listed, not only the first.
  const many = bad({
    version: 1,
    rules: [
      { ...ok, fraction: 0 },
      { ...ok, name: 'B', windows: 0 },
    ],
  })
  assert.match(many, /rules\[0\]\.fraction/)
  assert.match(many, /rules\[1\]\.windows: got 0/)
})

test('the catch-up after a stall neither holds the incident open nor becomes the norm: one incident, no second', () => {
  // A throttled run behind its schedule runs faster until it has caught up. Those windows are good, but a baseline
  // that took them in would judge the run's normal rate afterwards as a drop (1000 < 70% of a median of 1600).
  const ev = new AlertEvaluator([drop])
  const stall = Array.from({ length: 4 }, () => ({ read: 50 }))
  const catchUp = Array.from({ length: 4 }, () => ({ read: 1600 }))
  const ts = feed(ev, [...steady(10).map((w) => ({ read: w.read })), ...stall, ...catchUp, ...steady(12)])
  assert.deepEqual(
    ts.map((t) => [t.state, t.i]),
    [
      ['firing', 12],
      ['resolved', 15],
    ],
    JSON.stringify(ts, null, 1),
  )
  assert.equal(ts[1]!.endsAtMs, T0 + 14 * W, 'ends at the first window of the catch-up')
  assert.deepEqual(ev.openIncidents(), [])
})

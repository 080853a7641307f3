/**
 * Every query of every committed Grafana dashboard, run against real data:
 * two runs go driver -> Kafka -> processor -> ClickHouse (embedded), then
 * each variable and panel query is expanded as Grafana and the ClickHouse
 * plugin would (dashboards/macros.ts) and executed. Shapes are checked for
 * all of them; values for the ones a user reads as facts: operations so far
 * (exactly what the drivers sent), p99 (merged histograms, within 1% of the
 * raw events), the compare table (equal to the run report), per-client
 * throughput (adds up to the total), the target line and server-side ratio.
 *
 * Alerts: a third run meets a stalled datastore (200 ms per operation, at
 * most 5% of its target) and the alert evaluator (services/alerts/app.ts on
 * the real ClickHouse, its clock stepped) writes real alert rows: one rule
 * plain, one silenced. Every dashboard's annotation query, the live
 * dashboard's "Firing now" table and its state timeline are run while the
 * incidents fire and again once the run's end resolves them, and checked
 * against the rows in `alerts`.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import type { ClickHouse } from '../../services/adapters/clickhouse/client.js'
import { queryRows } from '../../services/adapters/clickhouse/client.js'
import { createKafka } from '../../services/adapters/kafka/client.js'
import { ClickHouseReadModel } from '../../services/adapters/clickhouse/read-model.js'
import type { RunReport } from '../../services/core/ports/read-model.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { startServer } from '../../services/server/main.js'
import { generateDashboards, generatedDir } from '../../dashboards/index.js'
import { ALERT_STATE_VALUES } from '../../dashboards/live-run.js'
import { ClickHouseAlertSource, ClickHouseAlertStore } from '../../services/adapters/clickhouse/alerts.js'
import { build as buildAlerts } from '../../services/alerts/app.js'
import type { AlertRule } from '../../schemas/alert-rules.v1.js'
import type { SilenceSpec } from '../../services/core/alerting/silences.js'
import { STALL_MS, StalledBinding } from '../helpers/stalled-binding.js'
import { expandQuery, type ExpandContext } from '../helpers/grafana-macros.js'
import { testEnv, waitFor } from '../helpers/env.js'
import { driveClient, loadClient, runClient } from '../helpers/driven-run.js'

interface Target {
  refId: string
  format: number
  rawSql: string
}
interface JsonPanel {
  type: string
  title: string
  targets?: Target[]
  panels?: JsonPanel[]
}
interface JsonVariable {
  name: string
  type: string
  query: string
}
interface JsonDashboard {
  uid: string
  panels: JsonPanel[]
  templating: { list: JsonVariable[] }
  annotations: { list: Array<{ name: string; target: Target }> }
}
type Row = Record<string, unknown>
interface Result {
  meta: Array<{ name: string; type: string }>
  data: Row[]
}

/**
 * The columns each query must return, by `uid/panel title/refId` or `uid/$variable`. A new panel must be added here.
 */
const EXPECTED: Record<string, string[]> = {
  'benchstream-live/$run': ['__text', '__value'],
  'benchstream-live/$op': ['op'],
  'benchstream-live/Operations/A': ['operations'],
  'benchstream-live/Current throughput/A': ['ops_per_s'],
  'benchstream-live/p99 latency/A': ['p99_us'],
  'benchstream-live/Intended p99/A': ['intended_p99_us'],
  'benchstream-live/Cache-hit ratio/A': ['hit_ratio'],
  'benchstream-live/Errors/A': ['errors'],
  'benchstream-live/Clients/A': ['clients'],
  'benchstream-live/Throughput/A': ['time', 'op', 'ops_per_s'],
  'benchstream-live/Throughput/B': ['time', 'total', 'target'],
  'benchstream-live/Throughput per client/A': ['time', 'client_id', 'ops_per_s'],
  'benchstream-live/Latency percentiles/A': ['time', 'op', 'p50', 'p95', 'p99', 'p99.9'],
  'benchstream-live/p99: measured vs intended/A': ['time', 'op', 'measured_p99', 'intended_p99'],
  'benchstream-live/Cache-hit ratio per operation (client)/A': ['time', 'op', 'hit_ratio'],
  'benchstream-live/Cache-hit ratio (server)/A': ['time', 'source', 'hit_ratio'],
  'benchstream-live/Errors per second by status/A': ['time', 'status', 'errors_per_s'],
  'benchstream-live/Firing now/A': ['rule', 'op', 'severity', 'since', 'value', 'threshold', 'summary', 'silenced_by'],
  'benchstream-live/Alert state per rule/A': ['time', 'rule', 'state'],
  'benchstream-live/annotation/Alerts': ['time', 'timeEnd', 'title', 'text', 'tags'],
  'benchstream-compare/annotation/Alerts': ['time', 'timeEnd', 'title', 'text', 'tags'],
  'benchstream-sweep/annotation/Alerts': ['time', 'timeEnd', 'title', 'text', 'tags'],
  'benchstream-profiles/annotation/Alerts': ['time', 'timeEnd', 'title', 'text', 'tags'],
  'benchstream-compare/$baseline': ['__text', '__value'],
  'benchstream-compare/$candidate': ['__text', '__value'],
  'benchstream-compare/Throughput since start/A': ['t_s', 'baseline', 'candidate'],
  'benchstream-compare/p99 latency since start/A': ['t_s', 'baseline', 'candidate'],
  'benchstream-compare/Per measurement: baseline vs candidate/A': [
    'measurement',
    ...['ops_per_s', 'avg_us', 'p95_us', 'p99_us', 'intended_p99_us'].flatMap((m) => [
      `baseline_${m}`,
      `candidate_${m}`,
      `${m}_change_pct`,
    ]),
  ],
  'benchstream-sweep/$label': ['label'],
  'benchstream-sweep/$workload': ['workload'],
  'benchstream-sweep/Runs by ${label}/A': [
    'value',
    'run_id',
    'workload',
    'clients',
    'threads',
    'ops_per_s',
    'avg_us',
    'p50_us',
    'p99_us',
  ],
  'benchstream-sweep/Throughput by ${label}/A': ['value', 'ops_per_s'],
  'benchstream-sweep/p99 latency by ${label}/A': ['value', 'p99_us'],
  'benchstream-sweep/Groups of repetitions: median and range/A': [
    'group_id',
    'workload',
    'op',
    'runs',
    'median_ops_per_sec',
    'min_ops_per_sec',
    'max_ops_per_sec',
    'median_p99_us',
    'min_p99_us',
    'max_p99_us',
  ],
  'benchstream-sweep/Sweep points/A': [
    'sweep_id',
    'param',
    'point',
    'run_id',
    'ops_per_sec',
    'p50_us',
    'p95_us',
    'p99_us',
    'error_rate',
  ],
  'benchstream-sweep/Sweep curve: throughput/A': ['x', 'ops_per_sec'],
  'benchstream-sweep/Sweep curve: p99/A': ['x', 'p99_us'],
}

/** Dashboards whose queries another e2e file runs on data of their own (profiles: test/e2e/profiles.test.ts). */
const TESTED_ELSEWHERE = new Set(['benchstream-profiles'])

/**
 * Panels that may legitimately return no rows for a run: the memory binding never fails an operation, and only the
 * stalled run raises alerts.
 */
const MAY_BE_EMPTY = new Set([
  'benchstream-live/Errors per second by status/A',
  'benchstream-live/Firing now/A',
  'benchstream-live/Alert state per rule/A',
])
/** The live dashboard's alert panels, run on the stalled run. */
const ALERT_PANELS = new Set(['Firing now', 'Alert state per rule'])

async function execute(ch: ClickHouse, query: string): Promise<Result> {
  const rs = await ch.client.query({ query, format: 'JSON' })
  return (await rs.json()) as unknown as Result
}

const num = (v: unknown): number => Number(v)
/** ClickHouse's DateTime64 text in UTC (`2026-01-10 12:00:05.000`) as ms since the epoch. */
const utcMs = (v: unknown): number => Date.parse(`${String(v).replace(' ', 'T')}Z`)
const close = (a: number, b: number, what: string, rel = 1e-9): void =>
  assert.ok(Math.abs(a - b) <= rel * Math.max(Math.abs(a), Math.abs(b), 1), `${what}: ${a} vs ${b}`)

interface RunOutcome {
  runId: string
  sentEvents: number
  ops: string[]
}

test('every dashboard query runs on real data and shows the numbers the reports show', async (t) => {
  // The server's own evaluator is off: the alerts come from one this test drives, on a clock it steps.
  const te = testEnv({ ALERTS_ENABLED: 'false' })
  t.after(te.cleanup)
  const svc = await startServer(te.env, { api: true })
  t.after(() => svc.stop())
  const ch = svc.ch
  const infra = readInfraConfig(te.env)
  const kafka = createKafka(infra.kafka, 'e2e-dashboards')

  const stamp = Date.now()
  // One throttled client (so the target line exists) and a run of two unthrottled clients.
  const drive = async (runId: string, clients: Array<{ id: string; args: string[] }>): Promise<RunOutcome> => {
    const outcomes = await Promise.all(
      clients.map(async (c) => {
        const outcome = await driveClient(kafka, te.env, [
          ...`-P workloads/workloada -p recordcount=1000 -db memory --run-id ${runId} --client-id ${c.id}`.split(' '),
          ...c.args,
        ])
        assert.equal(outcome.delivery.undelivered, 0)
        return outcome
      }),
    )
    const ops = [...new Set(outcomes.flatMap((o) => Object.keys(o.delivery.sent).map((k) => k.split('/')[0]!)))].sort()
    return { runId, sentEvents: outcomes.reduce((a, o) => a + o.delivery.sentEvents, 0), ops }
  }
  // Each run is the first repetition of a group of its own, and a point of one sweep over threads (as benchstream sweep
  // labels them).
  const sweepId = `sw-${stamp}`
  const tags = (group: string, point: number): string[] => [
    '--group',
    group,
    '--repetition',
    '1',
    '--label',
    `sweep=${sweepId}`,
    '--label',
    'sweep.param=threads',
    '--label',
    `point=${point}`,
  ]
  // The stalled run: 10 threads at 200 ms per operation, at most 50 ops/s against a target of 1000.
  const stalled = async (runId: string): Promise<{ runId: string; sentEvents: number }> => {
    const stalledClient = await loadClient(
      te.env,
      [
        ...'-P workloads/workloada -p recordcount=1000 -p operationcount=100000000 -p maxexecutiontime=5'.split(' '),
        ...`-threads 10 -target 1000 -db memory --run-id ${runId} --client-id stalled-a`.split(' '),
        '--label',
        'alerting=stalled',
      ],
      (b) => new StalledBinding(b),
    )
    stalledClient.binding.delayMs = STALL_MS
    const outcome = await runClient(kafka, te.env, stalledClient)
    assert.equal(outcome.delivery.undelivered, 0)
    return { runId, sentEvents: outcome.delivery.sentEvents }
  }
  const alerting = stalled(`dash-alert-${stamp}`)
  const baseline = await drive(`dash-base-${stamp}`, [
    {
      id: 'base-a',
      args: [
        '-p',
        'operationcount=5000',
        '-threads',
        '4',
        '-target',
        '2500',
        '--label',
        'version=0.98.0',
        '--label',
        'threads=4',
        ...tags(`gb-${stamp}`, 4),
      ],
    },
  ])
  const candidate = await drive(`dash-cand-${stamp}`, [
    {
      id: 'cand-a',
      args: [
        '-p',
        'operationcount=4000',
        '-threads',
        '8',
        '--label',
        'version=0.98.4',
        '--label',
        'threads=16',
        ...tags(`gc-${stamp}`, 16),
      ],
    },
    {
      id: 'cand-b',
      args: [
        '-p',
        'operationcount=3000',
        '-threads',
        '8',
        '--label',
        'version=0.98.4',
        '--label',
        'threads=16',
        ...tags(`gc-${stamp}`, 16),
      ],
    },
  ])
  const runs = [baseline, candidate]
  const alertRun = await alerting

  await waitFor('both runs complete in ClickHouse', async () => {
    const rows = await queryRows<{ run_id: string; n: string; ended: string; samples: string }>(
      ch,
      `
      SELECT run_id,
             (SELECT sum(count) FROM benchstream.op_windows AS w WHERE w.run_id = r.run_id) AS n,
             clients_ended AS ended,
             (SELECT count() FROM benchstream.server_metrics AS m WHERE m.run_id = r.run_id) AS samples
      FROM benchstream.runs AS r WHERE run_id IN {ids:Array(String)}`,
      { ids: runs.map((r) => r.runId) },
    )
    const ok = runs.every((run) => {
      const r = rows.find((x) => x.run_id === run.runId)
      return (
        r !== undefined &&
        Number(r.n) === run.sentEvents &&
        Number(r.ended) === (run === baseline ? 1 : 2) &&
        Number(r.samples) >= 4
      )
    })
    return ok ? rows : undefined
  })
  // Server metric samples travel with the events; give the last ones a moment and require the count to be stable.
  await waitFor('server metric samples settle', async () => {
    const count = async (): Promise<number> =>
      Number((await queryRows<{ n: string }>(ch, 'SELECT count() AS n FROM benchstream.server_metrics'))[0]!.n)
    const a = await count()
    await new Promise((r) => setTimeout(r, 700))
    return a === (await count()) ? true : undefined
  })

  const [alertRunInfo] = await waitFor('the stalled run complete in ClickHouse', async () => {
    const rows = await queryRows<{ n: string; ended_ms: string | null }>(
      ch,
      `SELECT (SELECT sum(count) FROM benchstream.op_windows WHERE run_id = {id:String}) AS n,
              toUnixTimestamp64Milli(ended_at) AS ended_ms
       FROM benchstream.runs WHERE run_id = {id:String}`,
      { id: alertRun.runId },
    )
    return rows[0] !== undefined && Number(rows[0].n) === alertRun.sentEvents && rows[0].ended_ms !== null
      ? rows
      : undefined
  })
  const alertRunEndMs = Number(alertRunInfo!.ended_ms)

  const [span] = await queryRows<{ first_ms: string }>(
    ch,
    `SELECT toUnixTimestamp64Milli(min(started_at)) AS first_ms FROM benchstream.runs WHERE run_id ` +
      `IN {ids:Array(String)}`,
    { ids: [...runs, alertRun].map((r) => r.runId) },
  )
  const range = { fromMs: Number(span!.first_ms) - 60_000, toMs: Date.now() + 60_000, intervalMs: 1000 }
  const [win] = await queryRows<{ w_ms: number; kinds: string }>(
    ch,
    `SELECT max(window_ms) AS w_ms, uniqExact(window_ms) AS kinds FROM benchstream.op_windows`,
  )
  assert.equal(Number(win!.kinds), 1)
  const windowS = Number(win!.w_ms) / 1000

  // The committed files are what users import; the unit tier checks they equal the generator's output.
  const dashboards = generateDashboards()
    .filter((g) => !TESTED_ELSEWHERE.has(g.uid))
    .map((g) => JSON.parse(readFileSync(path.join(generatedDir(), g.file), 'utf8')) as JsonDashboard)
  const byUid = (uid: string): JsonDashboard =>
    dashboards.find((d) => d.uid === uid) ?? assert.fail(`no dashboard ${uid}`)
  const covered = new Set<string>()

  const variable = async (d: JsonDashboard, name: string, variables: ExpandContext['variables']): Promise<string[]> => {
    const v = d.templating.list.find((x) => x.name === name) ?? assert.fail(`${d.uid} has no variable ${name}`)
    const key = `${d.uid}/$${name}`
    const res = await execute(ch, expandQuery(v.query, { ...range, variables }))
    assert.deepEqual(
      res.meta.map((m) => m.name),
      EXPECTED[key] ?? assert.fail(`no expected columns for ${key}`),
      key,
    )
    covered.add(key)
    // A run picker shows __text (a summary run marked "(reported)") and sets __value, the run id.
    return res.data.map((r) => String(r.__value ?? Object.values(r)[0]))
  }

  /** Runs every target of a dashboard with one variable set; returns results by `title/refId`. */
  const panels = async (
    d: JsonDashboard,
    variables: ExpandContext['variables'],
    ctx: Partial<ExpandContext> = {},
    only?: ReadonlySet<string>,
  ): Promise<Map<string, Row[]>> => {
    const out = new Map<string, Row[]>()
    const flat = d.panels
      .flatMap((p) => [p, ...(p.panels ?? [])])
      .filter((p) => p.type !== 'row' && (only === undefined || only.has(p.title)))
    for (const p of flat) {
      for (const target of p.targets ?? []) {
        const key = `${d.uid}/${p.title}/${target.refId}`
        const sql = expandQuery(target.rawSql, { ...range, ...ctx, variables })
        let res: Result
        try {
          res = await execute(ch, sql)
        } catch (err) {
          assert.fail(`${key} failed in ClickHouse: ${(err as Error).message}\n${sql}`)
        }
        const expected = EXPECTED[key] ?? assert.fail(`no expected columns for ${key}: add them to EXPECTED`)
        assert.deepEqual(
          res.meta.map((m) => m.name),
          expected,
          `${key}: columns`,
        )
        if (!MAY_BE_EMPTY.has(key)) assert.ok(res.data.length > 0, `${key}: no rows (${JSON.stringify(variables)})`)
        if (target.format === 0) {
          assert.match(res.meta[0]!.type, /^DateTime/, `${key}: a time series needs a DateTime first column`)
          const times = res.data.map((r) => String(r.time))
          assert.deepEqual(times, [...times].sort(), `${key}: rows must be sorted by time`)
        }
        covered.add(key)
        out.set(`${p.title}/${target.refId}`, res.data)
      }
    }
    return out
  }
  const reports = new Map<string, RunReport>()
  for (const r of runs) reports.set(r.runId, await new ClickHouseReadModel(ch).runReport(r.runId))

  // -- live run, once per run -------------------------------------------------
  const live = byUid('benchstream-live')
  const listed = await variable(live, 'run', {})
  for (const r of runs) assert.ok(listed.includes(r.runId), `$run lists ${r.runId}`)
  for (const r of runs) {
    const ops = await variable(live, 'op', { run: r.runId })
    assert.deepEqual([...ops].sort(), r.ops, `$op of ${r.runId}`)
    const res = await panels(live, { run: r.runId, op: ops })
    const one = (key: string): Row => res.get(key)?.[0] ?? assert.fail(`no row for ${key}`)

    assert.equal(num(one('Operations/A').operations), r.sentEvents, 'operations so far = events the drivers sent')
    const [merged] = await queryRows<{ p99: number }>(
      ch,
      'SELECT bs_quantile(0.99, sumMap(hist)) AS p99 FROM benchstream.op_windows WHERE run_id = {id:String}',
      { id: r.runId },
    )
    const [exact] = await queryRows<{ p99: number }>(
      ch,
      'SELECT arraySort(groupArray(latency_us))[bs_rank(0.99, count())] AS p99 FROM benchstream.ops ' +
        'WHERE run_id = {id:String}',
      { id: r.runId },
    )
    const p99 = num(one('p99 latency/A').p99_us)
    assert.equal(p99, merged!.p99, 'stat p99 = bs_quantile over the merged histograms')
    assert.ok(
      Math.abs(p99 - exact!.p99) <= Math.max(0.01 * exact!.p99, 0.5),
      `stat p99 ${p99} within 1% of the exact ${exact!.p99}`,
    )
    const [exactIntended] = await queryRows<{ p99: number }>(
      ch,
      'SELECT arraySort(groupArray(intended_us))[bs_rank(0.99, count())] AS p99 FROM benchstream.ops ' +
        'WHERE run_id = {id:String}',
      { id: r.runId },
    )
    const intendedP99 = num(one('Intended p99/A').intended_p99_us)
    assert.ok(intendedP99 >= p99, `intended p99 ${intendedP99} is at least the measured ${p99}`)
    assert.ok(
      Math.abs(intendedP99 - exactIntended!.p99) <= Math.max(0.01 * exactIntended!.p99, 0.5),
      `stat intended p99 ${intendedP99} within 1% of the exact ${exactIntended!.p99}`,
    )
    // Current throughput: the closed windows of the last 10 s before the newest one, recomputed here from the windows.
    const perWindow = await queryRows<{ ws: string; n: string }>(
      ch,
      'SELECT toUnixTimestamp64Milli(window_start) AS ws, sum(count) AS n FROM benchstream.op_windows ' +
        'WHERE run_id = {id:String} GROUP BY ws ORDER BY ws',
      { id: r.runId },
    )
    const newest = Math.max(...perWindow.map((w) => Number(w.ws)))
    const recent = perWindow.filter((w) => Number(w.ws) < newest && Number(w.ws) >= newest - 10_000)
    const current = one('Current throughput/A').ops_per_s
    if (recent.length === 0) assert.equal(current, null, 'current throughput of a one-window run')
    else
      close(
        num(current),
        (recent.reduce((a, w) => a + Number(w.n), 0) * 1000) / (newest - Number(recent[0]!.ws)),
        'current throughput',
      )
    assert.equal(num(one('Clients/A').clients), r === baseline ? 1 : 2)
    assert.equal(num(one('Errors/A').errors), 0)
    const hitRatio = num(one('Cache-hit ratio/A').hit_ratio)
    assert.ok(hitRatio > 0 && hitRatio < 1, `client hit ratio ${hitRatio}`)

    // Per-client throughput adds up to the total in every bucket; the per-op series too.
    const total = new Map((res.get('Throughput/B') ?? []).map((row) => [String(row.time), num(row.total)]))
    const sumBy = (rows: Row[]): Map<string, number> =>
      rows.reduce(
        (m, row) => m.set(String(row.time), (m.get(String(row.time)) ?? 0) + num(row.ops_per_s)),
        new Map<string, number>(),
      )
    for (const [series, rows] of [
      ['per client', res.get('Throughput per client/A') ?? []],
      ['per operation', res.get('Throughput/A') ?? []],
    ] as const) {
      const sums = sumBy(rows)
      assert.deepEqual([...sums.keys()], [...total.keys()], `${series}: same buckets as the total`)
      for (const [time, v] of sums) close(v, total.get(time)!, `${series} at ${time}`)
    }
    // With 1 s buckets and 1 s windows the rates add back up to the operations.
    if (windowS === 1)
      close(
        [...total.values()].reduce((a, b) => a + b, 0),
        r.sentEvents,
        'sum of the total series',
      )
    const targets = new Set((res.get('Throughput/B') ?? []).map((row) => row.target))
    assert.deepEqual(
      [...targets],
      [r === baseline ? 2500 : null],
      'target line: the run target, absent when unthrottled',
    )

    // One bucket over the whole run: the panels reduce to whole-run figures computed another way.
    const whole = await panels(live, { run: r.runId, op: ops }, { intervalMs: 315_360_000_000 })
    const summary = await queryRows<{ op: string; p50_us: number; p99_us: number; p999_us: number }>(
      ch,
      'SELECT op, p50_us, p99_us, p999_us FROM benchstream.run_summary WHERE run_id = {id:String} ORDER BY op',
      { id: r.runId },
    )
    assert.deepEqual(
      (whole.get('Latency percentiles/A') ?? []).map((row) => [row.op, row.p50, row.p99, row['p99.9']]),
      summary.map((s) => [s.op, s.p50_us, s.p99_us, s.p999_us]),
    )
    const samples = await queryRows<{ client_id: string; name: string; value: number }>(
      ch,
      'SELECT client_id, name, value FROM benchstream.server_metrics WHERE run_id = {id:String} ORDER ' +
        'BY client_id, name, at',
      { id: r.runId },
    )
    const growth = (name: string): number => {
      let sum = 0
      for (const client of new Set(samples.map((s) => s.client_id))) {
        const v = samples.filter((s) => s.client_id === client && s.name === name).map((s) => s.value)
        sum += v[v.length - 1]! - v[0]!
      }
      return sum
    }
    const serverRows = whole.get('Cache-hit ratio (server)/A') ?? []
    assert.equal(serverRows.length, 1)
    assert.equal(serverRows[0]!.source, 'memory')
    close(
      num(serverRows[0]!.hit_ratio),
      growth('cache_hits') / (growth('cache_hits') + growth('cache_misses')),
      'server-side hit ratio over the run',
    )
    // The run report carries the same server-side figure.
    const serverCache = reports.get(r.runId)!.serverCache
    assert.deepEqual(
      serverCache.map((c) => [c.source, c.hits, c.misses]),
      [['memory', growth('cache_hits'), growth('cache_misses')]],
    )
    close(serverCache[0]!.ratio!, num(serverRows[0]!.hit_ratio), 'report server cache-hit ratio = panel')
  }

  // -- compare ----------------------------------------------------------------
  const compare = byUid('benchstream-compare')
  for (const name of ['baseline', 'candidate']) {
    const choices = await variable(compare, name, {})
    for (const r of runs) assert.ok(choices.includes(r.runId), `$${name} lists ${r.runId}`)
  }
  const cmp = await panels(compare, { baseline: baseline.runId, candidate: candidate.runId, step: '1' })
  const rows = cmp.get('Per measurement: baseline vs candidate/A') ?? []
  const base = reports.get(baseline.runId)!
  const cand = reports.get(candidate.runId)!
  // Intended latency is a column beside each measurement, not a row of its own.
  const names = [
    ...new Set(
      [...base.measurements, ...cand.measurements].map((m) => m.name).filter((n) => !n.startsWith('Intended-')),
    ),
  ]
  assert.deepEqual(
    rows.map((row) => row.measurement),
    ['OVERALL', ...names],
    'one row per YCSB measurement, OVERALL first, YCSB order',
  )
  const overall = rows[0]!
  assert.equal(num(overall.baseline_ops_per_s), base.throughputOpsPerSec, 'baseline throughput = run report')
  assert.equal(num(overall.candidate_ops_per_s), cand.throughputOpsPerSec, 'candidate throughput = run report')
  close(
    num(overall.ops_per_s_change_pct),
    ((cand.throughputOpsPerSec - base.throughputOpsPerSec) / base.throughputOpsPerSec) * 100,
    'throughput change %',
  )
  for (const row of rows.slice(1)) {
    for (const [side, report] of [
      ['baseline', base],
      ['candidate', cand],
    ] as const) {
      const m = report.measurements.find((x) => x.name === row.measurement)
      if (m === undefined) {
        assert.equal(row[`${side}_ops_per_s`], null)
        continue
      }
      close(num(row[`${side}_ops_per_s`]), (m.operations * 1000) / report.runtimeMs, `${side} ${m.name} ops/s`)
      close(num(row[`${side}_avg_us`]), m.averageLatencyUs, `${side} ${m.name} avg`)
      assert.equal(num(row[`${side}_p95_us`]), m.p95LatencyUs, `${side} ${m.name} p95`)
      assert.equal(num(row[`${side}_p99_us`]), m.p99LatencyUs, `${side} ${m.name} p99`)
      const intended = report.measurements.find((x) => x.name === `Intended-${m.name}`)
      if (intended !== undefined)
        assert.equal(
          num(row[`${side}_intended_p99_us`]),
          intended.p99LatencyUs,
          `${side} ${m.name} intended p99 = report's Intended-${m.name}`,
        )
      else
        assert.ok(num(row[`${side}_intended_p99_us`]) >= m.p99LatencyUs, `${side} ${m.name} intended p99 (unthrottled)`)
    }
  }
  // Aligned series start at t=0 for both runs; with 1 s steps and windows their rates add up to the operations.
  const aligned = cmp.get('Throughput since start/A') ?? []
  assert.equal(num(aligned[0]!.t_s), 0)
  for (const [side, r] of [
    ['baseline', baseline],
    ['candidate', candidate],
  ] as const) {
    assert.notEqual(aligned[0]![side], null, `${side} has a value at t=0`)
    if (windowS === 1)
      close(
        aligned.reduce((a, row) => a + (row[side] === null ? 0 : num(row[side])), 0),
        r.sentEvents,
        `${side} aligned total`,
      )
  }

  // -- sweep ------------------------------------------------------------------
  const sweep = byUid('benchstream-sweep')
  assert.deepEqual(await variable(sweep, 'label', {}), [
    'alerting',
    'point',
    'sweep',
    'sweep.param',
    'threads',
    'version',
  ])
  const workloads = await variable(sweep, 'workload', { label: 'threads' })
  assert.equal(workloads[0], '*')
  assert.ok(workloads.length >= 2)
  for (const [label, workload] of [
    ['threads', '*'],
    ['version', workloads[1]!],
  ] as const) {
    const res = await panels(sweep, { label, workload })
    const table = res.get('Runs by ${label}/A') ?? []
    const expectedOrder = label === 'threads' ? ['4', '16'] : ['0.98.0', '0.98.4'] // numeric order: 4 before 16
    assert.deepEqual(
      table.map((row) => row.value),
      expectedOrder,
      `${label}: runs sorted by value`,
    )
    assert.deepEqual(
      table.map((row) => row.run_id),
      [baseline.runId, candidate.runId],
    )
    for (const row of table)
      assert.equal(
        num(row.ops_per_s),
        reports.get(String(row.run_id))!.throughputOpsPerSec,
        `${label}: sweep throughput of ${String(row.run_id)} = run report`,
      )
    assert.deepEqual(
      (res.get(`Throughput by \${label}/A`) ?? []).map((row) => [row.value, num(row.ops_per_s)]),
      table.map((row) => [row.value, num(row.ops_per_s)]),
    )
    assert.deepEqual(
      (res.get(`p99 latency by \${label}/A`) ?? []).map((row) => row.value),
      expectedOrder,
    )

    // Groups of one run each: median, smallest and largest are the run's own figures.
    const groups = res.get('Groups of repetitions: median and range/A') ?? []
    for (const [group, r] of [
      [`gb-${stamp}`, baseline],
      [`gc-${stamp}`, candidate],
    ] as const) {
      const report = reports.get(r.runId)!
      const overall =
        groups.find((g) => g.group_id === group && g.op === 'OVERALL') ?? assert.fail(`no OVERALL row of ${group}`)
      assert.equal(num(overall.runs), 1)
      for (const k of ['median_ops_per_sec', 'min_ops_per_sec', 'max_ops_per_sec'])
        close(num(overall[k]), report.throughputOpsPerSec, `${group} ${k}`)
      const read = groups.find((g) => g.group_id === group && g.op === 'READ') ?? assert.fail(`no READ row of ${group}`)
      const readP99 = report.measurements.find((m) => m.name === 'READ')!.p99LatencyUs
      for (const k of ['median_p99_us', 'min_p99_us', 'max_p99_us'])
        assert.equal(num(read[k]), readP99, `${group} READ ${k} = the run report's`)
    }
    // The sweep: points in numeric order, each the run's report; the curve the same numbers.
    const points = res.get('Sweep points/A') ?? []
    assert.deepEqual(
      points.map((row) => [row.sweep_id, row.param, row.point, row.run_id]),
      [
        [sweepId, 'threads', '4', baseline.runId],
        [sweepId, 'threads', '16', candidate.runId],
      ],
    )
    for (const row of points)
      close(
        num(row.ops_per_sec),
        reports.get(String(row.run_id))!.throughputOpsPerSec,
        `sweep point ${String(row.point)} throughput`,
      )
    assert.deepEqual(
      (res.get('Sweep curve: throughput/A') ?? []).map((row) => [num(row.x), num(row.ops_per_sec)]),
      points.map((row) => [Number(row.point), num(row.ops_per_sec)]),
    )
    assert.deepEqual(
      (res.get('Sweep curve: p99/A') ?? []).map((row) => [num(row.x), num(row.p99_us)]),
      points.map((row) => [Number(row.point), num(row.p99_us)]),
    )
  }

  // -- alerts -----------------------------------------------------------------
  // Two rules that the stalled run breaks from its first judged window; the second one silenced for this run.
  const rules: AlertRule[] = [
    { type: 'below_target', name: 'DashBelowTarget', severity: 'warning', fraction: 0.5, windows: 1 },
    { type: 'below_target', name: 'DashBelowTargetQuiet', severity: 'info', fraction: 0.5, windows: 1 },
  ]
  const silence: SilenceSpec = {
    id: '0b5c8f6e-1d3a-4c2b-9e7f-aa11bb22cc33',
    matchers: [
      { name: 'alertname', value: 'DashBelowTargetQuiet', isEqual: true },
      { name: 'run_id', value: alertRun.runId, isEqual: true },
    ],
    startsAtMs: 0,
    endsAtMs: undefined,
    createdBy: 'e2e',
    comment: '',
    updatedAtMs: 0,
  }
  const completeness = { allowedLatenessMs: 2000, endGraceMs: 5000, partitionIdleMs: 10_000 }
  const clock = { now: alertRunEndMs + 1 }
  const engine = buildAlerts(
    { rules, intervalMs: 1000, completeness, lookbackS: 3600, maxWindowsPerQuery: 600 },
    {
      source: new ClickHouseAlertSource(ch),
      store: new ClickHouseAlertStore(ch),
      notifiers: [],
      silences: { current: async () => [silence] },
      now: () => clock.now,
    },
  )
  interface AlertRow {
    rule: string
    state: string
    starts_ms: string
    ends_ms: string | null
    summary: string
    silenced_by: string
  }
  const alertRows = async (): Promise<AlertRow[]> =>
    queryRows<AlertRow>(
      ch,
      `SELECT rule, state, toUnixTimestamp64Milli(starts_at) AS starts_ms, toUnixTimestamp64Milli(ends_at) AS ends_ms,
              summary, silenced_by
       FROM benchstream.alerts WHERE run_id = {id:String} ORDER BY rule, state`,
      { id: alertRun.runId },
    )
  // Before the run's end grace is over only windows the watermark has passed are judged: both rules fire.
  await engine.tick()
  const firingRows = await alertRows()
  assert.deepEqual(
    firingRows.map((r) => [r.rule, r.state, r.silenced_by]),
    [
      ['DashBelowTarget', 'firing', ''],
      ['DashBelowTargetQuiet', 'firing', silence.id],
    ],
    engine.stats.lastError,
  )
  const startsMs = Number(firingRows[0]!.starts_ms)
  const allDashboards = generateDashboards().map(
    (g) => JSON.parse(readFileSync(path.join(generatedDir(), g.file), 'utf8')) as JsonDashboard,
  )
  const annotationVariables: Record<string, ExpandContext['variables']> = {
    'benchstream-live': { run: alertRun.runId },
    'benchstream-compare': { baseline: baseline.runId, candidate: alertRun.runId },
    'benchstream-sweep': { label: 'alerting', workload: '*' },
    'benchstream-profiles': { run: alertRun.runId, baseline: baseline.runId, candidate: candidate.runId },
  }
  /** Every dashboard's alert annotations for the stalled run: the same rows on each. */
  const annotations = async (): Promise<Row[]> => {
    let first: Row[] | undefined
    for (const d of allDashboards) {
      const a = d.annotations.list.find((x) => x.name === 'Alerts') ?? assert.fail(`${d.uid} has no Alerts annotation`)
      const key = `${d.uid}/annotation/Alerts`
      const variables = annotationVariables[d.uid] ?? assert.fail(`no variables for ${key}`)
      const res = await execute(ch, expandQuery(a.target.rawSql, { ...range, variables }))
      assert.deepEqual(
        res.meta.map((m) => m.name),
        EXPECTED[key],
        key,
      )
      assert.match(res.meta[0]!.type, /^DateTime64/, `${key}: time is a time`)
      assert.match(res.meta[1]!.type, /^DateTime64/, `${key}: timeEnd is a time`)
      covered.add(key)
      // A firing alert's end is "now", which moves between two queries.
      const fixed = (rows: Row[]): Row[] => rows.map((r) => ({ ...r, timeEnd: undefined }))
      if (first === undefined) first = res.data
      else assert.deepEqual(fixed(res.data), fixed(first), `${key}: the same alerts as the live dashboard's`)
    }
    return first ?? []
  }
  const live2 = byUid('benchstream-live')
  const alertPanels = async (): Promise<Map<string, Row[]>> =>
    panels(live2, { run: alertRun.runId, op: ['READ', 'UPDATE'] }, {}, ALERT_PANELS)
  const timeline = (rows: Row[], rule: string): Array<[number, number]> =>
    rows.filter((r) => r.rule === rule).map((r) => [utcMs(r.time), num(r.state)])
  const [runStart] = await queryRows<{ ms: string }>(
    ch,
    'SELECT toUnixTimestamp64Milli(started_at) AS ms FROM benchstream.runs WHERE run_id = {id:String}',
    { id: alertRun.runId },
  )
  const runStartMs = Number(runStart!.ms)

  // While firing.
  let anno = await annotations()
  assert.deepEqual(
    anno.map((r) => [utcMs(r.time), r.title, r.text, r.tags]),
    [
      [startsMs, 'DashBelowTarget (ALL): firing', firingRows[0]!.summary, 'DashBelowTarget,ALL,warning'],
      [
        startsMs,
        'DashBelowTargetQuiet (ALL): firing, silenced',
        firingRows[1]!.summary,
        'DashBelowTargetQuiet,ALL,info,silenced',
      ],
    ],
  )
  assert.ok(
    anno.every((r) => utcMs(r.timeEnd) >= startsMs),
    'a firing alert spans from its start to now',
  )
  let ap = await alertPanels()
  assert.deepEqual(
    (ap.get('Firing now/A') ?? []).map((r) => [r.rule, r.op, r.severity, utcMs(r.since), r.silenced_by]),
    [
      ['DashBelowTarget', 'ALL', 'warning', startsMs, ''],
      ['DashBelowTargetQuiet', 'ALL', 'info', startsMs, silence.id],
    ],
  )
  const st = ap.get('Alert state per rule/A') ?? []
  assert.deepEqual(timeline(st, 'DashBelowTarget'), [
    [runStartMs, ALERT_STATE_VALUES.ok],
    [startsMs, ALERT_STATE_VALUES.firing],
  ])
  assert.deepEqual(timeline(st, 'DashBelowTargetQuiet'), [
    [runStartMs, ALERT_STATE_VALUES.ok],
    [startsMs, ALERT_STATE_VALUES.silenced],
  ])

  // The run's end grace over: the run is judged to its end, and its end resolves both.
  clock.now = alertRunEndMs + completeness.endGraceMs + 1
  await engine.tick()
  const resolvedRows = (await alertRows()).filter((r) => r.state === 'resolved')
  assert.deepEqual(
    resolvedRows.map((r) => [r.rule, Number(r.ends_ms), r.silenced_by]),
    [
      ['DashBelowTarget', alertRunEndMs, ''],
      ['DashBelowTargetQuiet', alertRunEndMs, silence.id],
    ],
  )
  anno = await annotations()
  assert.deepEqual(
    anno.map((r) => [utcMs(r.time), utcMs(r.timeEnd), r.title]),
    [
      [startsMs, alertRunEndMs, 'DashBelowTarget (ALL): resolved'],
      [startsMs, alertRunEndMs, 'DashBelowTargetQuiet (ALL): resolved, silenced'],
    ],
  )
  ap = await alertPanels()
  assert.deepEqual(ap.get('Firing now/A'), [], 'nothing fires any more')
  assert.deepEqual(timeline(ap.get('Alert state per rule/A') ?? [], 'DashBelowTarget'), [
    [runStartMs, ALERT_STATE_VALUES.ok],
    [startsMs, ALERT_STATE_VALUES.firing],
    [alertRunEndMs, ALERT_STATE_VALUES.ok],
  ])

  // Every query of every dashboard ran at least once.
  const all = dashboards.flatMap((d) => [
    ...d.templating.list.filter((v) => v.type === 'query').map((v) => `${d.uid}/$${v.name}`),
    ...d.panels
      .flatMap((p) => [p, ...(p.panels ?? [])])
      .flatMap((p) => (p.targets ?? []).map((tg) => `${d.uid}/${p.title}/${tg.refId}`)),
  ])
  all.push(...allDashboards.flatMap((d) => d.annotations.list.map((a) => `${d.uid}/annotation/${a.name}`)))
  assert.deepEqual(
    all.filter((k) => !covered.has(k)),
    [],
    'queries not executed',
  )
  assert.deepEqual(
    Object.keys(EXPECTED).filter((k) => !all.includes(k)),
    [],
    'EXPECTED names queries that no dashboard has',
  )
})

/**
 * Release A vs release B end to end: `benchstream run --repeat 3 --group`
 * with two clients (two processes) on the memory binding -> Kafka ->
 * server -> ClickHouse, then `benchstream compare` through the server's API.
 *
 * Two groups of 3 repeated runs x 2 clients, throttled (at target), run side
 * by side: A, and D whose scans take 10 ms more (memory.delay.scan, the only
 * difference; a scan of 20 short rows takes well under 1 ms here). This checks
 * the wiring with an effect no machine noise can make or hide: SCAN's p50 is a
 * regression in every run, never another verdict; throughput is at target;
 * the values are the runs' own reports; the comparison is symmetric; a run
 * that cannot reach its target is flagged below target. What the other
 * operations' verdicts are is printed, not asserted: how often identical
 * setups are called different is a property of the statistics, proved on
 * seeded samples in test/unit/compare-false-positives.test.ts.
 */
import assert from 'node:assert/strict'
import fs from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import type { ReleaseComparison } from '../../schemas/compare-api.v1.js'
import type { RunReport } from '../../schemas/run-reports-api.v1.js'
import type { RunInfo } from '../../schemas/runs-api.v1.js'
import { queryRows } from '../../services/adapters/clickhouse/client.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { PROFILE_FRAMES } from '../../services/core/compare/profile-changes.js'
import { frameShareChanges } from '../../services/core/profiles/flame-graph.js'
import { normalizeHiddenClasses, parseFolded, type Folded } from '../../services/core/profiles/folded.js'
import { startServer } from '../../services/server/main.js'
import { cli } from '../helpers/cli.js'
import { testEnv, waitFor } from '../helpers/env.js'
import { SCAN_MIX } from '../helpers/driven-run.js'

const SECONDS = 3
const PROFILES = path.join(repoRoot(), 'test', 'fixtures', 'profiles', 'async-profiler-4.6')
const TARGET = 250
/** What D's scans take on top: a scan of up to 20 rows in the memory binding takes well under a millisecond. */
const SCAN_DELAY_US = 10_000

test(
  'compare: scans 10 ms slower are a regression in SCAN p50, throughput at target, values from the reports; ' +
    'symmetric; below target flagged',
  { timeout: 600_000 },
  async (t) => {
    const te = testEnv()
    t.after(te.cleanup)
    const svc = await startServer(te.env, { api: true })
    t.after(() => svc.stop())
    const stamp = Date.now().toString(36)

    /** A group of 3 repetitions with two clients, each client its own process. */
    const group = async (name: string, version: string, extra: string[] = []): Promise<string> => {
      const g = `${name}-${stamp}`
      const client = (id: string) =>
        cli(te.env, [
          'run',
          ...SCAN_MIX,
          ...extra,
          '-threads',
          '2',
          '-target',
          String(TARGET / 2),
          '--seconds',
          String(SECONDS),
          '-db',
          'memory',
          '--repeat',
          '3',
          '--group',
          g,
          '--client-id',
          id,
          '--label',
          `version=${version}`,
        ])
      const ran = await Promise.all([client('c1'), client('c2')])
      for (const r of ran) {
        assert.equal(r.code, 0, r.stderr)
        assert.equal(
          (r.stdout.match(/^\[OVERALL\], RunTime\(ms\)/gm) ?? []).length,
          3,
          'three reports, one per repetition',
        )
        assert.match(r.stderr, new RegExp(`repetition 3 of 3: run ${g}-3 in group ${g}`))
      }
      return g
    }
    // The two groups run at the same time, so a shared machine's drift hits both alike.
    const started = Date.now()
    const [a, d] = await Promise.all([
      group('a', '1.0'),
      group('d', '1.3', ['-p', `memory.delay.scan=${SCAN_DELAY_US}`]),
    ])
    process.stdout.write(
      `# 2 groups x 3 runs x 2 clients, side by side, in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
    )

    const api = async <T>(url: string): Promise<{ status: number; body: T }> => {
      const r = await svc.api!.inject({ method: 'GET', url })
      return { status: r.statusCode, body: r.json<T>() }
    }
    // Every run counted: both clients ended and every event they sent is in the windows.
    const reports = new Map<string, RunReport>()
    for (const grp of [a, d]) {
      for (let k = 1; k <= 3; k++) {
        const id = `${grp}-${k}`
        reports.set(
          id,
          await waitFor(`run ${id} counted`, async () => {
            const r = await api<RunReport>(`/api/v1/runs/${id}/report`)
            const done =
              r.status === 200 &&
              r.body.run?.clients_ended === 2 &&
              r.body.completeness.counted === r.body.completeness.sent
            return done ? r.body : undefined
          }),
        )
      }
    }

    // The runs list: filtered by group and label; an unknown parameter is refused.
    const listed = await api<{ runs: RunInfo[] }>(`/api/v1/runs?group=${a}`)
    assert.deepEqual(
      listed.body.runs.map((r) => [r.run_id, r.repeat, r.clients]).sort((x, y) => Number(x[1]) - Number(y[1])),
      [
        [`${a}-1`, 1, 2],
        [`${a}-2`, 2, 2],
        [`${a}-3`, 3, 2],
      ],
    )
    const run1 = listed.body.runs.find((r) => r.repeat === 1)!
    assert.equal(run1.group_id, a)
    assert.equal(run1.properties.recordcount, '1000')
    assert.equal(run1.properties.scanproportion, '0.2')
    assert.equal(run1.properties.maxexecutiontime, String(SECONDS))
    const byLabel = await api<{ runs: RunInfo[] }>('/api/v1/runs?label=version=1.3')
    assert.deepEqual(byLabel.body.runs.map((r) => r.run_id).sort(), [`${d}-1`, `${d}-2`, `${d}-3`])
    const both = await api<{ runs: RunInfo[] }>(`/api/v1/runs?label=version=1.3&group=${a}`)
    assert.deepEqual(both.body.runs, [])
    const typo = await api<{ code: string; message: string }>('/api/v1/runs?lable=version=1.3')
    assert.equal(typo.status, 400)
    assert.match(typo.body.message, /lable/)
    const cliRuns = await cli(te.env, ['runs', '--group', d, '--label', 'version=1.3', '--json'])
    assert.equal(cliRuns.code, 0, cliRuns.stderr)
    assert.equal((JSON.parse(cliRuns.stdout) as RunInfo[]).length, 3)

    // Not comparable without --force: the scan delay is a setting, and it is named.
    const refused = await api<{ code: string; message: string }>(
      `/api/v1/compare?baseline=group:${a}&candidate=group:${d}`,
    )
    assert.equal(refused.status, 409)
    assert.equal(refused.body.code, 'BS_ERR_NOT_COMPARABLE')
    assert.match(refused.body.message, new RegExp(`property memory\\.delay\\.scan: \\(unset\\) vs ${SCAN_DELAY_US}`))

    const verdicts = (cmp: ReleaseComparison): string =>
      cmp.figures
        .map(
          (f) =>
            `${f.label}: ${f.verdict} (p=${f.pValue?.toPrecision(2)}, q=${f.adjustedPValue?.toPrecision(2)}) ` +
            `${JSON.stringify(f.baseline.values)} -> ${JSON.stringify(f.candidate.values)}`,
        )
        .join('\n#   ')
    const slow = (await api<ReleaseComparison>(`/api/v1/compare?baseline=group:${a}&candidate=version=1.3&force=true`))
      .body
    process.stdout.write(`# A vs D (scan +${SCAN_DELAY_US / 1000} ms):\n#   ${verdicts(slow)}\n`)
    assert.equal(slow.forced, true)
    assert.deepEqual(
      slow.differences.map((x) => x.name),
      ['property memory.delay.scan'],
    )
    // Every SCAN figure that is flagged is a regression; the other operations' verdicts are printed
    // above (a client thread held in a slow scan changes how the others overlap, in either direction).
    const scanFlagged = slow.figures.filter((f) => f.op === 'SCAN' && f.verdict === 'improvement')
    assert.deepEqual(
      scanFlagged.map((f) => f.label),
      [],
      'no SCAN figure improves',
    )
    // The median of every run moved by 10 ms against well under 1 ms: a regression whatever the machine does.
    const scanP50 = slow.figures.find((x) => x.op === 'SCAN' && x.figure === 'p50')!
    assert.equal(scanP50.verdict, 'regression', scanP50.reason)
    assert.equal(scanP50.samples, 'repetitions')
    assert.equal(scanP50.method, 'welch-t')
    assert.ok(scanP50.changePercent! > 1000, `SCAN p50 +${scanP50.changePercent}%`)
    assert.ok(
      scanP50.candidate.values.every((v) => v! >= SCAN_DELAY_US),
      'every run of D has its scans 10 ms slower',
    )
    for (const f of slow.figures.filter((x) => x.figure === 'error_rate'))
      assert.equal(f.verdict, 'no significant change', `${f.label}: no errors on either side`)
    // Throttled runs: throughput is judged against the target, never as a change. Whether a side kept its target
    // depends on the machine (a 3 s run on a busy machine can fall 1% short, and then compare must say so), so it
    // is not assumed: the throughput verdict is the candidate side's status, whichever it is (the rule itself is
    // unit-tested in compare-throttled).
    const throttle = slow.workloads[0]!.throttle!
    const status = { baseline: throttle.baseline.status, candidate: throttle.candidate.status }
    process.stdout.write(`# throttled: baseline ${status.baseline}, candidate ${status.candidate}\n`)
    for (const side of [status.baseline, status.candidate]) assert.ok(side === 'at target' || side === 'below target')
    // An operation's share of a target met carries no signal (at target); when the candidate fell short, each
    // operation's throughput keeps its statistical verdict (release.ts), so only OVERALL is pinned then.
    if (status.candidate === 'at target')
      for (const f of slow.figures.filter((x) => x.figure === 'throughput'))
        assert.equal(f.verdict, 'at target', `${f.label}: ${f.reason}`)
    assert.equal(
      slow.figures.find((x) => x.op === 'OVERALL' && x.figure === 'throughput')!.verdict,
      status.candidate,
      "the throughput verdict is the candidate side's",
    )
    // The values shown are each run's own report (merged over its two clients).
    const scanP99 = slow.figures.find((x) => x.op === 'SCAN' && x.figure === 'p99')!
    assert.deepEqual(
      scanP99.baseline.values,
      [1, 2, 3].map((k) => reports.get(`${a}-${k}`)!.measurements.find((m) => m.name === 'SCAN')!.p99LatencyUs),
    )
    assert.deepEqual(
      scanP99.candidate.values,
      [1, 2, 3].map((k) => reports.get(`${d}-${k}`)!.measurements.find((m) => m.name === 'SCAN')!.p99LatencyUs),
    )
    const overall = slow.figures.find((x) => x.op === 'OVERALL' && x.figure === 'throughput')!
    assert.deepEqual(
      overall.candidate.values,
      [1, 2, 3].map((k) => reports.get(`${d}-${k}`)!.throughputOpsPerSec),
    )
    // Grafana's view of the groups (error bars): the median of the runs' own figures and their range.
    const [bars] = await queryRows<{ runs: string; median_p99_us: number; min_p99_us: number; max_p99_us: number }>(
      svc.ch,
      `SELECT runs, median_p99_us, min_p99_us, max_p99_us FROM benchstream.group_op_figures WHERE ` +
        `group_id = {g:String} AND op = 'SCAN'`,
      { g: d },
    )
    const p99s = scanP99.candidate.values.filter((v) => v !== null)
    assert.equal(Number(bars!.runs), 3)
    assert.deepEqual(
      [bars!.median_p99_us, bars!.min_p99_us, bars!.max_p99_us],
      [scanP99.candidate.center, Math.min(...p99s), Math.max(...p99s)],
    )

    // The test is symmetric: D vs A has A vs D's p-values, and every finding turns around.
    const mirrored = (
      await api<ReleaseComparison>(`/api/v1/compare?baseline=group:${d}&candidate=group:${a}&force=true`)
    ).body
    for (const z of mirrored.figures) {
      const o = slow.figures.find((q) => q.label === z.label)!
      // Throughput of throttled runs is about the candidate keeping its target, not a change between the sides.
      if (z.figure === 'throughput') continue
      if (z.pValue === null || o.pValue === null) assert.equal(z.pValue, o.pValue, z.label)
      else assert.ok(Math.abs(z.pValue - o.pValue) < 1e-9, `${z.label}: p ${z.pValue} vs ${o.pValue}`)
      const turned: Record<string, string> = { regression: 'improvement', improvement: 'regression' }
      // Only a change right at the minimum effect may differ: +x% one way is -x/(1+x)% the other.
      const nearMinimum =
        Math.abs(Math.abs(z.effectPercent ?? 0) - mirrored.minEffect * 100) < 0.05 * mirrored.minEffect * 100
      if (z.verdict !== (turned[o.verdict] ?? o.verdict))
        assert.ok(nearMinimum, `${z.label}: ${o.verdict} one way, ${z.verdict} the other`)
    }

    // Where the time went: real async-profiler output attached to one run of each side (CPU
    // sampling on the baseline, itimer on the candidate: different shares of the same broker's
    // frames). compare's profile section is frameShareChanges of exactly those stacks.
    const [cpu, itimer] = ['kafka-broker-cpu-10ms.collapsed', 'kafka-broker-itimer-10ms.collapsed'].map((f) =>
      path.join(PROFILES, f),
    ) as [string, string]
    for (const [run, file] of [
      [`${a}-1`, cpu],
      [`${d}-2`, itimer],
    ] as const) {
      const attached = await cli(te.env, ['profile', 'attach', '--run-id', run, '--label', 'host=broker', file])
      assert.equal(attached.code, 0, attached.stderr)
    }
    const withProfiles = (
      await api<ReleaseComparison>(`/api/v1/compare?baseline=group:${a}&candidate=group:${d}&force=true`)
    ).body
    // attach folds JVM hidden-class names (Lambda$1198.0x00007f..) as it stores them: so does the reference.
    const stacksIn = (f: string): Folded =>
      normalizeHiddenClasses(parseFolded(fs.readFileSync(f, 'utf8'), f).stacks).stacks
    const expected = frameShareChanges(stacksIn(cpu), stacksIn(itimer), PROFILE_FRAMES)
    assert.ok(withProfiles.profiles !== null, 'both sides have profile samples')
    assert.deepEqual(
      { ...withProfiles.profiles, diffFlameGraph: undefined },
      { ...expected, diffFlameGraph: undefined },
    )
    assert.ok(expected.self.length > 0 && expected.baselineSamples > 100, `${expected.baselineSamples} samples`)
    assert.equal(
      withProfiles.profiles.diffFlameGraph,
      `/profiles?baseline=${encodeURIComponent(withProfiles.baseline.runs.join(','))}` +
        `&candidate=${encodeURIComponent(withProfiles.candidate.runs.join(','))}`,
    )
    assert.equal(
      (await api<ReleaseComparison>(`/api/v1/compare?baseline=${a}-2&candidate=${a}-3`)).body.profiles,
      null,
      'no profiles on either side: no section',
    )

    // The Markdown a release email gets, from the command line through the server's API.
    const md = await cli(te.env, ['compare', `group:${a}`, `group:${d}`, '--force', '--format', 'markdown'])
    assert.equal(md.code, 0, md.stderr)
    process.stdout.write(
      `# markdown:\n${md.stdout
        .split('\n')
        .map((l) => `#   ${l}`)
        .join('\n')}\n`,
    )
    // The median moved for sure (asserted above); other rows are there with whatever verdict the data gives.
    assert.match(
      md.stdout,
      /^\| SCAN p50 \(µs\) \| [\d.]+ ± \d+% \| [\d.k]+ ± \d+% \| \+[\d.]+% \| regression \(p=[\d.e-]+ n=3\+3\) \|$/m,
    )
    assert.match(md.stdout, /^\| READ p99 \(µs\) \| [^|]+ \| [^|]+ \| [^|]+ \| [^|]+ \|$/m)
    assert.match(
      md.stdout,
      new RegExp(`^\\| OVERALL throughput \\(ops\\/s\\) \\| .* \\| ${status.candidate} .*\\|$`, 'm'),
    )
    assert.match(
      md.stdout,
      new RegExp(
        `\\*\\*Not comparable, compared with --force:\\*\\* ` +
          `property memory\\.delay\\.scan \\(unset\\) → ${SCAN_DELAY_US}`,
      ),
    )
    assert.match(md.stdout, /^#### Where the CPU time went: [\d,]+ baseline and [\d,]+ candidate profile samples/m)
    const top = expected.self[0]!
    assert.match(
      md.stdout,
      new RegExp(
        `^\\| self \\| .+ \\| ${top.baseline.toFixed(2).replace('.', '\\.')}% ` +
          `\\| ${top.candidate.toFixed(2).replace('.', '\\.')}% ` +
          `\\| ${top.change > 0 ? '\\+' : ''}${top.change.toFixed(2).replace('.', '\\.')} \\|$`,
        'm',
      ),
      'the frame whose self share changed most is a row',
    )
    // Decided (3 + 3 runs: every figure tested), so 0 above; a regression found fails a CI step when asked to.
    const gate = await cli(te.env, ['compare', `group:${a}`, `group:${d}`, '--force', '--fail-on-regression'])
    assert.equal(gate.code, 99, gate.stdout + gate.stderr)
    assert.match(gate.stdout, /^Regressed: .*SCAN p50 \+[\d,.]+%/m)
    const refusedCli = await cli(te.env, ['compare', `group:${a}`, `group:${d}`])
    assert.equal(refusedCli.code, 1)
    assert.match(
      refusedCli.stderr,
      /^benchstream: BS_ERR_NOT_COMPARABLE: the runs are not comparable: property memory\.delay\.scan/,
    )

    // Below target: one client that cannot keep 250 ops/s (reads take 20 ms, one thread).
    const slowRun = `slow-${stamp}`
    const below = await cli(te.env, [
      'run',
      ...SCAN_MIX,
      '-p',
      'memory.delay.read=20000',
      '-threads',
      '1',
      '-target',
      String(TARGET),
      '--seconds',
      String(SECONDS),
      '-db',
      'memory',
      '--run-id',
      slowRun,
      '--client-id',
      'c1',
      '--max-schedule-lag',
      '100000',
    ])
    assert.equal(below.code, 0, below.stderr)
    await waitFor(`run ${slowRun} counted`, async () => {
      const r = await api<RunReport>(`/api/v1/runs/${slowRun}/report`)
      return r.status === 200 &&
        r.body.run?.clients_ended === 1 &&
        r.body.completeness.counted === r.body.completeness.sent
        ? true
        : undefined
    })
    const short = (await api<ReleaseComparison>(`/api/v1/compare?baseline=group:${a}&candidate=${slowRun}&force=true`))
      .body
    const tp = short.figures.find((f) => f.op === 'OVERALL' && f.figure === 'throughput')!
    assert.equal(tp.verdict, 'below target', tp.reason)
    assert.match(tp.note ?? '', /^\d+\.\d% short of target 250 ops\/s$/)
    assert.equal(short.workloads[0]!.throttle!.candidate.status, 'below target')
    assert.equal(short.workloads[0]!.throttle!.baseline.status, status.baseline, 'the same runs, the same status')
  },
)

/**
 * The CLI against a running server, as a user drives it from a shell: the
 * driver in its own process, read commands that find the server through its
 * data directory, thresholds on the merged run, intended latency checked
 * against exact SQL over the raw events, complete output into a slow pipe,
 * and clear words when the data directory is locked.
 */
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { renameSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { queryRows } from '../../services/adapters/clickhouse/client.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { startServer } from '../../services/server/main.js'
import { testEnv, waitFor } from '../helpers/env.js'
import { joinRegExp } from '../helpers/regexp.js'

const BIN = path.join(repoRoot(), 'bin', 'benchstream.js')

interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs the CLI; with slowReaderMs, nothing is read from stdout for that long (the pipe fills up). */
function cli(env: Record<string, string>, args: string[], slowReaderMs = 0): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: repoRoot(),
    })
    const out: Buffer[] = []
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    if (slowReaderMs > 0) {
      child.stdout.pause()
      setTimeout(() => child.stdout.resume(), slowReaderMs)
    }
    child.stdout.on('data', (d: Buffer) => out.push(d))
    child.on('close', (code) => resolve({ code, stdout: Buffer.concat(out).toString(), stderr }))
  })
}

test(
  'driver, read commands and thresholds through a running server; ' + 'intended latency exact against raw events',
  async (t) => {
    const te = testEnv()
    t.after(te.cleanup)
    const svc = await startServer(te.env, { api: true })
    t.after(() => svc.stop())
    const runId = `cli-${Date.now()}`

    // A throttled run in its own process; --threshold waits for the merged run.
    const run = await cli(te.env, [
      'run',
      '-P',
      'workloads/workloada',
      '-p',
      'recordcount=1000',
      '-p',
      'operationcount=6000',
      '-threads',
      '2',
      '-target',
      '3000',
      '-db',
      'memory',
      '--run-id',
      runId,
      '--threshold',
      'OVERALL.operations==6000',
      '--threshold',
      'READ.max<60s',
    ])
    assert.equal(run.code, 0, run.stderr)
    assert.match(run.stderr, /thresholds \(run cli-\d+, all 1 clients merged\): all passed/)
    assert.match(run.stdout, /^\[Intended-READ\], Operations, \d+$/m)
    assert.match(run.stdout, /^\[BENCHSTREAM\], MaxScheduleLag\(ms\), [\d.]+$/m)

    // report finds the server by itself (server.json in the data directory).
    const text = await cli(te.env, ['report', runId])
    assert.equal(text.code, 0, text.stderr)
    assert.match(text.stdout, /^\[OVERALL\], RunTime\(ms\), \d+$/m)
    assert.ok(
      text.stdout.indexOf('[Intended-READ], Operations') > text.stdout.indexOf('[UPDATE], Operations'),
      'intended sections follow the measured ones',
    )
    const json = await cli(te.env, ['report', runId, '--json'])
    const report = JSON.parse(json.stdout) as {
      measurements: Array<{
        name: string
        operations: number
        p99LatencyUs: number
        p50LatencyUs: number
        maxLatencyUs: number
      }>
      run: { target: number }
    }
    assert.equal(report.run.target, 3000)
    // Intended percentiles from merged windows vs exact over the raw events (same rank rule).
    const exact = await queryRows<{ op: string; n: string; p50: number; p99: number; max: number }>(
      svc.ch,
      `
    SELECT op, count() AS n, arraySort(groupArray(intended_us)) AS s,
           s[bs_rank(0.5, length(s))] AS p50, s[bs_rank(0.99, length(s))] AS p99, max(intended_us) AS max
    FROM benchstream.ops WHERE run_id = {runId:String} AND status = 'OK' GROUP BY op`,
      { runId },
    )
    assert.equal(exact.length, 2)
    for (const e of exact) {
      const m = report.measurements.find((x) => x.name === `Intended-${e.op}`)!
      assert.equal(m.operations, Number(e.n))
      assert.equal(m.maxLatencyUs, e.max)
      for (const [ours, theirs] of [
        [m.p50LatencyUs, e.p50],
        [m.p99LatencyUs, e.p99],
      ] as const) {
        assert.ok(
          Math.abs(ours - theirs) <= Math.max(0.01 * theirs, 1),
          `Intended-${e.op}: windows ${ours} µs vs exact ${theirs} µs`,
        )
      }
    }

    // A failing threshold on the stored run: exit 99, verdicts on stderr, stdout stays YCSB's report.
    const failing = await cli(te.env, [
      'report',
      runId,
      '--threshold',
      'READ.p99<1us',
      '--threshold',
      'OVERALL.operations>=6000',
    ])
    assert.equal(failing.code, 99)
    assert.match(failing.stderr, /1 of 2 failed/)
    assert.match(failing.stderr, /✗ READ\.p99<1us/)
    assert.doesNotMatch(failing.stdout, /threshold/)

    // An unknown run points at `benchstream runs`, in one line.
    const missing = await cli(te.env, ['report', 'no-such-run'])
    assert.equal(missing.code, 1)
    assert.match(
      missing.stderr,
      joinRegExp([
        /^benchstream: BS_ERR_NOT_FOUND: run "no-such-run" has no data \(in http:\/\/127\.0\.0\.1:\d+\); /,
        /list the runs with `benchstream runs`\n$/,
      ]),
    )

    // Ad hoc SQL: unqualified names in the benchstream database, TSV into a
    // pipe, every byte delivered even when the reader is slow (> 64 KiB).
    const sql =
      `SELECT op, status, latency_us, intended_us FROM ops WHERE run_id ` +
      `= '${runId}' ORDER BY start, op, latency_us`
    const piped = await cli(te.env, ['sql', sql], 500)
    assert.equal(piped.code, 0, piped.stderr)
    assert.ok(piped.stdout.length > 65_536, `${piped.stdout.length} bytes`)
    assert.equal(piped.stdout.trimEnd().split('\n').length, 6000)
    const viaApi = await fetch(`${svc.apiUrl}/api/v1/query`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sql, format: 'TSV' }),
    })
    assert.equal(piped.stdout, await viaApi.text())
    const csv = await cli(te.env, [
      'sql',
      `SELECT count() AS n FROM runs WHERE run_id = '${runId}' FORMAT CSVWithNames`,
    ])
    assert.equal(csv.stdout, '"n"\n1\n')

    // With server.json gone, a read command meets the lock: clear words, no stack.
    renameSync(path.join(te.dataDir, 'server.json'), path.join(te.dataDir, 'server.json.hidden'))
    try {
      const locked = await cli(te.env, ['runs'])
      assert.equal(locked.code, 1)
      assert.match(
        locked.stderr,
        /benchstream: BS_ERR_CONFIG: cannot open the embedded ClickHouse in .*: another process holds it/,
      )
      assert.doesNotMatch(locked.stderr, /\n\s+at /)
    } finally {
      renameSync(path.join(te.dataDir, 'server.json.hidden'), path.join(te.dataDir, 'server.json'))
    }
  },
)

test('a client behind its schedule warns once per episode and the run is flagged', async (t) => {
  const te = testEnv()
  t.after(te.cleanup)
  const svc = await startServer(te.env, { api: true })
  t.after(() => svc.stop())
  const runId = `behind-${Date.now()}`
  // One thread cannot do a million operations a second: behind from the start.
  const r = await cli(te.env, [
    'run',
    '-P',
    'workloads/workloada',
    '-p',
    'recordcount=500',
    '-p',
    'operationcount=0',
    '--seconds',
    '2',
    '-threads',
    '1',
    '-target',
    '1000000',
    '--max-schedule-lag',
    '50',
    '-db',
    'memory',
    '--run-id',
    runId,
  ])
  assert.equal(r.code, 0, r.stderr)
  const warnings = r.stderr.split('\n').filter((l) => /warning: .* this client is behind its schedule/.test(l))
  const episodes = Number(/^\[BENCHSTREAM\], BehindScheduleEpisodes, (\d+)$/m.exec(r.stdout)?.[1])
  assert.ok(episodes >= 1)
  assert.equal(warnings.length, episodes, 'one warning per episode')
  assert.match(warnings[0]!, /1000000 ops\/s with 1 thread is more than the binding or this machine delivers/)
  const lag = Number(/^\[BENCHSTREAM\], MaxScheduleLag\(ms\), ([\d.]+)$/m.exec(r.stdout)?.[1])
  assert.ok(lag > 1000, `max lag ${lag} ms`)
  const run = await waitFor('the run ended in ClickHouse', async () => {
    const rows = await queryRows<{
      behind_schedule_episodes: number
      schedule_lag_max_ms: number
      clients_ended: number
    }>(
      svc.ch,
      `SELECT behind_schedule_episodes, schedule_lag_max_ms, clients_ended FROM benchstream.runs WHERE ` +
        `run_id = {runId:String}`,
      { runId },
    )
    return rows[0]?.clients_ended === 1 ? rows[0] : undefined
  })
  assert.equal(Number(run.behind_schedule_episodes), episodes)
  assert.equal(Number(run.schedule_lag_max_ms), lag)
})

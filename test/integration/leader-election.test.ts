/**
 * Several servers, one alert evaluator: two `benchstream server` processes
 * in one consumer group on the test broker, each with its own embedded
 * ClickHouse (the one-process rule: no ClickHouse server can run here, so
 * each holds only its own partitions' windows), elect the evaluating replica
 * through Kafka (services/alerts/leadership.ts). Exactly one evaluates at a
 * time, by /healthz and by their logs (the intervals each one led never
 * overlap), and when the leader is SIGKILLed the other takes over within a
 * session timeout and a little.
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { repoRoot } from '../../services/common/repo-root.js'
import { testEnv, waitFor } from '../helpers/env.js'

const BIN = path.join(repoRoot(), 'bin', 'benchstream.js')
/** The broker's smallest session timeout (group.min.session.timeout.ms): the quickest takeover. */
const SESSION_MS = 6000

interface Replica {
  name: string
  child: ChildProcess
  log: string[]
  apiUrl: string | undefined
}

interface Health {
  alertsLeadership?: { leader: boolean; terms: number }
  alerts?: { ticks: number }
}

function startReplica(name: string, env: Record<string, string>): Replica {
  const child = spawn(process.execPath, [BIN, 'server'], {
    env: { ...process.env, ...env, LOG_FORMAT: 'json' },
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: repoRoot(),
  })
  const r: Replica = { name, child, log: [], apiUrl: undefined }
  let partial = ''
  const take = (d: Buffer): void => {
    partial += d.toString()
    const lines = partial.split('\n')
    partial = lines.pop() ?? ''
    for (const l of lines) {
      r.log.push(l)
      const api = /"msg":"server running".*?"api":"([^"]+)"|"api":"([^"]+)".*?"msg":"server running"/.exec(l)
      if (api !== null) r.apiUrl = api[1] ?? api[2]
    }
  }
  child.stdout?.on('data', take)
  child.stderr?.on('data', take)
  return r
}

async function health(r: Replica): Promise<Health> {
  const res = await fetch(`${r.apiUrl}/healthz`)
  return (await res.json()) as Health
}

/** The intervals a replica led, from its log: [from, to) wall-clock ms; an open one ends at `endMs`. */
function terms(r: Replica, endMs: number): Array<[number, number]> {
  const out: Array<[number, number]> = []
  let from: number | undefined
  for (const l of r.log) {
    if (!l.includes('"alert evaluation:')) continue
    const { leader, at } = JSON.parse(l) as { leader: boolean; at: string }
    if (leader) from = Date.parse(at)
    else if (from !== undefined) {
      out.push([from, Date.parse(at)])
      from = undefined
    }
  }
  if (from !== undefined) out.push([from, endMs])
  return out
}

test('two servers, one evaluator: elected through Kafka, never both, the other takes over when it dies', async (t) => {
  const te = testEnv({ ALERTS_LEADER_SESSION_TIMEOUT_MS: String(SESSION_MS), ALERTS_INTERVAL_MS: '200' })
  t.after(te.cleanup)
  const dirB = mkdtempSync(path.join(os.tmpdir(), 'benchstream-test-replica-b-'))
  t.after(() => rmSync(dirB, { recursive: true, force: true }))
  const a = startReplica('a', te.env)
  const b = startReplica('b', { ...te.env, BENCHSTREAM_DATA_DIR: dirB })
  t.after(() => {
    for (const r of [a, b]) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL')
  })
  await waitFor('both servers running', async () =>
    a.apiUrl !== undefined && b.apiUrl !== undefined ? true : undefined,
  )

  // Settled: one leads, and it stays that way for a while with both alive.
  const leaderNow = async (): Promise<Replica[]> => {
    const hs = await Promise.all([a, b].map(health))
    return [a, b].filter((_, i) => hs[i]!.alertsLeadership?.leader === true)
  }
  await waitFor('one leader', async () => ((await leaderNow()).length === 1 ? true : undefined), 30_000)
  const [leader] = await leaderNow()
  const follower = leader === a ? b : a
  const ticksBefore = (await health(leader!)).alerts?.ticks ?? 0
  // The follower may have led before the other joined: its last evaluator's counters stay, and must not move.
  const followerTicks = (await health(follower)).alerts?.ticks
  for (let i = 0; i < 10; i++) {
    const leaders = await leaderNow()
    assert.deepEqual(
      leaders.map((r) => r.name),
      [leader!.name],
    )
    await new Promise((r) => setTimeout(r, 200))
  }
  // The leader evaluates; the other has no evaluator at all.
  assert.ok(((await health(leader!)).alerts?.ticks ?? 0) > ticksBefore, 'the leader evaluates')
  assert.equal((await health(follower)).alerts?.ticks, followerTicks, 'the follower does not')

  // The leader dies: the other takes over, after about a session timeout.
  const killedAt = Date.now()
  leader!.child.kill('SIGKILL')
  await waitFor(
    'the other one leading',
    async () => ((await health(follower)).alertsLeadership?.leader === true ? true : undefined),
    SESSION_MS * 5,
    200,
  )
  const tookOverMs = Date.now() - killedAt
  const ticks = (await health(follower)).alerts?.ticks ?? 0
  await waitFor('the new leader evaluating', async () =>
    ((await health(follower)).alerts?.ticks ?? 0) > ticks ? true : undefined,
  )

  // Never both: the intervals each one led, by its own log, do not overlap (the dead one's ends when it was killed).
  const led = [...terms(leader!, killedAt), ...terms(follower, Date.now())].sort((x, y) => x[0] - y[0])
  for (let i = 1; i < led.length; i++) assert.ok(led[i]![0] >= led[i - 1]![1], `terms overlap: ${JSON.stringify(led)}`)
  assert.ok(
    terms(follower, Date.now()).some(([from]) => from >= killedAt),
    'the follower led after the kill',
  )
  process.stdout.write(`# leader ${leader!.name} killed; ${follower.name} took over after ${tookOverMs} ms\n`)

  follower.child.kill('SIGTERM')
  await new Promise((r) => follower.child.once('exit', r))
})

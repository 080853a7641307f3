/**
 * The election of the alert-evaluating replica (services/core/leadership/
 * leader-lease.ts, services/alerts/leadership.ts) against fakes: the lease
 * rule step by step; a simulated consumer group (a coordinator that evicts
 * members silent for a session timeout and assigns the lease partition after
 * every rebalance) with replicas cut off, killed, restarted and joining at
 * random, where never two replicas lead at the same instant and a dead
 * leader is replaced within a session timeout and a few heartbeats; and the
 * alert engine run only while leading, a fresh one per term.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { AlertEngine, AlertEngineStats } from '../../services/alerts/app.js'
import { LeaderGatedAlerts } from '../../services/alerts/leadership.js'
import { LeaderLease, type LeaseChange } from '../../services/core/leadership/leader-lease.js'
import type { LeaderElection } from '../../services/core/ports/leader-election.js'

test('the lease: leads while assigned and heard from within half the session timeout', () => {
  const changes: LeaseChange[] = []
  const lease = new LeaderLease({ sessionTimeoutMs: 10_000 }, (c) => changes.push(c))
  assert.equal(lease.isLeader(0), false)
  lease.assigned(true, 1000)
  assert.equal(lease.isLeader(1000), true)
  lease.heartbeat(4000)
  assert.equal(lease.isLeader(8999), true)
  // 5 s without a successful heartbeat: steps down on its own, before the coordinator (10 s) could move the partition.
  assert.equal(lease.isLeader(9000), false)
  lease.heartbeat(9500)
  assert.equal(lease.isLeader(9500), true)
  lease.revoked(9600, 'the group is rebalancing')
  assert.equal(lease.isLeader(9601), false)
  lease.heartbeat(9700)
  assert.equal(lease.isLeader(9700), false, 'a heartbeat does not give back a revoked partition')
  lease.assigned(false, 9800)
  assert.equal(lease.isLeader(9800), false)
  assert.deepEqual(
    changes.map((c) => [c.leader, c.atMs]),
    [
      [true, 1000],
      [false, 9000],
      [true, 9500],
      [false, 9600],
    ],
  )
  assert.throws(() => new LeaderLease({ sessionTimeoutMs: 10_000, validForMs: 10_000 }), RangeError)
})

/** A deterministic generator (Park-Miller), so every run of the simulation is the same. */
function seeded(seed: number): () => number {
  let s = seed
  return () => (s = (s * 48271) % 2147483647) / 2147483647
}

interface Replica {
  id: number
  lease: LeaderLease
  alive: boolean
  /** Cut off from the coordinator (network, a long pause) until this time. */
  cutOffUntilMs: number
  nextHeartbeatMs: number
}

/**
 * The coordinator of one consumer group, as Kafka runs it: members heartbeat; one silent for a session timeout is
 * dropped; a join or a drop starts a rebalance, which members learn of from their next heartbeat and answer by
 * rejoining; when every member has rejoined (or been dropped), the lease partition goes to one of them.
 */
class FakeCoordinator {
  readonly members = new Map<number, { lastHeardMs: number; rejoined: boolean }>()
  rebalancing = false
  owner: number | undefined

  constructor(
    private readonly sessionTimeoutMs: number,
    private readonly deliver: (id: number, owns: boolean, atMs: number) => void,
  ) {}

  join(id: number, atMs: number): void {
    const m = this.members.get(id)
    if (m === undefined) this.members.set(id, { lastHeardMs: atMs, rejoined: true })
    else {
      m.lastHeardMs = atMs
      m.rejoined = true
    }
    if (!this.rebalancing) this.startRebalance()
    this.members.get(id)!.rejoined = true
    this.tryComplete(atMs)
  }

  /** 'ok', or 'rebalance' (rejoin), or 'unknown' (dropped: join again). */
  heartbeat(id: number, atMs: number): 'ok' | 'rebalance' | 'unknown' {
    const m = this.members.get(id)
    if (m === undefined) return 'unknown'
    m.lastHeardMs = atMs
    return this.rebalancing && !m.rejoined ? 'rebalance' : 'ok'
  }

  tick(atMs: number): void {
    for (const [id, m] of this.members)
      if (atMs - m.lastHeardMs > this.sessionTimeoutMs) {
        this.members.delete(id)
        if (!this.rebalancing) this.startRebalance()
      }
    this.tryComplete(atMs)
  }

  private startRebalance(): void {
    this.rebalancing = true
    this.owner = undefined
    for (const m of this.members.values()) m.rejoined = false
  }

  private tryComplete(atMs: number): void {
    if (!this.rebalancing || [...this.members.values()].some((m) => !m.rejoined)) return
    this.rebalancing = false
    const ids = [...this.members.keys()].sort((a, b) => a - b)
    this.owner = ids[0]
    for (const id of ids) this.deliver(id, id === this.owner, atMs)
  }
}

test('a simulated group: replicas cut off, killed, restarted, joining: never two leaders; a dead one replaced', () => {
  const SESSION = 10_000
  const HEARTBEAT = 1000
  const STEP = 50
  const rnd = seeded(20240607)
  const replicas: Replica[] = []
  let nextId = 1
  const coordinator = new FakeCoordinator(SESSION, (id, owns, atMs) => {
    const r = replicas.find((x) => x.id === id && x.alive)
    // A replica cut off never receives the answer to its join.
    if (r !== undefined && atMs >= r.cutOffUntilMs) r.lease.assigned(owns, atMs)
  })
  const spawnReplica = (atMs: number): void => {
    const r: Replica = {
      id: nextId++,
      lease: new LeaderLease({ sessionTimeoutMs: SESSION }),
      alive: true,
      cutOffUntilMs: 0,
      nextHeartbeatMs: atMs + HEARTBEAT,
    }
    replicas.push(r)
    coordinator.join(r.id, atMs)
  }
  for (let i = 0; i < 3; i++) spawnReplica(0)

  let leaderTime = 0
  let overlaps = 0
  const takeovers: number[] = []
  let leaderDiedAt: number | undefined
  const END = 3_600_000
  for (let now = 0; now <= END; now += STEP) {
    // Events, about one every 20 s: a replica cut off for up to 30 s, killed, or a new one started.
    if (rnd() < STEP / 20_000) {
      const alive = replicas.filter((r) => r.alive)
      const r = alive[Math.floor(rnd() * alive.length)]
      const what = rnd()
      if (r !== undefined && what < 0.5) r.cutOffUntilMs = now + Math.floor(rnd() * 30_000)
      else if (r !== undefined && what < 0.8 && alive.length > 1) {
        if (r.lease.isLeader(now)) leaderDiedAt = now
        r.alive = false
      } else if (alive.length < 5) spawnReplica(now)
    }
    for (const r of replicas) {
      if (!r.alive || now < r.cutOffUntilMs || now < r.nextHeartbeatMs) continue
      r.nextHeartbeatMs = now + HEARTBEAT
      const answer = coordinator.heartbeat(r.id, now)
      if (answer === 'ok') r.lease.heartbeat(now)
      else {
        r.lease.revoked(now, answer === 'rebalance' ? 'the group is rebalancing' : 'dropped from the group')
        coordinator.join(r.id, now)
      }
    }
    coordinator.tick(now)
    const leaders = replicas.filter((r) => r.alive && r.lease.isLeader(now))
    if (leaders.length > 1) overlaps++
    if (leaders.length === 1) {
      leaderTime += STEP
      if (leaderDiedAt !== undefined) {
        takeovers.push(now - leaderDiedAt)
        leaderDiedAt = undefined
      }
    }
  }
  assert.equal(overlaps, 0, 'never two leaders at one instant')
  assert.ok(takeovers.length >= 10, `enough leader deaths in the simulation (${takeovers.length})`)
  // Dropped after the session timeout, the others learn at their next heartbeat and rejoin; cut-offs can delay it.
  const sorted = [...takeovers].sort((a, b) => a - b)
  const median = sorted[Math.floor(sorted.length / 2)]!
  assert.ok(median <= SESSION + 3 * HEARTBEAT, `median takeover ${median} ms`)
  assert.ok(leaderTime / END > 0.7, `some replica led ${((100 * leaderTime) / END).toFixed(1)}% of the time`)
})

/** An election driven by the test. */
class FakeElection implements LeaderElection {
  leader = false
  private onChange: (c: LeaseChange) => void = () => undefined
  async start(onChange: (c: LeaseChange) => void): Promise<void> {
    this.onChange = onChange
  }
  isLeader(): boolean {
    return this.leader
  }
  set(leader: boolean, atMs: number): void {
    this.leader = leader
    this.onChange({ leader, atMs, why: 'test' })
  }
  async close(): Promise<void> {
    if (this.leader) this.set(false, Date.now())
  }
}

function fakeEngine(log: string[], n: number): AlertEngine {
  const stats = { ticks: n } as unknown as AlertEngineStats
  return {
    stats,
    start: () => log.push(`start ${n}`),
    stop: async () => {
      await new Promise((r) => setTimeout(r, 5))
      log.push(`stop ${n}`)
    },
  } as unknown as AlertEngine
}

test('the alert engine runs only while leading, a fresh one each term', async () => {
  const election = new FakeElection()
  const log: string[] = []
  let made = 0
  const gate = new LeaderGatedAlerts(election, () => fakeEngine(log, ++made))
  await gate.start()
  assert.equal(gate.current, undefined)
  election.set(true, 1)
  await gate.settled()
  assert.equal(gate.stats?.ticks, 1, 'the first term runs engine 1')
  election.set(false, 2)
  election.set(true, 3)
  election.set(false, 4)
  await gate.settled()
  assert.equal(gate.current, undefined)
  election.set(true, 5)
  await gate.settled()
  await gate.stop()
  // Term 2 (leader at 3, gone at 4 before its engine could start) never starts: leadership was gone again.
  assert.deepEqual(log, ['start 1', 'stop 1', 'start 2', 'stop 2'])
  assert.equal(gate.leadership.terms, 3)
  assert.equal(gate.leadership.leader, false)
})

test('after stop(), a late "leader" from the election starts no engine (kafkajs restarted the consumer)', async () => {
  const election = new FakeElection()
  const log: string[] = []
  let made = 0
  const gate = new LeaderGatedAlerts(election, () => fakeEngine(log, ++made))
  await gate.start()
  election.set(true, 1)
  await gate.settled()
  await gate.stop()
  // What the Kafka election did before it was closed for good: the group assigned the lease partition again.
  election.set(true, 2)
  await gate.settled()
  assert.equal(gate.current, undefined)
  assert.deepEqual(log, ['start 1', 'stop 1'])
})

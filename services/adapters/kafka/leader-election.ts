/**
 * LeaderElection through a consumer group on a single-partition topic
 * (BENCHSTREAM_TOPIC_LEADER, benchstream.leader.v1): every replica joins the
 * group, the one assigned partition 0 leads, under the lease rule of
 * services/core/leadership/leader-lease.ts. Nothing is ever written to the
 * topic: the group's assignment is the vote, its heartbeats the lease.
 *
 * kafkajs heartbeats from its fetch loop, so fetches wait at most
 * FETCH_WAIT_MS on the empty topic, and the heartbeat interval is a tenth of
 * the session timeout: the lease (half the session timeout) is renewed many
 * times over while the member is well.
 *
 * Closed means closed: kafkajs restarts a consumer that crashed on a retriable error (a broker restart) on a timer of
 * its own, and a restart that was already under way when close() ran rejoined the group afterwards. The replica then
 * became leader again after it had left, its alert engine ran against a closed ClickHouse every second, and the
 * process never exited (seen in a test run once --test-force-exit no longer hid it). So a closed election refuses
 * kafkajs' restarts, ignores the group's events, and disconnects a consumer that joins again anyway.
 */
import type { Consumer, Kafka } from 'kafkajs'
import { LeaderLease, type LeaseChange } from '../../core/leadership/leader-lease.js'
import type { LeaderElection } from '../../core/ports/leader-election.js'

export interface KafkaLeaderElectionOptions {
  topic: string
  /** One group per deployment: the replicas that must agree on one leader. */
  groupId: string
  /** The group's session timeout, ms: a replica that died is replaced after about this long. @default 10000 */
  sessionTimeoutMs?: number
}

/** Longest fetch wait on the (empty) lease topic: kafkajs heartbeats between fetches. */
const FETCH_WAIT_MS = 500
/** How often the lease's expiry is checked without any event. */
const CHECK_MS = 250

export class KafkaLeaderElection implements LeaderElection {
  private readonly consumer: Consumer
  private lease: LeaderLease | undefined
  private timer: NodeJS.Timeout | undefined
  private readonly sessionTimeoutMs: number
  private closed = false

  constructor(
    kafka: Kafka,
    private readonly opts: KafkaLeaderElectionOptions,
  ) {
    this.sessionTimeoutMs = opts.sessionTimeoutMs ?? 10_000
    this.consumer = kafka.consumer({
      groupId: opts.groupId,
      sessionTimeout: this.sessionTimeoutMs,
      // A replica that died should not hold up the others' rejoin for long either.
      rebalanceTimeout: this.sessionTimeoutMs,
      heartbeatInterval: Math.max(100, Math.floor(this.sessionTimeoutMs / 10)),
      maxWaitTimeInMs: FETCH_WAIT_MS,
      // kafkajs' own default for consumers (5 retries), plus: no restart once closed.
      retry: { retries: 5, restartOnFailure: () => Promise.resolve(!this.closed) },
    })
  }

  /** Resolves once the group has given this replica its first assignment (or after twice the session timeout). */
  async start(onChange: (c: LeaseChange) => void): Promise<void> {
    const lease = new LeaderLease({ sessionTimeoutMs: this.sessionTimeoutMs }, onChange)
    this.lease = lease
    const c = this.consumer
    let joined: () => void = () => undefined
    const firstJoin = new Promise<void>((resolve) => (joined = resolve))
    c.on(c.events.GROUP_JOIN, (e) => {
      if (this.closed) {
        void c.disconnect().catch(() => undefined)
        return
      }
      lease.assigned((e.payload.memberAssignment[this.opts.topic] ?? []).includes(0), Date.now())
      joined()
    })
    c.on(c.events.HEARTBEAT, () => {
      if (!this.closed) lease.heartbeat(Date.now())
    })
    c.on(c.events.REBALANCING, () => lease.revoked(Date.now(), 'the group is rebalancing'))
    c.on(c.events.CRASH, (e) => lease.revoked(Date.now(), `the group membership failed: ${e.payload.error.message}`))
    c.on(c.events.STOP, () => lease.revoked(Date.now(), 'left the election'))
    await c.connect()
    await c.subscribe({ topic: this.opts.topic, fromBeginning: false })
    await c.run({ eachBatch: async () => undefined })
    this.timer = setInterval(() => lease.isLeader(Date.now()), CHECK_MS)
    let wait: NodeJS.Timeout | undefined
    await Promise.race([
      firstJoin,
      new Promise<void>((resolve) => (wait = setTimeout(resolve, 2 * this.sessionTimeoutMs))),
    ])
    clearTimeout(wait)
  }

  isLeader(): boolean {
    return !this.closed && (this.lease?.isLeader(Date.now()) ?? false)
  }

  async close(): Promise<void> {
    this.closed = true
    if (this.timer !== undefined) clearInterval(this.timer)
    this.lease?.revoked(Date.now(), 'left the election')
    await this.consumer.disconnect().catch(() => undefined)
  }
}

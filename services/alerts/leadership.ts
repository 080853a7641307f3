/**
 * The alert evaluator on one replica at a time: an engine runs while this
 * replica leads (LeaderElection) and is stopped, its tick in progress
 * finished, when it stops leading. Each term gets a fresh engine: what a
 * previous term remembered may be outdated by another leader's work since, and
 * a fresh engine starts from the alert store (open incidents, what was already
 * recorded per run), which is how a replay after a change of leader sends
 * nothing twice when the replicas share one ClickHouse.
 */
import type { LeaseChange } from '../core/leadership/leader-lease.js'
import type { LeaderElection } from '../core/ports/leader-election.js'
import type { AlertEngine, AlertEngineStats } from './app.js'

export interface LeadershipStats {
  /** Whether this replica leads (evaluates alerts) now. */
  leader: boolean
  /** Wall-clock ms of the last change, and why it happened. */
  sinceMs: number | undefined
  why: string | undefined
  /** Terms this replica has led since it started. */
  terms: number
}

export class LeaderGatedAlerts {
  private engine: AlertEngine | undefined
  /** Engine starts and stops, one after the other in the order the changes came. */
  private chain: Promise<void> = Promise.resolve()
  readonly leadership: LeadershipStats = { leader: false, sinceMs: undefined, why: undefined, terms: 0 }
  /** The last engine's counters, kept when it stops (status pages). */
  private lastStats: AlertEngineStats | undefined
  /** Set by stop(): no engine starts after it, whatever the election reports late. */
  private stopped = false

  constructor(
    private readonly election: LeaderElection,
    private readonly makeEngine: () => AlertEngine,
    private readonly log: (c: LeaseChange) => void = () => undefined,
  ) {}

  /** Takes part in the election; resolves once the first vote is known and, if this replica leads, its engine runs. */
  async start(): Promise<void> {
    await this.election.start((c) => this.changed(c))
    await this.chain
  }

  /** The engine running now (this replica leads), if any. */
  get current(): AlertEngine | undefined {
    return this.engine
  }

  /** The running (or last) engine's counters. */
  get stats(): AlertEngineStats | undefined {
    return this.engine?.stats ?? this.lastStats
  }

  /** Leaves the election and stops the engine, if one runs. */
  async stop(): Promise<void> {
    this.stopped = true
    await this.election.close()
    this.chain = this.chain.then(() => this.stopEngine())
    await this.chain
  }

  /** Waits for the engine starts and stops asked so far (tests). */
  settled(): Promise<void> {
    return this.chain
  }

  private changed(c: LeaseChange): void {
    this.leadership.leader = c.leader
    this.leadership.sinceMs = c.atMs
    this.leadership.why = c.why
    if (c.leader) this.leadership.terms++
    this.log(c)
    this.chain = this.chain.then(() => (c.leader ? this.startEngine() : this.stopEngine()))
  }

  private async startEngine(): Promise<void> {
    // Leadership may have gone again while an earlier stop was finishing.
    if (this.stopped || this.engine !== undefined || !this.election.isLeader()) return
    const engine = this.makeEngine()
    this.engine = engine
    engine.start()
  }

  private async stopEngine(): Promise<void> {
    const engine = this.engine
    if (engine === undefined) return
    this.engine = undefined
    await engine.stop()
    this.lastStats = engine.stats
  }
}

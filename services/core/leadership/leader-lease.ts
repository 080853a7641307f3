/**
 * One leader among replicas, from a consumer group's view of a
 * single-partition topic: the member the group assigns partition 0 leads
 * (the alert evaluator runs there only). Pure: the adapter reports what its
 * group membership does (an assignment, a successful heartbeat, a rebalance
 * starting, a crash), and asks at any time whether this replica leads.
 *
 * Never two leaders. The group gives partition 0 to another member only
 * after this one rejoined without it (a rebalance it took part in: it steps
 * down when the rebalance starts, before rejoining) or after the coordinator
 * stopped hearing from it for a session timeout. So this replica leads only
 * while its last successful contact with the coordinator is younger than
 * `validForMs`, which must be well under the session timeout (half of it by
 * default): a replica cut off from the coordinator, or too busy to heartbeat,
 * steps down on its own before anyone else can be given the partition. The
 * clocks compared are each replica's own elapsed time, never two machines'
 * wall clocks.
 */

export interface LeaseOptions {
  /** The consumer group's session timeout, ms (after it the coordinator drops a silent member). */
  sessionTimeoutMs: number
  /** How long a successful contact keeps the lease; @default sessionTimeoutMs / 2 */
  validForMs?: number
}

export type LeaseChange = { leader: boolean; atMs: number; why: string }

export class LeaderLease {
  private owns = false
  private lastContactMs: number | undefined
  private leading = false
  private readonly validForMs: number

  constructor(
    opts: LeaseOptions,
    /** Called on every change of leadership, with the reason. */
    private readonly onChange: (c: LeaseChange) => void = () => undefined,
  ) {
    this.validForMs = opts.validForMs ?? Math.floor(opts.sessionTimeoutMs / 2)
    if (!(this.validForMs > 0 && this.validForMs < opts.sessionTimeoutMs))
      throw new RangeError(
        `a lease valid for ${this.validForMs} ms with a session timeout of ${opts.sessionTimeoutMs} ms could outlive ` +
          `the membership it rests on: it must be shorter`,
      )
  }

  /** The group's assignment after a join: whether it includes the lease partition. A join is a contact too. */
  assigned(ownsLeasePartition: boolean, atMs: number): void {
    this.owns = ownsLeasePartition
    this.lastContactMs = atMs
    this.update(
      atMs,
      ownsLeasePartition ? 'the group assigned the lease partition to this replica' : 'assigned elsewhere',
    )
  }

  /** The coordinator accepted a heartbeat: the membership, and with it the assignment, still holds. */
  heartbeat(atMs: number): void {
    this.lastContactMs = atMs
    this.update(atMs, 'heartbeat')
  }

  /** A rebalance started (or the member crashed, or left): whatever was assigned is no longer this replica's. */
  revoked(atMs: number, why: string): void {
    this.owns = false
    this.update(atMs, why)
  }

  /** Whether this replica leads at `atMs` (also steps down when the lease has run out; call it on a timer). */
  isLeader(atMs: number): boolean {
    this.update(atMs, `no contact with the group coordinator for over ${this.validForMs} ms`)
    return this.leading
  }

  private update(atMs: number, why: string): void {
    const valid = this.owns && this.lastContactMs !== undefined && atMs - this.lastContactMs < this.validForMs
    if (valid === this.leading) return
    this.leading = valid
    this.onChange({ leader: valid, atMs, why })
  }
}

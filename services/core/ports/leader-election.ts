/**
 * One leader among the server replicas that share a deployment (the alert
 * evaluator runs on it only, so an incident is raised once). The rule that
 * makes it safe is services/core/leadership/leader-lease.ts;
 * services/adapters/kafka/leader-election.ts elects through a consumer group.
 */
import type { LeaseChange } from '../leadership/leader-lease.js'

export interface LeaderElection {
  /**
   * Takes part in the election; resolves once the first vote is known (this replica leads or another does), or
   * after a bounded wait. Every change of leadership goes to onChange.
   */
  start(onChange: (c: LeaseChange) => void): Promise<void>
  /** Whether this replica leads now. */
  isLeader(): boolean
  /** Leaves the election (another replica can lead at once). */
  close(): Promise<void>
}

/**
 * One agent per name, pure. Work is addressed to an agent by name (plans name
 * agents, the coordinator picks them by name), so two agents under one name
 * would take each other's work: the coordinator would see the name flap
 * between two instances and every run on it would fail. The rule:
 *
 * - An agent starting under a name first claims it on the control topic
 *   (`agent.claim`) and listens for `claimWindowMs` before its first
 *   heartbeat. A live agent of that name answers a claim with a heartbeat at
 *   once; the newcomer that hears a heartbeat of its name from another
 *   instance refuses to start (nameTakenMessage).
 * - Two agents claiming one name at the same moment: the lower instance id
 *   keeps it (`keepsName`), the other refuses to start. Each decides alike,
 *   whichever claim it heard first; the keeper claims again so that a rival
 *   that joined the topic after its first claim hears it too.
 * - An agent that died sends no heartbeat, so a newcomer hears none and takes
 *   the name over; the coordinator sees a new instance, as after any restart.
 * - Two agents live under one name anyway (one of them was silent past the
 *   claim, or runs a version without claims): both say so in their logs, and
 *   the coordinator gives neither work until one of them is gone
 *   (roster.ts, twoInstancesMessage).
 */

export interface AgentInstanceInfo {
  instance: string
  host: string
  pid: number
}

/** Shortest claim window, ms: long enough for a live agent's answer on a loaded broker. */
export const CLAIM_WINDOW_MIN_MS = 2000

/**
 * How long a starting agent listens after its claim: at least two heartbeat intervals, so that even an agent that
 * does not answer claims (a version before them) is heard once.
 */
export function claimWindowMs(heartbeatMs: number): number {
  return Math.max(CLAIM_WINDOW_MIN_MS, 2 * heartbeatMs)
}

/** Whether `own` keeps the name against a rival claiming it at the same moment: the lower instance id does. */
export function keepsName(own: string, rival: string): boolean {
  return own < rival
}

/** Where the other instance runs, as a person finds it: host, pid, instance. */
export function describeInstance(i: AgentInstanceInfo): string {
  return `instance ${i.instance} on host ${i.host}, pid ${i.pid}`
}

const FIX = (i: AgentInstanceInfo): string =>
  `stop that agent (on ${i.host}: kill ${i.pid}, or stop the service that runs it), or start this one with ` +
  'another --name'

/** Why an agent refuses to start: its name heartbeats already (`live`) or a rival with a lower id claimed it. */
export function nameTakenMessage(name: string, other: AgentInstanceInfo, why: 'live' | 'rival', topic: string): string {
  return why === 'live'
    ? `agent name ${name} is taken: another agent heartbeats under it on the control topic ${topic} ` +
        `(${describeInstance(other)}). Two agents with one name would take each other's work; ${FIX(other)}`
    : `agent name ${name} is being claimed at the same moment by another agent on the control topic ${topic} ` +
        `(${describeInstance(other)}); the lower instance id keeps it. Two agents with one name would take each ` +
        `other's work; ${FIX(other)}`
}

/** What the coordinator (and each of the agents) says when two instances heartbeat under one name. */
export function twoInstancesMessage(name: string, instances: readonly AgentInstanceInfo[]): string {
  return (
    `agent ${name} has ${instances.length} live instances: ${instances.map(describeInstance).join('; ')}. ` +
    `No work goes to ${name} while more than one heartbeats: stop all but one of them, or restart the others ` +
    'with another --name'
  )
}

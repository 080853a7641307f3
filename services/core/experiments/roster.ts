/**
 * The agents as the coordinator knows them, from their heartbeats, pure:
 * per name the instance work goes to (the newest), when each was last heard,
 * and whether two instances heartbeat under one name at once.
 *
 * A new instance under a known name is a restart as far as anyone can tell
 * when it first heartbeats: the old one may have died. It is two live agents
 * when the older instance heartbeats again after the newer one appeared (the
 * control topic has one partition, so every reader sees the heartbeats in the
 * order they were appended). The name is then in conflict until all but one
 * of its instances have been silent for the agent timeout: `conflict()` lists
 * them meanwhile, and the coordinator gives the name no work (agent-name.ts).
 * Without this the coordinator took each heartbeat for a restart and flapped
 * between the two.
 */
import type { AgentHeartbeat } from '../../../schemas/experiment-control.v1.js'

export interface RosterEntry {
  hb: AgentHeartbeat
  /**
   * When this heartbeat was heard, ms on the coordinator's timeline: the control topic's time as it hears it
   * (services/experiments/app.ts, Conductor.topicMs), so a coordinator cut off takes no agent for silent.
   */
  seenAtMs: number
}

/** What a heartbeat changed, for the coordinator's notes. */
export type RosterChange =
  | { kind: 'restarted'; previous: AgentHeartbeat; hb: AgentHeartbeat }
  | { kind: 'conflict'; instances: AgentHeartbeat[] }

/** Instances remembered per name at most (a name restarted over and over keeps its newest ones). */
const MAX_INSTANCES = 16

export class AgentRoster {
  /** name -> instance -> its last heartbeat. */
  private readonly byName = new Map<string, Map<string, RosterEntry>>()
  /** name -> the instance work goes to. */
  private readonly current = new Map<string, string>()
  private readonly conflicted = new Set<string>()

  heartbeat(hb: AgentHeartbeat, nowMs: number): RosterChange | undefined {
    let instances = this.byName.get(hb.agent)
    if (instances === undefined) this.byName.set(hb.agent, (instances = new Map()))
    const known = instances.has(hb.instance)
    instances.delete(hb.instance)
    instances.set(hb.instance, { hb, seenAtMs: nowMs })
    if (instances.size > MAX_INSTANCES) instances.delete(instances.keys().next().value!)
    const cur = this.current.get(hb.agent)
    if (cur === undefined || !instances.has(cur)) {
      this.current.set(hb.agent, hb.instance)
      return undefined
    }
    if (cur === hb.instance) return undefined
    if (!known) {
      this.current.set(hb.agent, hb.instance)
      return { kind: 'restarted', previous: instances.get(cur)!.hb, hb }
    }
    // An instance that had been replaced heartbeats again: it never died.
    if (this.conflicted.has(hb.agent)) return undefined
    this.conflicted.add(hb.agent)
    return { kind: 'conflict', instances: this.newestFirst(hb.agent).map((e) => e.hb) }
  }

  /** The instance work goes to under this name, and when it was last heard; undefined if never heard. */
  entry(name: string): RosterEntry | undefined {
    const cur = this.current.get(name)
    return cur === undefined ? undefined : this.byName.get(name)?.get(cur)
  }

  /** Every name heard, in name order. */
  names(): string[] {
    return [...this.byName.keys()].sort((a, b) => a.localeCompare(b))
  }

  /**
   * The live instances of a name in conflict (heard within `timeoutMs`), newest first; undefined when the name is
   * not in conflict, or no longer: then the one instance still heard is the one work goes to.
   */
  conflict(name: string, nowMs: number, timeoutMs: number): AgentHeartbeat[] | undefined {
    if (!this.conflicted.has(name)) return undefined
    const live = this.newestFirst(name).filter((e) => nowMs - e.seenAtMs <= timeoutMs)
    if (live.length > 1) return live.map((e) => e.hb)
    this.conflicted.delete(name)
    if (live.length === 1) this.current.set(name, live[0]!.hb.instance)
    return undefined
  }

  private newestFirst(name: string): RosterEntry[] {
    return [...(this.byName.get(name)?.values() ?? [])].sort((a, b) => b.seenAtMs - a.seenAtMs)
  }
}

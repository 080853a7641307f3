/**
 * The coordinator's end of the control topic: its own heartbeat, what it publishes (each append time a sample of
 * this machine's clock offset against the broker's), the statuses the agents send for each assignment, and the
 * topic's time as the coordinator hears it, which silence is measured in (agents.ts silentMs).
 */
import { randomUUID } from 'node:crypto'
import type { AgentHeartbeat, AssignmentStatus, ControlMessage } from '../../schemas/experiment-control.v1.js'
import { estimateClock, type ClockSample } from '../core/experiments/clock.js'
import type { ConductorConfig } from './config.js'
import type { ConductorDeps } from './deps.js'

/** Clock samples kept (the newest). */
const MAX_SAMPLES = 16

export class ControlChannel {
  private readonly statuses = new Map<string, AssignmentStatus[]>()
  private readonly samples: ClockSample[] = []
  /**
   * The control topic's time as this coordinator heard it: the broker append times of the messages it read, from
   * anyone (its own heartbeats included), added up gap by gap, each gap counted up to stallGapMs. The topic has one
   * partition, read in order: by the time a message is heard, everything appended before it has been.
   */
  private heardMs = 0
  private lastBrokerMs: number | undefined
  private readonly instance = randomUUID()
  private beatTimer: NodeJS.Timeout | undefined
  private closed = false

  constructor(
    private readonly deps: Pick<ConductorDeps, 'bus' | 'now' | 'log'>,
    private readonly config: Readonly<ConductorConfig>,
    /** Told of every agent heartbeat, with the topic's time it was heard at. */
    private readonly onHeartbeat: (m: AgentHeartbeat, topicMs: number) => void,
  ) {}

  /** The topic's time now, as heard (see heardMs). */
  get topicMs(): number {
    return this.heardMs
  }

  async start(): Promise<void> {
    await this.deps.bus.start({
      onMessage: (m, brokerTimeMs) => this.onMessage(m, brokerTimeMs),
      onRejected: (why) => this.deps.log.warn({ why }, 'a message on the control topic was refused'),
    })
    const beat = (): void => {
      this.beatTimer = setTimeout(() => {
        void this.publish({ type: 'coordinator.heartbeat', sentAtMs: this.deps.now(), coordinator: this.instance })
          .catch((err: unknown) =>
            this.deps.log.warn({ err: (err as Error).message }, 'coordinator heartbeat not sent; trying again'),
          )
          .finally(() => {
            if (!this.closed) beat()
          })
      }, this.config.heartbeatMs)
      // It keeps no process alive: the coordinator's work does.
      this.beatTimer.unref()
    }
    beat()
  }

  async close(): Promise<void> {
    this.closed = true
    if (this.beatTimer !== undefined) clearTimeout(this.beatTimer)
    await this.deps.bus.close()
  }

  private onMessage(m: ControlMessage, brokerTimeMs: number): void {
    // A bus that does not know the broker's time (none of ours) leaves the coordinator's clock.
    const at = Number.isFinite(brokerTimeMs) && brokerTimeMs > 0 ? brokerTimeMs : this.deps.now()
    if (this.lastBrokerMs === undefined) this.lastBrokerMs = at
    else if (at > this.lastBrokerMs) {
      this.heardMs += Math.min(at - this.lastBrokerMs, this.config.stallGapMs)
      this.lastBrokerMs = at
    }
    if (m.type === 'agent.heartbeat') this.onHeartbeat(m, this.heardMs)
    else if (m.type === 'assignment.status') {
      const list = this.statuses.get(m.assignment)
      if (list === undefined) this.statuses.set(m.assignment, [m])
      else list.push(m)
    }
  }

  /** Publishes, and keeps the broker's append time as a sample of this machine's clock offset. */
  async publish(m: ControlMessage): Promise<void> {
    const sentMs = this.deps.now()
    const { brokerTimeMs } = await this.deps.bus.publish(m)
    if (brokerTimeMs !== undefined) {
      this.samples.push({ sentMs, ackedMs: this.deps.now(), brokerMs: brokerTimeMs })
      if (this.samples.length > MAX_SAMPLES) this.samples.shift()
    }
  }

  /** The broker's clock now, as far as this machine knows it. */
  brokerNow(): number {
    return this.deps.now() + (estimateClock(this.samples, this.deps.now())?.offsetMs ?? 0)
  }

  /**
   * The last status of an assignment from the instance it was addressed to: another instance under the same name
   * (a second agent started by mistake) answers for itself, never for it.
   */
  lastStatus(id: string, instance: string): AssignmentStatus | undefined {
    const list = this.statuses.get(id) ?? []
    for (let i = list.length - 1; i >= 0; i--) if (list[i]!.instance === instance) return list[i]
    return undefined
  }

  endedCount(ids: string[]): number {
    return ids.filter((id) => this.statuses.get(id)?.at(-1)?.state === 'ended').length
  }
}

/**
 * The control topic (benchstream.control.v1) as the agents and the
 * coordinator see it: publish a message, receive every valid message
 * published after joining, and the broker's clock. Messages are checked
 * against schemas/experiment-control.v1.ts ControlMessage on the way in: anything
 * else is refused, counted and reported to `onRejected`, never handed on.
 * services/adapters/kafka/control-bus.ts implements it over a client.
 */
import type { ControlMessage } from '../../../schemas/experiment-control.v1.js'

export interface Published {
  /** When the broker appended the message, its clock, ms (the topic uses LogAppendTime); undefined if unknown. */
  brokerTimeMs: number | undefined
}

export interface ControlBusHandlers {
  onMessage(message: ControlMessage, brokerTimeMs: number): void
  /** A message that is not one: too large, not JSON, or not of the schema. Counted by the bus too. */
  onRejected?(reason: string): void
}

export interface ControlBus {
  /** Starts receiving; messages published before this call are not delivered. */
  start(handlers: ControlBusHandlers): Promise<void>
  publish(message: ControlMessage): Promise<Published>
  /** Messages refused so far (see ControlBusHandlers.onRejected). */
  readonly rejected: number
  close(): Promise<void>
}

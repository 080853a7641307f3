/**
 * A fix for kafkajs 2.2.4's idle busy loop (tulios/kafkajs#1556, #1704; the
 * fix proposed in #1667, never released): once a connection has answered a
 * request, RequestQueue.scheduleCheckPendingRequests re-arms a setTimeout
 * with a negative delay (1 ms) after every check, whether or not anything is
 * pending, so each open connection wakes its event loop about 1,000 times a
 * second for nothing. Measured in the driver's delivery thread (issue 21):
 * 20-40 ms of CPU per second at any event rate, several µs per operation at
 * 5,000 ops/s, taken from the cores the benchmark measures on. An idle
 * connected producer (one message sent, then 5 s idle): 39-44 ms of CPU per
 * second without this fix, 1.9 ms with it.
 *
 * The check only matters while requests wait (in-flight limit or broker
 * throttling): push() schedules it when it queues one, and every answer or
 * timeout runs it. So it is scheduled only while something is pending, at the
 * end of the throttle or after CHECK_PENDING_REQUESTS_INTERVAL_MS.
 */
import { createRequire } from 'node:module'

/** kafkajs' own interval for re-checking pending requests, ms (requestQueue/index.js). */
const CHECK_PENDING_REQUESTS_INTERVAL_MS = 10

interface RequestQueueLike {
  pending: unknown[]
  throttledUntil: number
  throttleCheckTimeoutId: NodeJS.Timeout | null
  checkPendingRequests(): void
  scheduleCheckPendingRequests(): void
}

let applied = false

/** Replaces RequestQueue.prototype.scheduleCheckPendingRequests of the kafkajs this process loads; idempotent. */
export function fixKafkajsIdleLoop(): void {
  if (applied) return
  applied = true
  const require = createRequire(import.meta.url)
  const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as { prototype: RequestQueueLike }
  RequestQueue.prototype.scheduleCheckPendingRequests = function (this: RequestQueueLike): void {
    if (this.throttleCheckTimeoutId !== null || this.pending.length === 0) return
    const untilUnthrottled = this.throttledUntil - Date.now()
    this.throttleCheckTimeoutId = setTimeout(
      () => {
        this.throttleCheckTimeoutId = null
        this.checkPendingRequests()
      },
      untilUnthrottled > 0 ? untilUnthrottled : CHECK_PENDING_REQUESTS_INTERVAL_MS,
    )
  }
}

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
 *
 * kafkajs is no longer maintained and this patches its internals: package.json pins it to exactly
 * KAFKAJS_VERSION, and the fix checks before applying that the internals are the ones it was read against
 * (checkKafkajsInternals), so a different kafkajs stops the process at start with BS_ERR_KAFKAJS_INTERNALS.
 */
import { createHash } from 'node:crypto'
import { createRequire } from 'node:module'
import { BenchstreamError } from '../../core/errors.js'

/** kafkajs' own interval for re-checking pending requests, ms (requestQueue/index.js). */
const CHECK_PENDING_REQUESTS_INTERVAL_MS = 10

interface RequestQueueLike {
  pending: unknown[]
  throttledUntil: number
  throttleCheckTimeoutId: NodeJS.Timeout | null
  checkPendingRequests(): void
  scheduleCheckPendingRequests(): void
}

/** The kafkajs release this fix was written for and read against (package.json pins it exactly). */
export const KAFKAJS_VERSION = '2.2.4'

/**
 * The source of each RequestQueue method the fix replaces or relies on, as kafkajs 2.2.4 has it: the first 16 hex
 * digits of the SHA-256 of Function.prototype.toString (the method's text as written). What each is needed for:
 */
const EXPECTED_METHODS = {
  // replaced: re-arms a 1 ms timer whether or not anything is pending (the busy loop)
  scheduleCheckPendingRequests: '04347ea969c6f2e3',
  // sends what it can, then calls scheduleCheckPendingRequests
  checkPendingRequests: 'fc4cd8b28808b498',
  // queues a request it cannot send and calls scheduleCheckPendingRequests
  push: 'fc4f5056e6d49463',
  // every answer calls checkPendingRequests (a request held by the in-flight limit goes out then)
  fulfillRequest: 'c2602c6ac40895da',
  // a request's timeout calls checkPendingRequests
  createSocketRequest: 'd4f5beb1ab477a60',
  // the in-flight limit and throttledUntil decide what waits
  canSendSocketRequestImmediately: '54fecbdd7e07555c',
  // broker throttling sets throttledUntil, which the fix's timer waits for
  maybeThrottle: '32ae879896c22da4',
  // clears throttleCheckTimeoutId, the timer the fix arms
  destroy: 'eb3e48dc510a13fe',
} as const

/** What the check reads of a loaded kafkajs: its version, RequestQueue and the Connection source that uses it. */
export interface KafkajsInternals {
  version: unknown
  RequestQueue: unknown
  Connection: unknown
}

/** The first 16 hex digits of SHA-256 of a function's source. */
function fingerprint(f: unknown): string | undefined {
  return typeof f === 'function'
    ? createHash('sha256').update(Function.prototype.toString.call(f)).digest('hex').slice(0, 16)
    : undefined
}

/**
 * Throws BS_ERR_KAFKAJS_INTERNALS unless `k` has the RequestQueue the fix was written for: every method in
 * EXPECTED_METHODS with the same source, a new queue with the fields the fix reads and writes, and a Connection that
 * makes its queues with `new RequestQueue(`. A patch of another library's internals must not apply to code it was
 * not read against: a changed kafkajs fails at start, saying what differs, instead of misbehaving under load.
 */
export function checkKafkajsInternals(k: KafkajsInternals): void {
  const problems: string[] = []
  const RQ = k.RequestQueue
  if (typeof RQ !== 'function') problems.push('RequestQueue is not a class')
  else {
    const proto = (RQ as { prototype?: Record<string, unknown> }).prototype ?? {}
    for (const [name, expected] of Object.entries(EXPECTED_METHODS)) {
      const got = fingerprint(proto[name])
      if (got === undefined) problems.push(`RequestQueue.${name} is missing`)
      else if (got !== expected)
        problems.push(`RequestQueue.${name} differs (source fingerprint ${got}, expected ${expected})`)
    }
    problems.push(...queueFieldProblems(RQ as unknown as new (o: object) => Record<string, unknown>))
  }
  const connection = typeof k.Connection === 'function' ? Function.prototype.toString.call(k.Connection) : ''
  if (!connection.includes('new RequestQueue('))
    problems.push('Connection no longer makes its queues with new RequestQueue(')
  if (problems.length > 0) {
    throw new BenchstreamError(
      'BS_ERR_KAFKAJS_INTERNALS',
      `kafkajs ${String(k.version)} is loaded, and its internals are not what the idle-loop fix ` +
        `(services/adapters/kafka/kafkajs-idle-fix.ts) was written for in kafkajs ${KAFKAJS_VERSION}: ` +
        `${problems.join('; ')}. Install kafkajs ${KAFKAJS_VERSION} as published (package.json pins it: npm install; ` +
        `a modified copy: rm -rf node_modules/kafkajs, then npm install), ` +
        `or read the new RequestQueue, adapt the fix, and update its expected fingerprints`,
    )
  }
}

/** What is wrong with a new queue's fields: pending (array), throttledUntil (number), throttleCheckTimeoutId (null). */
function queueFieldProblems(RQ: new (o: object) => Record<string, unknown>): string[] {
  const silent = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined }
  let q: Record<string, unknown>
  try {
    // No timer starts here: only scheduleRequestTimeoutCheck and a queued request start one.
    q = new RQ({
      maxInFlightRequests: null,
      requestTimeout: 30_000,
      clientId: 'check',
      broker: 'check',
      logger: silent,
    })
  } catch (err) {
    return [`new RequestQueue(options) throws (${(err as Error).message})`]
  }
  const problems: string[] = []
  if (!Array.isArray(q.pending)) problems.push('a new RequestQueue has no pending array')
  if (typeof q.throttledUntil !== 'number') problems.push('a new RequestQueue has no numeric throttledUntil')
  if (q.throttleCheckTimeoutId !== null) problems.push('a new RequestQueue has no throttleCheckTimeoutId = null')
  return problems
}

let applied = false

/**
 * Replaces RequestQueue.prototype.scheduleCheckPendingRequests of the kafkajs this process loads, after checking that
 * its internals are the ones the fix was written for (BS_ERR_KAFKAJS_INTERNALS if not); idempotent.
 */
export function fixKafkajsIdleLoop(): void {
  if (applied) return
  const require = createRequire(import.meta.url)
  const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as { prototype: RequestQueueLike }
  checkKafkajsInternals({
    version: (require('kafkajs/package.json') as { version?: unknown }).version,
    RequestQueue,
    Connection: require('kafkajs/src/network/connection.js'),
  })
  applied = true
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

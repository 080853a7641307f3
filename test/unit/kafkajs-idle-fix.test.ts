/**
 * kafkajs 2.2.4's RequestQueue re-arms a 1 ms timer after every check for
 * pending requests, whether anything is pending or not: an idle connection
 * wakes its event loop about 1,000 times a second (issue 21). These tests
 * drive kafkajs' own RequestQueue with a stand-in for the socket and count
 * the checks an idle queue makes; they also hold the fix to what the check is
 * for: a request held back by the in-flight limit or by broker throttling
 * still goes out.
 */
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { setTimeout as sleep } from 'node:timers/promises'
import { test } from 'node:test'
import { fixKafkajsIdleLoop } from '../../services/adapters/kafka/kafkajs-idle-fix.js'

interface Entry {
  correlationId: number
  apiName: string
  apiKey: number
  apiVersion: number
  resolve(value: unknown): void
  reject(error: unknown): void
}

interface Queue {
  pending: unknown[]
  inflight: Map<number, unknown>
  checkPendingRequests(): void
  push(r: { entry: Entry; expectResponse: boolean; sendRequest(): void }): void
  fulfillRequest(r: { correlationId: number; payload: Buffer; size: number }): void
  maybeThrottle(ms: number): void
  destroy(): void
}

const require = createRequire(import.meta.url)
const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as new (o: object) => Queue

const silent = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined }

/** A queue whose checks for pending requests are counted; sent[] holds the correlation ids it put on the "socket". */
function countedQueue(maxInFlightRequests: number | null): { q: Queue; checks: () => number; sent: number[] } {
  const q = new RequestQueue({
    maxInFlightRequests,
    requestTimeout: 30_000,
    enforceRequestTimeout: false,
    clientId: 'test',
    broker: '127.0.0.1:1',
    logger: silent,
  })
  let checks = 0
  const check = q.checkPendingRequests.bind(q)
  q.checkPendingRequests = () => {
    checks++
    check()
  }
  return { q, checks: () => checks, sent: [] }
}

function request(sent: number[], correlationId: number): Parameters<Queue['push']>[0] {
  return {
    entry: { correlationId, apiName: 'Produce', apiKey: 0, apiVersion: 7, resolve: () => undefined, reject: () => {} },
    expectResponse: true,
    sendRequest: () => sent.push(correlationId),
  }
}

fixKafkajsIdleLoop()

test('an idle connection does not wake its event loop: no check for pending requests once answered', async () => {
  const { q, checks, sent } = countedQueue(null)
  try {
    q.push(request(sent, 1))
    q.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 })
    const after = checks()
    // Unfixed, the timer re-arms itself every ~1 ms: about 200 checks here, and at least dozens on a busy machine.
    await sleep(200)
    assert.deepEqual(sent, [1])
    assert.ok(checks() - after <= 1, `${checks() - after} checks in 200 ms on an idle queue`)
  } finally {
    q.destroy()
  }
})

test('a request held back by the in-flight limit goes out when the one before it is answered', async () => {
  const { q, sent } = countedQueue(1)
  try {
    q.push(request(sent, 1))
    q.push(request(sent, 2))
    assert.deepEqual(sent, [1])
    assert.equal(q.pending.length, 1)
    q.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 })
    assert.deepEqual(sent, [1, 2])
    assert.equal(q.pending.length, 0)
  } finally {
    q.destroy()
  }
})

test('a request held back by broker throttling goes out when the throttle ends, nothing else waking it', async () => {
  const { q, sent } = countedQueue(null)
  try {
    q.maybeThrottle(50)
    q.push(request(sent, 1))
    assert.deepEqual(sent, [])
    for (let i = 0; i < 100 && sent.length === 0; i++) await sleep(10)
    assert.deepEqual(sent, [1])
    assert.equal(q.pending.length, 0)
  } finally {
    q.destroy()
  }
})

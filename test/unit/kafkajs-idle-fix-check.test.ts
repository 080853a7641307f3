/**
 * The idle-loop fix patches kafkajs' RequestQueue, a library no longer maintained: before it patches anything it
 * checks that the internals are the ones it was written for (kafkajs 2.2.4) and fails with BS_ERR_KAFKAJS_INTERNALS
 * if not. The real kafkajs passes; stand-ins built from it with one thing changed each fail, naming that thing. This
 * file never applies the fix (kafkajs-idle-fix.test.ts does), so the real RequestQueue here is kafkajs' own.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { test } from 'node:test'
import {
  checkKafkajsInternals,
  KAFKAJS_VERSION,
  type KafkajsInternals,
} from '../../services/adapters/kafka/kafkajs-idle-fix.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { isBenchstreamError } from '../../services/core/errors.js'

const require = createRequire(import.meta.url)
type Queue = Record<string, unknown>
const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as new (o: object) => Queue
const real: KafkajsInternals = {
  version: (require('kafkajs/package.json') as { version: string }).version,
  RequestQueue,
  Connection: require('kafkajs/src/network/connection.js'),
}

/** Asserts that the check refuses `k` with BS_ERR_KAFKAJS_INTERNALS, the message matching each pattern; the message. */
function refused(k: KafkajsInternals, ...patterns: RegExp[]): string {
  try {
    checkKafkajsInternals(k)
  } catch (err) {
    assert.ok(isBenchstreamError(err, 'BS_ERR_KAFKAJS_INTERNALS'), String(err))
    assert.equal(err.retryable, false)
    assert.match(err.message, /kafkajs-idle-fix\.ts/)
    assert.match(err.message, /written for in kafkajs 2\.2\.4/)
    for (const p of patterns) assert.match(err.message, p)
    return err.message
  }
  assert.fail('the check passed a kafkajs whose internals differ')
}

test('the installed kafkajs is the pinned 2.2.4, and its internals pass the check', () => {
  assert.equal(real.version, KAFKAJS_VERSION)
  const pkg = JSON.parse(readFileSync(path.join(repoRoot(), 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>
  }
  assert.equal(pkg.dependencies.kafkajs, KAFKAJS_VERSION, 'package.json pins kafkajs to the exact version')
  assert.doesNotThrow(() => checkKafkajsInternals(real))
})

test('a RequestQueue whose scheduleCheckPendingRequests changed is refused, naming that method only', () => {
  // The fix proposed upstream (tulios/kafkajs#1667): what a later kafkajs might ship.
  class Changed extends RequestQueue {
    scheduleCheckPendingRequests(this: Queue): void {
      if (this.throttleCheckTimeoutId !== null || (this.pending as unknown[]).length === 0) return
      this.throttleCheckTimeoutId = setTimeout(() => undefined, 10)
    }
  }
  const message = refused(
    { ...real, version: '2.2.5', RequestQueue: Changed },
    /^kafkajs 2\.2\.5 is loaded/,
    /RequestQueue\.scheduleCheckPendingRequests differs \(source fingerprint [0-9a-f]{16}, expected 04347ea969c6f2e3\)/,
  )
  assert.doesNotMatch(message, /push|fulfillRequest|destroy|maybeThrottle|throttleCheckTimeoutId|Connection/)
})

test('a method the fix relies on that is gone or changed is refused', () => {
  class NoThrottle extends RequestQueue {}
  Object.defineProperty(NoThrottle.prototype, 'maybeThrottle', { value: undefined })
  refused({ ...real, RequestQueue: NoThrottle }, /RequestQueue\.maybeThrottle is missing/)
  class OtherDestroy extends RequestQueue {
    destroy(): void {}
  }
  refused({ ...real, RequestQueue: OtherDestroy }, /RequestQueue\.destroy differs/)
})

test('a RequestQueue whose timer field was renamed is refused', () => {
  class Renamed extends RequestQueue {
    constructor(o: object) {
      super(o)
      this.throttleTimer = this.throttleCheckTimeoutId
      delete this.throttleCheckTimeoutId
    }
  }
  refused({ ...real, RequestQueue: Renamed }, /a new RequestQueue has no throttleCheckTimeoutId = null/)
  class Throws extends RequestQueue {
    constructor(o: object) {
      super(o)
      throw new Error('options.socket is required')
    }
  }
  refused({ ...real, RequestQueue: Throws }, /new RequestQueue\(options\) throws \(options\.socket is required\)/)
})

test('no RequestQueue class, or a Connection that no longer makes one, is refused', () => {
  refused({ ...real, RequestQueue: undefined }, /RequestQueue is not a class/)
  class Connection {
    requestQueue = { push: () => undefined }
  }
  refused({ ...real, Connection }, /Connection no longer makes its queues with new RequestQueue\(/)
})

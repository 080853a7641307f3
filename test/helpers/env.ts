/**
 * Test environment helpers: every test gets its own topics, consumer group
 * and embedded ClickHouse directory, removed afterwards.
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'

export function requireBrokers(): string {
  const b = process.env.KAFKA_BROKERS
  if (b === undefined || b === '')
    throw new Error('integration tests need KAFKA_BROKERS: run them with `npm test` (it starts a broker) or set it')
  return b
}

export interface TestEnv {
  env: Record<string, string>
  dataDir: string
  /** Removes the data directory (an arrow: pass it to t.after as it is). */
  readonly cleanup: () => void
}

/** Data directories a cleanup could not remove yet: removed when the test file's process exits. */
const leftovers = new Set<string>()
process.once('exit', () => {
  for (const dir of leftovers) {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 })
    } catch {
      // A temporary directory left behind is not a test failure.
    }
  }
})

/**
 * node:test runs after-hooks in the order they were registered, and most
 * tests register cleanup before the server's stop: the embedded ClickHouse
 * may then still write a part into the directory being removed (CI once
 * failed a passing test with ENOTEMPTY here). So: retry, and what still
 * cannot go is removed when the process exits, after every hook has run.
 */
function removeDataDir(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true, maxRetries: 3, retryDelay: 50 })
  } catch {
    leftovers.add(dir)
  }
}

export function testEnv(overrides: Record<string, string> = {}): TestEnv {
  const id = randomUUID().slice(0, 8)
  const dataDir = mkdtempSync(path.join(os.tmpdir(), `benchstream-test-${id}-`))
  const env: Record<string, string> = {
    KAFKA_BROKERS: overrides.KAFKA_BROKERS ?? requireBrokers(),
    BENCHSTREAM_DATA_DIR: dataDir,
    BENCHSTREAM_TOPIC_EVENTS: `test-events-${id}`,
    BENCHSTREAM_TOPIC_DLQ: `test-dlq-${id}`,
    BENCHSTREAM_TOPIC_ALERTS: `test-alerts-${id}`,
    BENCHSTREAM_TOPIC_CONTROL: `test-control-${id}`,
    BENCHSTREAM_TOPIC_LEADER: `test-leader-${id}`,
    BENCHSTREAM_TOPIC_PARTITIONS: '3',
    PROCESSOR_GROUP_ID: `test-group-${id}`,
    API_PORT: '0',
    FLUSH_INTERVAL_MS: '300',
    ...overrides,
  }
  return { env, dataDir, cleanup: () => removeDataDir(dataDir) }
}

export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs = 60_000,
  everyMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const v = await fn()
      if (v !== undefined) return v
    } catch (err) {
      last = err
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ` +
          `${what}${last === undefined ? '' : `: ${last instanceof Error ? last.message : JSON.stringify(last)}`}`,
      )
    await new Promise((r) => setTimeout(r, everyMs))
  }
}

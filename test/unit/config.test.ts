/**
 * Configuration from the environment: one schema per service, converted,
 * defaulted and validated once, with errors that name the variable, what it
 * got and what is allowed; the table of docs/reference/configuration.md is
 * generated from the same schemas and must not drift.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { readApiConfig } from '../../services/api/config.js'
import { readAlertsConfig } from '../../services/alerts/config.js'
import { readEnv } from '../../services/common/config.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { configTableMarkdown, GENERATED } from '../../services/cli/generate.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import { ProcessorEnv, readProcessorConfig } from '../../services/processor/config.js'

const configError =
  (pattern: RegExp) =>
  (err: unknown): boolean =>
    isBenchstreamError(err, 'BS_ERR_CONFIG') && pattern.test(err.message)

test('defaults come from the schema; values are converted to their types', () => {
  const c = readProcessorConfig({})
  assert.equal(c.windowMs, 1000)
  assert.equal(c.storeRawEvents, true)
  assert.equal(c.infra.topics.events, 'benchstream.events.v1')
  const d = readProcessorConfig({ WINDOW_MS: '500', BENCHSTREAM_STORE_RAW_EVENTS: 'off', KAFKA_BROKERS: 'a:1, b:2' })
  assert.equal(d.windowMs, 500)
  assert.equal(d.storeRawEvents, false)
  assert.deepEqual(d.infra.kafka.brokers, ['a:1', 'b:2'])
  // Empty means unset: VAR= restores the default.
  assert.equal(readProcessorConfig({ WINDOW_MS: '' }).windowMs, 1000)
  assert.ok(Object.isFrozen(c) && Object.isFrozen(c.infra.kafka))
})

test('a value that is not allowed names the variable, what it got and what is allowed', () => {
  assert.throws(
    () => readProcessorConfig({ WINDOW_MS: '5' }),
    configError(/^WINDOW_MS="5" is not allowed: expected an integer from 10 to 3600000$/),
  )
  assert.throws(
    () => readProcessorConfig({ WINDOW_MS: '1.5' }),
    configError(/WINDOW_MS="1\.5" is not allowed: expected an integer from 10/),
  )
  assert.throws(() => readProcessorConfig({ WINDOW_MS: 'abc' }), configError(/WINDOW_MS="abc"/))
  assert.throws(
    () => readProcessorConfig({ BENCHSTREAM_STORE_RAW_EVENTS: 'maybe' }),
    configError(/BENCHSTREAM_STORE_RAW_EVENTS="maybe" is not allowed: expected true or false/),
  )
  assert.throws(
    () => readInfraConfig({ CLICKHOUSE_URL: 'ftp://x' }),
    configError(/CLICKHOUSE_URL="ftp:\/\/x" is not allowed: expected http:\/\/host:port/),
  )
  assert.throws(() => readInfraConfig({ CLICKHOUSE_DATABASE: 'a;DROP' }), configError(/CLICKHOUSE_DATABASE/))
  assert.throws(
    () => readInfraConfig({ BENCHSTREAM_TOPIC_EVENTS: 'a b' }),
    configError(/BENCHSTREAM_TOPIC_EVENTS="a b" is not allowed: expected a Kafka topic name/),
  )
  assert.throws(
    () => readApiConfig({ API_PORT: '70000' }),
    configError(/API_PORT="70000" is not allowed: expected an integer from 0 to 65535/),
  )
  assert.throws(
    () => readAlertsConfig({ ALERTS_ENABLED: 'false', ALERTS_WEBHOOK_URL: 'not a url' }),
    configError(/ALERTS_WEBHOOK_URL="not a url" is not allowed: expected an http:\/\/ or https:\/\/ URL/),
  )
})

test('a schema is read for its own variables only', () => {
  const e = readEnv(ProcessorEnv, { WINDOW_MS: '250', UNRELATED: 'x' })
  assert.equal(e.WINDOW_MS, 250)
  assert.equal((e as Record<string, unknown>).UNRELATED, undefined)
})

test('the configuration reference is generated from the schemas (npm run generate)', () => {
  const doc = readFileSync(path.join(repoRoot(), GENERATED.configuration), 'utf8')
  const m = /<!-- config-table:begin[^>]*-->\n([\s\S]*?)<!-- config-table:end -->/.exec(doc)
  assert.ok(m !== null, `${GENERATED.configuration} has the generated configuration table between its markers`)
  assert.equal(
    m[1],
    configTableMarkdown(),
    `${GENERATED.configuration}: the configuration table differs from the schemas: run \`npm run generate\``,
  )
})

test('one definition of a complete window: the live view and the alerts read the same settings', () => {
  const env = { ALLOWED_LATENESS_MS: '700', WINDOW_END_GRACE_MS: '1500', WINDOW_PARTITION_IDLE_MS: '4000' }
  const expected = { allowedLatenessMs: 700, endGraceMs: 1500, partitionIdleMs: 4000 }
  assert.deepEqual(readApiConfig(env).live.completeness, expected)
  assert.deepEqual(readAlertsConfig(env).completeness, expected)
  assert.equal(readProcessorConfig(env).allowedLatenessMs, 700, "the processor's lateness is the same variable")
  assert.deepEqual(readApiConfig({}).live.completeness, readAlertsConfig({}).completeness)
})

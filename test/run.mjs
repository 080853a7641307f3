#!/usr/bin/env node
// Test entry (npm test): runs the compiled test tiers with node's test runner.
// Tiers: unit (pure, no services), integration and e2e (a real Kafka broker,
// started here on a private port and data directory, stopped at the end;
// ClickHouse is the embedded engine, one data directory per test file).
//   node test/run.mjs                 all tiers
//   node test/run.mjs unit            only unit tests
//   node test/run.mjs integration e2e only those tiers
//   node test/run.mjs e2e --only pipeline   only files whose name contains "pipeline"
// KAFKA_BROKERS set in the environment: use that cluster instead of starting one.
import { spawnSync, spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, existsSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const TIERS = ['unit', 'integration', 'e2e']
const argv = process.argv.slice(2)
const onlyAt = argv.indexOf('--only')
const only = onlyAt === -1 ? undefined : argv[onlyAt + 1]
const asked = onlyAt === -1 ? argv : argv.filter((_, i) => i !== onlyAt && i !== onlyAt + 1)
for (const t of asked) {
  if (!TIERS.includes(t)) {
    console.error(`unknown test tier ${JSON.stringify(t)}; valid tiers are ${TIERS.join(', ')}`)
    process.exit(2)
  }
}
const tiers = asked.length > 0 ? asked : TIERS
const files = tiers.flatMap((t) => {
  const dir = path.join(root, 'dist', 'test', t)
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.test.js') && (only === undefined || f.includes(only))).sort().map((f) => path.join(dir, f)) : []
})
if (files.length === 0) {
  console.error('no compiled tests found under dist/test: run `npm run build` first')
  process.exit(1)
}

const needsKafka = tiers.some((t) => t !== 'unit')
const env = { ...process.env }
if (needsKafka) {
  // Java/Maven (Kafka), redis-server, postgresql, promtool: installed if missing.
  const deps = spawnSync('bash', [path.join(root, 'deploy/local/system-deps.sh')], { stdio: 'inherit' })
  if (deps.status !== 0) {
    console.error('could not install the system packages the integration tests need (see above)')
    process.exit(1)
  }
}
let kafka
if (needsKafka && !env.KAFKA_BROKERS) {
  const port = Number(env.TEST_KAFKA_PORT ?? 19092)
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'benchstream-test-kafka-'))
  kafka = { env: { ...process.env, KAFKA_PORT: String(port), KAFKA_DATA_DIR: dataDir }, dataDir }
  const r = spawnSync('bash', [path.join(root, 'deploy/local/kafka.sh'), 'start'], { env: kafka.env, stdio: 'inherit' })
  if (r.status !== 0) {
    console.error('could not start the test Kafka broker')
    process.exit(1)
  }
  env.KAFKA_BROKERS = `127.0.0.1:${port}`
  env.TEST_KAFKA_PORT = String(port)
  env.TEST_KAFKA_DATA_DIR = dataDir
}

// One file at a time: two cores, and the broker is shared. Human-readable
// output on stdout; a TAP copy to read the totals from for the closing line.
const tap = path.join(mkdtempSync(path.join(os.tmpdir(), 'benchstream-tap-')), 'results.tap')
// --test-force-exit: a test file whose work is done must not hang the run on a
// stray client socket (seen once with kafkajs after a broker restart).
const child = spawn(process.execPath, ['--test', '--test-concurrency=1', '--test-force-exit', '--test-reporter=spec', '--test-reporter-destination=stdout', '--test-reporter=tap', `--test-reporter-destination=${tap}`, ...files], { env, stdio: 'inherit' })
const code = await new Promise((resolve) => child.on('close', (c) => resolve(c ?? 1)))
// Count top-level results (--test-force-exit can end the run before the TAP
// reporter writes its own totals).
const tapText = existsSync(tap) ? readFileSync(tap, 'utf8') : ''
const results = tapText.split('\n').filter((l) => /^(not )?ok \d+ /.test(l))
const skipped = results.filter((l) => /# (SKIP|TODO)\b/i.test(l)).length
const failed = results.filter((l) => l.startsWith('not ok') && !/# (SKIP|TODO)\b/i.test(l)).length
console.log(`${results.length - skipped - failed} passed, ${failed} failed, ${skipped} skipped`)
if (kafka) {
  spawnSync('bash', [path.join(root, 'deploy/local/kafka.sh'), 'stop'], { env: kafka.env, stdio: 'inherit' })
  rmSync(kafka.dataDir, { recursive: true, force: true })
}
process.exit(code)

#!/usr/bin/env node
// Test entry (npm test): runs the compiled test tiers with node's test runner.
// Tiers: unit (pure, no services), integration and e2e (a real Kafka broker,
// started here on a private port and data directory, stopped at the end;
// ClickHouse is the embedded engine, one data directory per test file).
// Every test in these tiers asserts what holds however busy the machine is.
// More tiers, asked for by name only: timing (figures that depend on
// wall-clock time: rates at a target, alert latency, sampling rates; npm run
// test:timing), hbase (real HBases and YCSB; npm run test:hbase), clients (the
// query tools people use against /clickhouse: ClickHouse's JDBC driver from Maven
// Central, clickhouse-connect with pandas and pyarrow from PyPI; npm run test:clients),
// cluster (a 3-broker Kafka cluster of its own, a broker killed mid-run; npm run
// test:cluster), server (server mode, CLICKHOUSE_URL, against a ClickHouse server stand-in started
// here with deploy/local/clickhouse.sh; npm run test:server), distributed (agents, coordinator and brokers
// each in a network namespace of their own, links with latency, cut and healed; root; npm run test:distributed) and
// guides (each guide's first block of commands on a fresh copy of the checkout, with brokers of its own; npm run
// test:guides).
//   node test/run.mjs                 unit, integration and e2e (npm test)
//   node test/run.mjs unit            only unit tests
//   node test/run.mjs integration e2e only those tiers
//   node test/run.mjs e2e --only pipeline   only files whose name contains "pipeline"
//   node test/run.mjs hbase           the HBase smoke test and release comparison: real HBases
//                                     and YCSB, about 10 minutes
//   node test/run.mjs timing          wall-clock figures, on a machine that is not otherwise busy
//   node test/run.mjs clients         JDBC and Python query tools, about a minute once they are fetched
//   node test/run.mjs guides          each docs/guides/*.md's first ```sh block on a fresh copy,
//                                     private ports, one guide after the other; several minutes
//   node test/run.mjs cluster         a 3-node KRaft cluster (deploy/local/kafka.sh, KAFKA_BROKERS_COUNT=3) on
//                                     TEST_KAFKA_CLUSTER_PORT (default 19192..19194, controllers +3) instead
//                                     of the single broker; about two minutes
//   node test/run.mjs server          test/server/ against a broker and a ClickHouse server stand-in of their own
//                                     (TEST_CLICKHOUSE_HTTP_PORT / TEST_CLICKHOUSE_TCP_PORT, default free ports),
//                                     one file at a time (one kills the ClickHouse server)
//   node test/run.mjs distributed     network namespaces on a bridge, a 3-broker cluster in them, faults of
//                                     the links (deploy/local/netns.sh); root; about 8 minutes
// Broker versions (deploy/local/kafka.sh fetches any release from Maven Central):
//   TEST_KAFKA_VERSION=3.9.1          the broker for the tiers asked (default: the 4.x
//                                     version in deploy/local/kafka-pom.xml)
//   TEST_KAFKA_ALSO=3.9.1,4.0.2       after those tiers, a fresh broker of each version in
//                                     turn for the Kafka-specific integration files
//                                     (KAFKA_FILES below). Default: none.
//   npm run test:kafka-3.9            integration and e2e tiers entirely against 3.9.1
// KAFKA_BROKERS set in the environment: use that cluster instead of starting one
// (no extra broker versions then).
import { spawnSync, spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, existsSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { unreported } from './verdicts.mjs'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const kafkaSh = path.join(root, 'deploy/local/kafka.sh')
const clickhouseSh = path.join(root, 'deploy/local/clickhouse.sh')
const TIERS = ['unit', 'integration', 'e2e', 'timing', 'hbase', 'clients', 'cluster', 'server', 'distributed', 'guides']
// What a plain `node test/run.mjs` (npm test) runs; timing, hbase, clients, cluster, server, distributed and guides are
// asked for by name.
const DEFAULT_TIERS = ['unit', 'integration', 'e2e']
// Integration files whose outcome depends on the broker: protocol versions, admin,
// idempotent produce, group consume and commits with metadata (kafka-compat);
// dead-letter produce, broker restart, rebalance in and out (processor-resilience).
// About 1.5 minutes against 3.9.1 on two cores, broker start included;
// `npm run test:kafka-3.9` runs integration and e2e entirely against 3.9.1.
const KAFKA_FILES = ['kafka-compat', 'processor-resilience']
// Files that restart or load the shared broker for what they check: they run before the others, beside the unit tier.
const EXCLUSIVE_FILES = ['processor-resilience']
// The other integration and e2e files run this many at a time: every test has its own topics, consumer groups,
// ports and data directories, and most of a test's time is waiting (for windows to close, for a group to form).
// Four: clean-clone CI runs with a hog pinned to one of two cores (2026-12-06) took the runner 656 s at two at a time
// (other work on the machine too), 497 s at three and 442 s at four, every test passing; the CPU was busy ~98% in
// each, so a test waits on windows and timers more than on its share of the core.
const CONCURRENCY = Number(process.env.TEST_CONCURRENCY || 4)
// The longest files (about 25-150 s each) start first, so the files end together rather than one long file last.
const LONG_FILES = [
  'processor-kill',
  'bisect',
  'experiments',
  'sequential',
  'alerts',
  'live-baseline',
  'compare',
  'alerts-surfaces',
  'ycsb-real',
  'live-view',
]
if (!Number.isInteger(CONCURRENCY) || CONCURRENCY < 1 || CONCURRENCY > 8) {
  console.error(
    `TEST_CONCURRENCY must be a whole number from 1 to 8, got ${JSON.stringify(process.env.TEST_CONCURRENCY)}`,
  )
  process.exit(2)
}
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
const tiers = asked.length > 0 ? asked : DEFAULT_TIERS
const testFiles = (tier, filter) => {
  const dir = path.join(root, 'dist', 'test', tier)
  return existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith('.test.js') && filter(f))
        .sort()
        .map((f) => path.join(dir, f))
    : []
}
// The cluster tier runs against a cluster of its own, after the others (which share the single broker); the server
// tier against a broker and a ClickHouse server of its own, after those; the distributed tier starts its own brokers,
// in network namespaces it makes.
const pick = (list) => list.flatMap((t) => testFiles(t, (f) => only === undefined || f.includes(only)))
const files = pick(tiers.filter((t) => !['cluster', 'server', 'distributed'].includes(t)))
const clusterFiles = tiers.includes('cluster') ? pick(['cluster']) : []
const serverFiles = tiers.includes('server') ? pick(['server']) : []
const distributedFiles = tiers.includes('distributed') ? pick(['distributed']) : []
if (files.length === 0 && clusterFiles.length === 0 && serverFiles.length === 0 && distributedFiles.length === 0) {
  console.error('no compiled tests found under dist/test: run `npm run build` first')
  process.exit(1)
}

// The guides tier starts its brokers itself, as a newcomer's `benchstream server` does (no shared test broker).
const needsKafka =
  tiers.some((t) => !['unit', 'cluster', 'server', 'distributed', 'guides'].includes(t)) && files.length > 0
const external = Boolean(process.env.KAFKA_BROKERS)
const versionPattern = /^\d+\.\d+\.\d+$/
if (
  process.env.TEST_KAFKA_VERSION !== undefined &&
  process.env.TEST_KAFKA_VERSION !== '' &&
  !versionPattern.test(process.env.TEST_KAFKA_VERSION)
) {
  console.error(
    `TEST_KAFKA_VERSION must be a Kafka release like 4.1.1 or 3.9.1, ` +
      `got ${JSON.stringify(process.env.TEST_KAFKA_VERSION)}`,
  )
  process.exit(2)
}
// Extra broker versions for the Kafka-specific files (see the header).
const also = (process.env.TEST_KAFKA_ALSO ?? '')
  .split(',')
  .map((v) => v.trim())
  .filter((v) => v !== '')
for (const v of also) {
  if (!versionPattern.test(v)) {
    console.error(`TEST_KAFKA_ALSO must list Kafka releases like 3.9.1, got ${JSON.stringify(v)}`)
    process.exit(2)
  }
}
const kafkaFiles = tiers.includes('integration')
  ? testFiles('integration', (f) => KAFKA_FILES.some((k) => f.startsWith(`${k}.`)))
  : []

if (needsKafka || clusterFiles.length > 0 || serverFiles.length > 0 || tiers.includes('guides')) {
  // Java/Maven (Kafka), redis-server, postgresql, promtool, a C compiler and curl (clickhouse.sh): installed if
  // missing.
  const deps = spawnSync('bash', [path.join(root, 'deploy/local/system-deps.sh')], { stdio: 'inherit' })
  if (deps.status !== 0) {
    console.error('could not install the system packages the integration tests need (see above)')
    process.exit(1)
  }
}
if (distributedFiles.length > 0) {
  // iptables, faketime, Toxiproxy (deploy/local/distributed-deps.sh), and what a broker needs.
  for (const script of ['system-deps.sh', 'distributed-deps.sh']) {
    const deps = spawnSync('bash', [path.join(root, 'deploy/local', script)], { stdio: 'inherit' })
    if (deps.status !== 0) {
      console.error(`could not install what the distributed tier needs (deploy/local/${script}, see above)`)
      process.exit(1)
    }
  }
}

/**
 * Starts a broker of `version` (undefined: kafka.sh's default) on the test port in a fresh data dir; undefined if it
 * cannot.
 */
function startBroker(version) {
  const port = Number(process.env.TEST_KAFKA_PORT ?? 19092)
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'benchstream-test-kafka-'))
  const env = { ...process.env, KAFKA_PORT: String(port), KAFKA_DATA_DIR: dataDir }
  // The tests restart the broker through kafka.sh with their own environment, so the
  // version is pinned there too, never left to a KAFKA_VERSION from the caller's shell.
  delete env.KAFKA_VERSION
  if (version !== undefined) env.KAFKA_VERSION = version
  const resolved = spawnSync('bash', [kafkaSh, 'version'], { env, encoding: 'utf8' })
  if (resolved.status !== 0) {
    process.stderr.write(resolved.stderr)
    console.error(`could not resolve the test Kafka version (${version ?? 'default'})`)
    rmSync(dataDir, { recursive: true, force: true })
    return undefined
  }
  env.KAFKA_VERSION = resolved.stdout.trim()
  const r = spawnSync('bash', [kafkaSh, 'start'], { env, stdio: 'inherit' })
  if (r.status !== 0) {
    rmSync(dataDir, { recursive: true, force: true })
    console.error(`could not start the test Kafka broker (${env.KAFKA_VERSION})`)
    return undefined
  }
  return {
    version: env.KAFKA_VERSION,
    testEnv: {
      KAFKA_BROKERS: `127.0.0.1:${port}`,
      TEST_KAFKA_PORT: String(port),
      TEST_KAFKA_DATA_DIR: dataDir,
      TEST_KAFKA_VERSION: env.KAFKA_VERSION,
      KAFKA_VERSION: env.KAFKA_VERSION,
    },
    stop() {
      spawnSync('bash', [kafkaSh, 'stop'], { env, stdio: 'inherit' })
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/**
 * Starts a cluster of `nodes` combined KRaft nodes on TEST_KAFKA_CLUSTER_PORT.. in a fresh data dir; undefined if it
 * cannot. The tests kill and start its nodes through kafka.sh with TEST_KAFKA_CLUSTER_* (kill-node, start-node).
 */
function startCluster(nodes) {
  const port = Number(process.env.TEST_KAFKA_CLUSTER_PORT ?? 19192)
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'benchstream-test-kafka-cluster-'))
  const env = {
    ...process.env,
    KAFKA_PORT: String(port),
    KAFKA_DATA_DIR: dataDir,
    KAFKA_BROKERS_COUNT: String(nodes),
    // Three JVMs on a small machine: smaller heaps than a lone broker's.
    KAFKA_HEAP: process.env.TEST_KAFKA_CLUSTER_HEAP ?? '-Xmx384m -Xms192m',
    // The tests stop it anyway; a node that waits for a quorum already gone is killed sooner.
    KAFKA_STOP_TIMEOUT: '10',
  }
  delete env.KAFKA_VERSION
  delete env.KAFKA_CONTROLLER_PORT
  if (process.env.TEST_KAFKA_VERSION) env.KAFKA_VERSION = process.env.TEST_KAFKA_VERSION
  const resolved = spawnSync('bash', [kafkaSh, 'version'], { env, encoding: 'utf8' })
  const brokers = spawnSync('bash', [kafkaSh, 'brokers'], { env, encoding: 'utf8' })
  if (resolved.status !== 0 || brokers.status !== 0) {
    process.stderr.write(resolved.stderr + brokers.stderr)
    rmSync(dataDir, { recursive: true, force: true })
    return undefined
  }
  env.KAFKA_VERSION = resolved.stdout.trim()
  const r = spawnSync('bash', [kafkaSh, 'start'], { env, stdio: 'inherit' })
  if (r.status !== 0) {
    spawnSync('bash', [kafkaSh, 'stop'], { env, stdio: 'inherit' })
    rmSync(dataDir, { recursive: true, force: true })
    console.error(`could not start the test Kafka cluster (${env.KAFKA_VERSION}, ${nodes} nodes)`)
    return undefined
  }
  return {
    version: env.KAFKA_VERSION,
    testEnv: {
      KAFKA_BROKERS: brokers.stdout.trim(),
      TEST_KAFKA_CLUSTER_PORT: String(port),
      TEST_KAFKA_CLUSTER_DATA_DIR: dataDir,
      TEST_KAFKA_CLUSTER_NODES: String(nodes),
      TEST_KAFKA_VERSION: env.KAFKA_VERSION,
      KAFKA_VERSION: env.KAFKA_VERSION,
    },
    stop() {
      spawnSync('bash', [kafkaSh, 'stop'], { env, stdio: 'inherit' })
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/** A TCP port free on the loopback now (the kernel's choice). */
async function freePort() {
  const srv = net.createServer()
  await new Promise((resolve, reject) => srv.once('error', reject).listen(0, '127.0.0.1', resolve))
  const { port } = srv.address()
  await new Promise((resolve) => srv.close(resolve))
  return port
}

/**
 * Starts the ClickHouse server stand-in (deploy/local/clickhouse.sh: clickhouse-local's main from npm chdb's
 * libchdb.so, with its HTTP and native listeners) on free ports in a fresh data dir; undefined if it cannot. The
 * tests kill and start it through clickhouse.sh with TEST_CLICKHOUSE_* (kill, start: same data).
 */
async function startClickHouse() {
  const httpPort = Number(process.env.TEST_CLICKHOUSE_HTTP_PORT || (await freePort()))
  const tcpPort = Number(process.env.TEST_CLICKHOUSE_TCP_PORT || (await freePort()))
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'benchstream-test-clickhouse-'))
  const env = {
    ...process.env,
    CLICKHOUSE_HTTP_PORT: String(httpPort),
    CLICKHOUSE_TCP_PORT: String(tcpPort),
    CLICKHOUSE_DATA_DIR: dataDir,
  }
  const r = spawnSync('bash', [clickhouseSh, 'start'], { env, stdio: 'inherit' })
  if (r.status !== 0) {
    rmSync(dataDir, { recursive: true, force: true })
    console.error('could not start the ClickHouse server stand-in (deploy/local/clickhouse.sh start, see above)')
    return undefined
  }
  return {
    testEnv: {
      CLICKHOUSE_URL: `http://127.0.0.1:${httpPort}`,
      TEST_CLICKHOUSE_HTTP_PORT: String(httpPort),
      TEST_CLICKHOUSE_TCP_PORT: String(tcpPort),
      TEST_CLICKHOUSE_DATA_DIR: dataDir,
    },
    stop() {
      spawnSync('bash', [clickhouseSh, 'stop'], { env, stdio: 'inherit' })
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

// How long one pass of the runner may take before it is stopped and fails, by the tiers it runs: far above what each
// takes on two busy cores (npm test's shared pass ~400 s; hbase ~10 min; distributed ~26 min), so only a hang reaches
// it. TEST_PASS_TIMEOUT_S overrides it.
const PASS_TIMEOUT_S = Number(
  process.env.TEST_PASS_TIMEOUT_S ||
    (['hbase', 'distributed', 'guides', 'timing'].some((t) => tiers.includes(t)) ? 3600 : 1200),
)
if (!Number.isInteger(PASS_TIMEOUT_S) || PASS_TIMEOUT_S < 1) {
  console.error(`TEST_PASS_TIMEOUT_S must be a whole number of seconds, got ${process.env.TEST_PASS_TIMEOUT_S}`)
  process.exit(2)
}
// The runners still going. Not process groups of their own (detached): a new session is a scheduling group of its own
// under Linux's autogroup, which changed how the two cores were shared with anything else running (a CI run with a
// hog on one core took npm test 527-536 s against 391-443 s). A runner and every process under it are found by
// their parent ids and killed together.
const running = new Set()
/** `pid` and every process below it (ps). */
function processTree(pid) {
  const ps = spawnSync('ps', ['-eo', 'pid=,ppid='], { encoding: 'utf8' })
  const children = new Map()
  for (const line of (ps.stdout ?? '').split('\n')) {
    const [p, pp] = line.trim().split(/\s+/).map(Number)
    if (p === undefined || pp === undefined || Number.isNaN(p)) continue
    if (!children.has(pp)) children.set(pp, [])
    children.get(pp).push(p)
  }
  const tree = [pid]
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]) ?? []))
  return tree
}
/** Kills a runner and every process under it. */
const stopTree = (child) => {
  for (const pid of processTree(child.pid)) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // already gone
    }
  }
}
const stopAll = () => {
  for (const child of running) stopTree(child)
}
for (const signal of ['SIGINT', 'SIGTERM'])
  process.on(signal, () => {
    stopAll()
    process.exit(130)
  })

// Human-readable output on stdout; one JSON line per finished test, and per top-level test queued
// (test/results-reporter.mjs), to count the results, find the slowest and account for every test from.
async function runFiles(list, env, concurrency = 1) {
  const results = path.join(mkdtempSync(path.join(os.tmpdir(), 'benchstream-results-')), 'results.jsonl')
  // No --test-force-exit: with it a child exits as soon as its tests are done, and can cut its last reports on the
  // way to the runner (nodejs/node#64833; a CI run here lost four verdicts and passed). A file that does not exit
  // after its tests (an open socket or timer) is a hang the pass's time limit below turns into a failure.
  const child = spawn(
    process.execPath,
    [
      '--test',
      `--test-concurrency=${concurrency}`,
      '--test-reporter=spec',
      '--test-reporter-destination=stdout',
      // The results reporter appends to BENCHSTREAM_TEST_RESULTS itself and prints nothing, so its
      // destination only has to accept nothing. Not /dev/null: Node 24 (not 20) opens a file destination with
      // { flush: true } and fsyncs it on close, fsync on /dev/null fails with EINVAL, and that unhandled
      // stream error crashed the runner after the last test (exit 1 on a green run).
      `--test-reporter=${path.join(root, 'test', 'results-reporter.mjs')}`,
      '--test-reporter-destination=stdout',
      ...list,
    ],
    { env: { ...env, BENCHSTREAM_TEST_RESULTS: results }, stdio: 'inherit' },
  )
  running.add(child)
  let timedOut = false
  let stillRunning = []
  const timer = setTimeout(() => {
    timedOut = true
    // The test files whose processes are still there: Node's runner starts one per file, the file's path last.
    const ps = spawnSync('ps', ['-o', 'args=', '--ppid', String(child.pid)], { encoding: 'utf8' })
    stillRunning = (ps.stdout ?? '').split('\n').flatMap((l) => l.match(/\S+\.test\.js$/) ?? [])
    // This pass only: another running beside it (the unit tier beside processor-resilience) ends on its own.
    stopTree(child)
  }, PASS_TIMEOUT_S * 1000)
  const code = await new Promise((resolve) => child.on('close', (c) => resolve(c ?? 1)))
  clearTimeout(timer)
  running.delete(child)
  const text = existsSync(results) ? readFileSync(results, 'utf8') : ''
  rmSync(path.dirname(results), { recursive: true, force: true })
  const records = text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l))
  const problems = unreported(records)
  if (timedOut)
    console.log(
      `\nthe tests did not end within ${PASS_TIMEOUT_S} s (TEST_PASS_TIMEOUT_S) and were stopped; ` +
        (problems.length > 0
          ? 'the tests below had not reported'
          : 'every test had reported, so a test file did not exit after its tests (an open socket, timer or child)') +
        (stillRunning.length > 0
          ? `; still running: ${stillRunning.map((f) => path.relative(root, f)).join(', ')}`
          : ''),
    )
  if (problems.length > 0) {
    console.log(`\n${problems.length} test(s) without a verdict (the run fails):`)
    for (const p of problems)
      console.log(
        `  ${path.relative(root, p.file)}${p.line === undefined ? '' : `:${p.line}`}: ` +
          `${p.name ?? '(the file)'}: ${p.why}`,
      )
  }
  // Top-level tests only: subtests are part of their test's result. A file reported as a test of its own and
  // passing ran nothing we saw: it is among the problems, not the passed.
  const tests = records.filter(
    (r) => r.nesting === 0 && r.outcome !== 'queued' && !(r.name === r.file && r.outcome === 'passed'),
  )
  const count = (outcome) => tests.filter((r) => r.outcome === outcome).length
  return {
    code: code !== 0 ? code : timedOut || problems.length > 0 ? 1 : 0,
    passed: count('passed'),
    // A pass stopped at its time limit with every test reported fails as one: the file that did not exit.
    failed: count('failed') + problems.length + (timedOut && problems.length === 0 ? 1 : 0),
    skipped: count('skipped'),
    tests,
  }
}

// Every Node process the tests start (servers, drivers and their worker threads, agents, CLI calls: hundreds of them)
// compiles the same modules again. V8's compile cache (NODE_COMPILE_CACHE, Node 22+; checked against each file's
// source) lets them share the work: loading the server's and the driver's modules took 0.60 s of CPU cold and 0.49 s
// from the cache (3 runs each, 2026-12-06), and the suite is CPU-bound with one core hogged. One cache per run, made
// empty here and removed at the end, so every run starts as a fresh machine does.
if (process.env.NODE_COMPILE_CACHE === undefined) {
  const cache = mkdtempSync(path.join(os.tmpdir(), 'benchstream-compile-cache-'))
  process.env.NODE_COMPILE_CACHE = cache
  process.on('exit', () => rmSync(cache, { recursive: true, force: true }))
}

const started = Date.now()
const passes = []
// Which Node runs the tests (and every process they start with process.execPath): inside npm scripts
// `node` is node_modules/.bin/node, the Node 24 that npm install brings (package.json optionalDependencies).
console.log(`# Node.js ${process.version} (${process.execPath})`)
if (Number(process.versions.node.split('.')[0]) < 24)
  console.log('# not Node 24, the supported version: npm run test:* and `npx node test/run.mjs ...` run on it')
{
  // The unit tier is pure: its files run side by side, one per core, and while the broker starts for the others.
  const unitDir = path.join(root, 'dist', 'test', 'unit') + path.sep
  const unitFiles = files.filter((f) => f.startsWith(unitDir))
  const otherFiles = files.filter((f) => !f.startsWith(unitDir))
  const unitRun =
    unitFiles.length === 0 ? undefined : runFiles(unitFiles, { ...process.env }, Math.max(1, os.availableParallelism()))
  let broker
  const env = { ...process.env }
  if (needsKafka && !external && otherFiles.length > 0) {
    broker = startBroker(process.env.TEST_KAFKA_VERSION || undefined)
    if (broker === undefined) process.exit(1)
    Object.assign(env, broker.testEnv)
  }
  const from = Date.now()
  const alone = otherFiles.filter((f) => EXCLUSIVE_FILES.some((k) => path.basename(f).startsWith(`${k}.`)))
  // The files that restart the broker need it to themselves, not the machine: they run beside the unit tier, which
  // uses no broker (most of their time is waiting for a broker to come back and a group to rebalance).
  const aloneRun = alone.length > 0 ? runFiles(alone, env) : undefined
  if (unitRun !== undefined) {
    passes.push({ label: 'unit', ...(await unitRun) })
    passes.at(-1).seconds = Math.round((Date.now() - started) / 1000)
  }
  if (otherFiles.length > 0) {
    const label =
      broker === undefined ? (needsKafka ? `Kafka at ${env.KAFKA_BROKERS}` : 'no Kafka') : `Kafka ${broker.version}`
    const rank = (f) => {
      const k = LONG_FILES.indexOf(path.basename(f, '.test.js'))
      return k === -1 ? LONG_FILES.length : k
    }
    const shared = otherFiles.filter((f) => !alone.includes(f)).sort((x, y) => rank(x) - rank(y))
    try {
      const runs = []
      if (aloneRun !== undefined) runs.push(await aloneRun)
      if (shared.length > 0) runs.push(await runFiles(shared, env, CONCURRENCY))
      passes.push({
        label,
        code: runs.find((r) => r.code !== 0)?.code ?? 0,
        ...Object.fromEntries(['passed', 'failed', 'skipped'].map((k) => [k, runs.reduce((a, r) => a + r[k], 0)])),
        tests: runs.flatMap((r) => r.tests),
      })
    } finally {
      broker?.stop()
    }
    passes.at(-1).seconds = Math.round((Date.now() - from) / 1000)
  }
}
if (clusterFiles.length > 0) {
  const from = Date.now()
  const cluster = external ? undefined : startCluster(3)
  if (!external && cluster === undefined) process.exit(1)
  const env = { ...process.env, ...cluster?.testEnv }
  try {
    passes.push({
      label: cluster === undefined ? `Kafka cluster at ${env.KAFKA_BROKERS}` : `Kafka ${cluster.version}, 3 brokers`,
      ...(await runFiles(clusterFiles, env)),
    })
  } finally {
    cluster?.stop()
  }
  passes.at(-1).seconds = Math.round((Date.now() - from) / 1000)
}
if (serverFiles.length > 0) {
  const from = Date.now()
  const broker = external ? undefined : startBroker(process.env.TEST_KAFKA_VERSION || undefined)
  if (!external && broker === undefined) process.exit(1)
  const clickhouse = await startClickHouse()
  if (clickhouse === undefined) {
    broker?.stop()
    process.exit(1)
  }
  const env = { ...process.env, ...broker?.testEnv, ...clickhouse.testEnv }
  try {
    passes.push({
      label: `${broker === undefined ? `Kafka at ${env.KAFKA_BROKERS}` : `Kafka ${broker.version}`}, ClickHouse server`,
      ...(await runFiles(serverFiles, env)),
    })
  } finally {
    clickhouse.stop()
    broker?.stop()
  }
  passes.at(-1).seconds = Math.round((Date.now() - from) / 1000)
}
if (distributedFiles.length > 0) {
  const from = Date.now()
  passes.push({ label: 'a 3-broker cluster in network namespaces', ...(await runFiles(distributedFiles, process.env)) })
  passes.at(-1).seconds = Math.round((Date.now() - from) / 1000)
}
if (!external && kafkaFiles.length > 0) {
  for (const version of also) {
    const from = Date.now()
    console.log(
      `\n# Kafka-specific integration tests against Kafka ${version}: ` +
        `${kafkaFiles.map((f) => path.basename(f, '.test.js')).join(', ')}`,
    )
    const broker = startBroker(version)
    if (broker === undefined) {
      passes.push({
        label: `Kafka ${version}: broker did not start`,
        code: 1,
        passed: 0,
        failed: 1,
        skipped: 0,
        seconds: Math.round((Date.now() - from) / 1000),
      })
      continue
    }
    try {
      passes.push({
        label: `Kafka ${version}, Kafka-specific files`,
        ...(await runFiles(kafkaFiles, { ...process.env, ...broker.testEnv })),
      })
    } finally {
      broker.stop()
    }
    passes.at(-1).seconds = Math.round((Date.now() - from) / 1000)
  }
}

for (const p of passes)
  if (passes.length > 1)
    console.log(`${p.label}: ${p.passed} passed, ${p.failed} failed, ${p.skipped} skipped (${p.seconds} s)`)
const all = passes.flatMap((p) => (p.tests ?? []).map((t) => ({ ...t, pass: p.label })))
const where = (t) =>
  `${path
    .relative(root, t.file)
    .replace(/^dist\//, '')
    .replace(/\.js$/, '.ts')}${passes.length > 1 ? ` [${t.pass}]` : ''}`
const slowest = [...all].sort((a, b) => b.ms - a.ms).slice(0, 10)
if (slowest.length > 0) {
  console.log('\nslowest tests:')
  for (const t of slowest) console.log(`  ${(t.ms / 1000).toFixed(1).padStart(6)} s  ${where(t)}: ${t.name}`)
}
const failedTests = all.filter((t) => t.outcome === 'failed')
if (failedTests.length > 0) {
  console.log('\nfailed tests:')
  for (const t of failedTests) console.log(`  ${where(t)}: ${t.name}`)
}
const sum = (k) => passes.reduce((a, p) => a + p[k], 0)
console.log(
  `\n${sum('passed')} passed, ${sum('failed')} failed, ${sum('skipped')} ` +
    `skipped (${Math.round((Date.now() - started) / 1000)} s)`,
)
process.exit(passes.find((p) => p.code !== 0)?.code ?? 0)

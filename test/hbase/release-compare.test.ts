/**
 * HBase release A vs release B as an experiment, end to end (`npm run test:hbase`,
 * about 13 minutes on two cores): the example plan experiments/hbase-release.yaml
 * (HBase 2.5.10 against 2.6.1, real YCSB 0.17.0 with our HBase binding behind the
 * bridge, workloads A and E, 3 repetitions of 2 clients, interleaved, loaded and
 * flushed once per setup and workload, one warm-up run, the region server's block
 * cache sampled from /jmx every second, a CPU profile of each setup's region server
 * attached to every run) run unattended by `benchstream experiment run` with two
 * `benchstream agent` processes, as on two client machines: agent a1 also starts,
 * flushes and stops the HBases (deploy/local/hbase.sh, allowed by name) and profiles
 * them; agent a2 runs YCSB only.
 *
 * The test's plan is the example's, on free ports, with two more setups of the
 * first release whose comparison with it is known:
 *
 * (a) base vs same: two identical setups; no figure may be flagged;
 * (b) base vs small-cache: the block cache shrunk to almost nothing
 *     (hfile.block.cache.size 0.001 of a 1 GB heap: about 1 MB for about 12 MB of
 *     data), a known difference: the server cache-hit ratio is a regression in both
 *     workloads, a flagged latency or throughput figure of the reads (READ, SCAN)
 *     has the sign of a slowdown (none need be flagged: see the test), and the
 *     block-reading path (HFile blocks read from the file system instead of the
 *     cache) has a larger CPU share in the profiles and is named in the
 *     differential flame graph;
 * (c) the example's own comparison, 2.5.10 vs 2.6.1: comparable, printed whatever
 *     it shows.
 *
 * Every run of the matrix must be complete (each client ended, every event counted,
 * as many as YCSB's reports of the clients count, as the agents read them). The
 * experiment's Markdown and each comparison's are printed and stay in
 * TEST_HBASE_OUT (default .benchstream/test-hbase/<experiment id>/).
 *
 * Environment: TEST_HBASE_SECONDS (run length, default 10), TEST_HBASE_RECORDS
 * (default 10000).
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join, resolve } from 'node:path'
import { after, before, test } from 'node:test'
import { parse as parseYaml } from 'yaml'
import type { ReleaseComparison } from '../../schemas/compare-api.v1.js'
import type { Plan, Setup } from '../../schemas/experiment-plan.v1.js'
import type { ExperimentState } from '../../schemas/experiment-state.v1.js'
import { stopLocalHBase } from '../../services/adapters/datastores/local-hbase.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { checkPlan, firstRepetitions, repetitionsText } from '../../services/core/experiments/plan.js'
import { startServer, type Server } from '../../services/server/main.js'
import { testEnv, type TestEnv } from '../helpers/env.js'
import { freePorts } from '../helpers/hbase.js'

const SECONDS = Number(process.env.TEST_HBASE_SECONDS ?? 10)
const RECORDS = Number(process.env.TEST_HBASE_RECORDS ?? 10_000)
/** A block cache of almost nothing: 0.001 of the 1 GB heap. */
const SMALL_CACHE = '0.001'
/** The whole experiment at most (four HBases, 32 runs and 8 loads of two YCSB JVMs each, on two cores). */
const EXPERIMENT_TIMEOUT_MS = 75 * 60_000
/** Frames of HBase's block-reading path: what a miss in the block cache runs instead of a cache lookup. */
const BLOCK_READ_PATH = new RegExp(
  [
    'HFileBlock',
    'readBlock',
    'FSReader',
    'Checksum',
    'FSDataInputStream',
    'RawLocalFileSystem',
    'BlockIOUtils',
    /LruBlockCache\.(?:cacheBlock|evict)/.source,
    'BlockCacheUtil',
    'pread',
    'positionalRead',
  ].join('|'),
)
/** The variables of deploy/local/hbase.sh the plan's steps set, each allowed on agent a1 by name. */
const HBASE_ENV = [
  'HBASE_VERSION',
  'HBASE_ZK_PORT',
  'HBASE_MASTER_PORT',
  'HBASE_RS_PORT',
  'HBASE_MASTER_INFO_PORT',
  'HBASE_RS_INFO_PORT',
  'HBASE_BLOCKCACHE_SIZE',
]
const PORT_VARS = ['HBASE_ZK_PORT', 'HBASE_MASTER_PORT', 'HBASE_RS_PORT', 'HBASE_RS_INFO_PORT'] as const

const example = checkPlan(
  parseYaml(readFileSync(join(repoRoot(), 'experiments', 'hbase-release.yaml'), 'utf8')),
  'experiments/hbase-release.yaml',
)
const [BASE, RELEASE] = example.setups.map((s) => s.name) as [string, string]
const SAME = `${BASE}-same`
const SMALL = `${BASE}-small-cache`
// Short: run ids are <experiment>-<setup>-<workload>[-warmup]-<k>, readable up to the id rule's 64 characters.
const experimentId = `hb-${Date.now().toString(36)}`
const out = resolve(process.env.TEST_HBASE_OUT ?? join(repoRoot(), '.benchstream', 'test-hbase'))
const expDir = join(out, experimentId)

let te: TestEnv
let svc: Server
let plan: Plan
const agents: ChildProcess[] = []
const t0 = Date.now()
const log = (s: string): void => void process.stdout.write(`# [${((Date.now() - t0) / 1000).toFixed(0)} s] ${s}\n`)

/** The start step's environment of a setup: its HBase's version and ports. */
const hbaseEnv = (s: Setup): Record<string, string> => s.steps!.start!.env!

/**
 * A setup of the example on ports of its own: each of its port numbers (in its steps, properties, metrics URL and
 * readiness check) replaced by a free one; renamed, its profile target renamed, more environment for its steps.
 */
async function onFreePorts(s: Setup, name: string, target: string, env: Record<string, string> = {}): Promise<Setup> {
  const ports = await freePorts(PORT_VARS.length)
  let text = JSON.stringify(s)
  PORT_VARS.forEach((v, i) => {
    text = text.replace(new RegExp(`\\b${hbaseEnv(s)[v]}\\b`, 'g'), String(ports[i]))
  })
  const copy = JSON.parse(text) as Setup
  for (const step of Object.values(copy.steps ?? {})) step.env = { ...step.env, ...env }
  return { ...copy, name, profile: { ...copy.profile!, target } }
}

/** Where hbase.sh keeps a setup's HBase (pid file, data) on agent a1: BENCHSTREAM_DATA_DIR/hbase-<ZooKeeper port>. */
const dataDirOf = (s: Setup): string => join(te.dataDir, `hbase-${hbaseEnv(s).HBASE_ZK_PORT}`)

function startProcess(name: string, args: string[], env: Record<string, string>): ChildProcess {
  const logFile = createWriteStream(join(expDir, `${name}.log`))
  const child = spawn(process.execPath, [join(repoRoot(), 'bin', 'benchstream.js'), ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  child.stdout.pipe(logFile)
  child.stderr.pipe(logFile)
  return child
}

before(
  async () => {
    te = testEnv({ ALERTS_ENABLED: 'false' })
    svc = await startServer(te.env, { api: true })
    const env = { ...te.env, BENCHSTREAM_API_URL: svc.apiUrl! }
    const base = example.setups[0]!
    const setups = [
      await onFreePorts(base, BASE, 'rs-base'),
      await onFreePorts(example.setups[1]!, RELEASE, 'rs-release'),
      await onFreePorts(base, SAME, 'rs-same'),
      await onFreePorts(base, SMALL, 'rs-small-cache', { HBASE_BLOCKCACHE_SIZE: SMALL_CACHE }),
    ]
    plan = checkPlan(
      {
        ...example,
        name: 'hbase-release-test',
        seconds: SECONDS,
        properties: { ...example.properties, recordcount: RECORDS },
        setups,
        compare: [
          { baseline: BASE, candidate: SAME },
          { baseline: BASE, candidate: SMALL },
          { baseline: BASE, candidate: RELEASE },
        ],
        // Four HBases on two cores: an agent busy starting them may miss a heartbeat or two.
        agentTimeoutS: 30,
        agentWaitS: 120,
      },
      'the test plan',
    )
    const dir = mkdtempSync(join(os.tmpdir(), 'benchstream-hbase-plan-'))
    const planFile = join(dir, 'hbase-release-test.json')
    writeFileSync(planFile, JSON.stringify(plan, null, 2))
    mkdirSync(expDir, { recursive: true })
    writeFileSync(join(expDir, 'plan.json'), JSON.stringify(plan, null, 2))
    const named = setups.map((s) => `${s.name} (HBase ${hbaseEnv(s).HBASE_VERSION}, :${hbaseEnv(s).HBASE_ZK_PORT})`)
    log(
      `plan: ${named.join(', ')}` +
        `; ${plan.workloads.length} workloads x ${repetitionsText(plan)} repetitions (+${plan.warmup ?? 0} warm-up)` +
        ` of ${SECONDS} s`,
    )

    agents.push(
      startProcess(
        'agent-a1',
        [
          'agent',
          '--name',
          'a1',
          '--ycsb',
          '--allow-server-metrics',
          '--allow-command',
          `hbase=${join(repoRoot(), 'deploy', 'local', 'hbase.sh')}`,
          ...HBASE_ENV.flatMap((e) => ['--allow-env', e]),
          ...setups.flatMap((s) => ['--profile-target', `${s.profile!.target}=${join(dataDirOf(s), 'hbase.pid')}`]),
        ],
        env,
      ),
      startProcess('agent-a2', ['agent', '--name', 'a2', '--ycsb', '--allow-server-metrics'], env),
    )
    const coordinator = startProcess(
      'coordinator',
      ['experiment', 'run', planFile, '--id', experimentId, '--out', out],
      env,
    )
    const code = await new Promise<number | null>((res, rej) => {
      const timer = setTimeout(() => {
        coordinator.kill('SIGKILL')
        rej(new Error(`the experiment did not end within ${EXPERIMENT_TIMEOUT_MS / 60_000} min (${expDir})`))
      }, EXPERIMENT_TIMEOUT_MS)
      coordinator.on('close', (c) => {
        clearTimeout(timer)
        res(c)
      })
    })
    log(`benchstream experiment run exited with ${code}; its output: ${join(expDir, 'coordinator.log')}`)
    const markdown = readFileSync(join(expDir, 'comparison.md'), 'utf8')
    process.stdout.write(`\n# ---- ${join(expDir, 'comparison.md')} ----\n${markdown}\n`)
    assert.equal(code, 0, readFileSync(join(expDir, 'coordinator.log'), 'utf8').slice(-4000))
  },
  { timeout: EXPERIMENT_TIMEOUT_MS + 5 * 60_000 },
)

after(async () => {
  for (const a of agents) a.kill('SIGTERM')
  await svc?.stop()
  // The plan's stop steps stop every HBase; after a failure, this makes sure.
  await Promise.all(
    (plan?.setups ?? []).map((s) => {
      const e = hbaseEnv(s)
      return stopLocalHBase({
        version: e.HBASE_VERSION!,
        dataDir: dataDirOf(s),
        ports: {
          zk: Number(e.HBASE_ZK_PORT),
          master: Number(e.HBASE_MASTER_PORT),
          regionServer: Number(e.HBASE_RS_PORT),
          regionServerInfo: Number(e.HBASE_RS_INFO_PORT),
        },
      }).catch(() => undefined)
    }),
  )
  te?.cleanup()
})

/** The experiment's comparison of two setups, one ReleaseComparison per workload (the JSON it wrote). */
function comparisons(baseline: string, candidate: string): ReleaseComparison[] {
  return plan.workloads.map((w) => {
    const stem = `compare-${baseline}-vs-${candidate}-${w.file.split('/').pop()}`
    process.stdout.write(
      `\n# ---- ${join(expDir, `${stem}.md`)} ----\n${readFileSync(join(expDir, `${stem}.md`), 'utf8')}\n`,
    )
    return JSON.parse(readFileSync(join(expDir, `${stem}.json`), 'utf8')) as ReleaseComparison
  })
}

const flagged = (c: ReleaseComparison): ReleaseComparison['figures'] =>
  c.figures.filter((f) => f.verdict === 'regression' || f.verdict === 'improvement')
const describe = (f: ReleaseComparison['figures'][number]): string =>
  `${f.workload} ${f.label}: ${f.verdict} ${f.changePercent?.toFixed(1)}% (p adj ${f.adjustedPValue?.toPrecision(2)})`

test('the experiment ran every run of the matrix complete, its clients started together', async () => {
  const res = await fetch(`${svc.apiUrl}/api/v1/experiments/${experimentId}`)
  assert.equal(res.status, 200)
  const state = (await res.json()) as ExperimentState
  assert.equal(state.status, 'done', state.notes.join('\n'))
  const cells = state.cells.filter((c) => !c.warmup)
  assert.equal(cells.length, plan.setups.length * plan.workloads.length * firstRepetitions(plan))
  const done = state.cells.flatMap((c) => c.attempts.filter((a) => a.state === 'done'))
  assert.equal(done.length, state.cells.length, 'one complete attempt per cell')
  for (const a of done) {
    assert.equal(a.counted, a.sent, `${a.runId}: every event counted`)
    assert.equal(a.clients.length, 2)
    // YCSB's own reports, summed over the clients by their agents: every operation, and one CLEANUP per thread.
    const theirs = a.clients.reduce((n, c) => n + (c.operations ?? 0), 0) - 2 * plan.threads!
    assert.equal(a.counted, theirs, `${a.runId}: Benchstream counted what YCSB's reports count`)
  }
  const skews = done.map((a) => a.startSkewMs ?? NaN)
  log(
    `${done.length} runs complete (${state.cells.reduce((n, c) => n + c.attempts.length, 0)} attempts); start skew ` +
      `between the two clients: median ${median(skews).toFixed(1)} ms, at most ${Math.max(...skews).toFixed(1)} ms`,
  )
  assert.ok(
    skews.every((s) => Number.isFinite(s)),
    'every run has its start skew',
  )
  for (const step of state.steps) assert.equal(step.state, 'done', `${step.setup} ${step.phase}: ${step.output ?? ''}`)
})

test('(a) two identical HBase setups: compare finds no significant change on any figure', () => {
  for (const json of comparisons(BASE, SAME)) {
    assert.equal(json.comparable, true, JSON.stringify(json.differences))
    assert.deepEqual(
      json.workloads.map((w) => [w.baselineRuns.length, w.candidateRuns.length]),
      [[plan.repetitions, plan.repetitions]],
    )
    assert.ok(
      json.figures.some((f) => f.figure === 'server_cache_hit_ratio'),
      'the server cache-hit ratio is compared',
    )
    assert.deepEqual(flagged(json).map(describe), [], 'no figure flagged between identical setups')
  }
})

test(
  '(b) block cache shrunk to almost nothing: the server cache-hit ratio regresses, no read figure ' +
    'improves, the profiles name the block-reading path',
  async () => {
    const all = comparisons(BASE, SMALL)
    for (const json of all) {
      assert.equal(json.comparable, true, JSON.stringify(json.differences))
      const ratio = json.figures.filter((f) => f.figure === 'server_cache_hit_ratio')
      assert.equal(ratio.length, 1)
      for (const f of ratio) {
        assert.equal(f.verdict, 'regression', describe(f))
        assert.ok(f.candidate.center! < f.baseline.center!, describe(f))
      }
      // Reads (READ in A, SCAN in E) go to the file system now: where a read figure is flagged it is a slowdown.
      // Whether one is flagged depends on the machine: on two cores shared with other work, runs of 10 s
      // spread by ±100% and more, far above what a block read from the page cache costs (tens of µs).
      const reads = flagged(json).filter((f) => (f.op === 'READ' || f.op === 'SCAN') && f.figure !== 'cache_hit_ratio')
      for (const f of reads)
        assert.equal(f.verdict, 'regression', `a read figure flagged as an improvement: ${describe(f)}`)
      process.stdout.write(`# flagged read figures: ${reads.map(describe).join('; ') || 'none'}\n`)
      assert.ok(
        json.profiles !== null && json.profiles.candidateSamples > 0 && json.profiles.baselineSamples > 0,
        'profiles of both sides attached',
      )
    }
    // Every frame whose share changed, over both workloads' runs: the block-reading path must have grown, by its
    // total share summed over its frames' leaves.
    const runs = (side: 'baselineRuns' | 'candidateRuns'): string =>
      all.flatMap((c) => c.workloads.flatMap((w) => w[side])).join(',')
    const sides = `baseline=${runs('baselineRuns')}&candidate=${runs('candidateRuns')}`
    const frames = (await (
      await fetch(`${svc.apiUrl}/api/v1/profiles/diff?${sides}&limit=1000`)
    ).json()) as NonNullable<ReleaseComparison['profiles']>
    const path = frames.total.filter((f) => BLOCK_READ_PATH.test(f.frame)).sort((a, b) => b.change - a.change)
    process.stdout.write(
      `# block-reading frames, total share baseline -> candidate: ${
        path
          .slice(0, 8)
          .map((f) => `${f.frame} ${f.baseline.toFixed(2)}% -> ${f.candidate.toFixed(2)}%`)
          .join(', ') || 'none'
      }\n`,
    )
    assert.ok(
      path.length > 0 && path[0]!.change > 0,
      'a frame of the block-reading path has a larger CPU share with the small cache',
    )
    const selfShare = (side: 'baseline' | 'candidate'): number =>
      frames.self.filter((f) => BLOCK_READ_PATH.test(f.frame)).reduce((a, f) => a + f[side], 0)
    process.stdout.write(
      `# self share of block-reading frames: ${selfShare('baseline').toFixed(2)}% ` +
        `-> ${selfShare('candidate').toFixed(2)}%\n`,
    )
    // The differential flame graph of the two sides' profiles, as the compare output points to it.
    const diff = await fetch(`${svc.apiUrl}/api/v1/profiles/diff-flamegraph?${sides}&format=svg`)
    assert.equal(diff.status, 200)
    const svg = await diff.text()
    writeFileSync(join(expDir, 'small-block-cache-diff.svg'), svg)
    assert.ok(
      svg.includes(path[0]!.frame.replace(/[<>&]/g, '')) || BLOCK_READ_PATH.test(svg),
      'the differential flame graph names the block-reading path',
    )
  },
)

test("(c) the example plan's own comparison, HBase 2.5.10 vs 2.6.1: comparable, printed whatever it shows", () => {
  for (const json of comparisons(BASE, RELEASE)) {
    assert.equal(json.comparable, true, JSON.stringify(json.differences))
    assert.deepEqual(
      json.workloads.map((w) => [w.baselineRuns.length, w.candidateRuns.length]),
      [[plan.repetitions, plan.repetitions]],
    )
    assert.ok(json.profiles !== null && json.profiles.candidateSamples > 0, 'profiles of both releases attached')
    process.stdout.write(
      `# ${RELEASE} vs ${BASE}, ${json.workloads[0]!.baseline}: ` +
        `${flagged(json).map(describe).join('; ') || 'nothing flagged'}\n`,
    )
  }
})

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s.length === 0 ? NaN : (s[(s.length - 1) >> 1]! + s[s.length >> 1]!) / 2
}

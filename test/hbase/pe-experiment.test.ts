/**
 * `driver: pe` against real HBase (`npm run test:hbase`, about 10 minutes on two
 * busy cores): the example plan experiments/hbase-pe.yaml (HBase 2.5.10 with its
 * block cache and with almost none, PE's randomRead, 3 repetitions of 2 PE clients,
 * interleaved, each setup loaded once by PE's sequentialWrite through a load
 * step and flushed, the region server's /jmx sampled, a CPU profile of each
 * setup's region server attached to every run) run unattended by `benchstream
 * experiment run` with one `benchstream agent`, on free ports.
 *
 * Checked: every run complete, each with the 2 PE clients' reports (2000
 * operations) as its agent counted them from `benchstream pe`; the runs are
 * summary runs whose figures are PE's (format pe) with the server cache-hit
 * ratio and a profile attached; the comparison is made, and its server
 * cache-hit ratio is lower with almost no block cache (a known difference:
 * 0.001 of a 1 GB heap, about 1 MB, for 2 MB of rows). Nothing is asserted of
 * PE's latencies: on two shared cores they spread far more than the cache
 * saves here (tens of µs a read from the page cache). The experiment's output
 * stays in TEST_HBASE_OUT (default .benchstream/test-hbase/<experiment id>/).
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import { join, resolve } from 'node:path'
import { after, before, test } from 'node:test'
import { parse as parseYaml } from 'yaml'
import type { ReleaseComparison } from '../../schemas/compare-api.v1.js'
import type { ReportedRunReport } from '../../schemas/run-reports-api.v1.js'
import type { Plan, Setup } from '../../schemas/experiment-plan.v1.js'
import type { ExperimentState } from '../../schemas/experiment-state.v1.js'
import { stopLocalHBase } from '../../services/adapters/datastores/local-hbase.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { checkPlan, firstRepetitions } from '../../services/core/experiments/plan.js'
import { startServer, type Server } from '../../services/server/main.js'
import { testEnv, type TestEnv } from '../helpers/env.js'
import { freePorts } from '../helpers/hbase.js'

/** The whole experiment at most (two HBases, 6 runs of a PE JVM, 2 loads, on two busy cores). */
const EXPERIMENT_TIMEOUT_MS = 30 * 60_000
const HBASE_ENV = [
  'HBASE_VERSION',
  'HBASE_ZK_PORT',
  'HBASE_MASTER_PORT',
  'HBASE_RS_PORT',
  'HBASE_MASTER_INFO_PORT',
  'HBASE_RS_INFO_PORT',
  'HBASE_BLOCKCACHE_SIZE',
  'HBASE_TABLE',
]
const PORT_VARS = ['HBASE_ZK_PORT', 'HBASE_MASTER_PORT', 'HBASE_RS_PORT', 'HBASE_RS_INFO_PORT'] as const

const example = checkPlan(
  parseYaml(readFileSync(join(repoRoot(), 'experiments', 'hbase-pe.yaml'), 'utf8')),
  'experiments/hbase-pe.yaml',
)
const experimentId = `pe-${Date.now().toString(36)}`
const out = resolve(process.env.TEST_HBASE_OUT ?? join(repoRoot(), '.benchstream', 'test-hbase'))
const expDir = join(out, experimentId)

let te: TestEnv
let svc: Server
let plan: Plan
const agents: ChildProcess[] = []
const t0 = Date.now()
const log = (s: string): void => void process.stdout.write(`# [${((Date.now() - t0) / 1000).toFixed(0)} s] ${s}\n`)

const hbaseEnv = (s: Setup): Record<string, string> => s.steps!.start!.env!

/** A setup of the example with each of its port numbers (steps, properties, metrics URL, readiness) a free one. */
async function onFreePorts(s: Setup): Promise<Setup> {
  const ports = await freePorts(PORT_VARS.length)
  let text = JSON.stringify(s)
  PORT_VARS.forEach((v, i) => {
    text = text.replace(new RegExp(`\\b${hbaseEnv(s)[v]}\\b`, 'g'), String(ports[i]))
  })
  return JSON.parse(text) as Setup
}

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
    const setups = [await onFreePorts(example.setups[0]!), await onFreePorts(example.setups[1]!)]
    plan = checkPlan({ ...example, name: 'hbase-pe-test', setups, agentTimeoutS: 30, agentWaitS: 120 }, 'the test plan')
    const dir = mkdtempSync(join(os.tmpdir(), 'benchstream-pe-plan-'))
    const planFile = join(dir, 'hbase-pe-test.json')
    writeFileSync(planFile, JSON.stringify(plan, null, 2))
    mkdirSync(expDir, { recursive: true })
    writeFileSync(join(expDir, 'plan.json'), JSON.stringify(plan, null, 2))
    log(`plan: ${setups.map((s) => `${s.name} (:${hbaseEnv(s).HBASE_ZK_PORT})`).join(', ')}`)
    agents.push(
      startProcess(
        'agent-a1',
        [
          'agent',
          '--name',
          'a1',
          '--allow-server-metrics',
          '--allow-command',
          `hbase=${join(repoRoot(), 'deploy', 'local', 'hbase-pe.sh')}`,
          '--allow-command',
          `hbase-local=${join(repoRoot(), 'deploy', 'local', 'hbase.sh')}`,
          ...HBASE_ENV.flatMap((e) => ['--allow-env', e]),
          ...setups.flatMap((s) => ['--profile-target', `${s.profile!.target}=${join(dataDirOf(s), 'hbase.pid')}`]),
        ],
        env,
      ),
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
    process.stdout.write(`\n# ---- comparison.md ----\n${readFileSync(join(expDir, 'comparison.md'), 'utf8')}\n`)
    assert.equal(code, 0, readFileSync(join(expDir, 'coordinator.log'), 'utf8').slice(-4000))
  },
  { timeout: EXPERIMENT_TIMEOUT_MS + 5 * 60_000 },
)

after(async () => {
  for (const a of agents) a.kill('SIGTERM')
  await svc?.stop()
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

test('every PE run of the matrix complete: its 2 PE clients reported, as the agent counted them', async () => {
  const state = (await (await fetch(`${svc.apiUrl}/api/v1/experiments/${experimentId}`)).json()) as ExperimentState
  assert.equal(state.status, 'done', state.notes.join('\n'))
  assert.equal(state.cells.length, plan.setups.length * plan.workloads.length * firstRepetitions(plan))
  for (const step of state.steps) assert.equal(step.state, 'done', `${step.setup} ${step.phase}: ${step.output ?? ''}`)
  const done = state.cells.flatMap((c) => c.attempts.filter((a) => a.state === 'done'))
  assert.equal(done.length, state.cells.length, 'one complete attempt per cell')
  for (const a of done) {
    // benchstream pe's [READ], Operations line, read by the agent, and the runs' reports as stored.
    assert.deepEqual(
      a.clients.map((c) => c.operations),
      [plan.operations],
    )
    assert.equal(a.counted, plan.operations, `${a.runId}: the operations its PE clients reported`)
    const rep = (await (await fetch(`${svc.apiUrl}/api/v1/runs/${a.runId}/report`)).json()) as ReportedRunReport
    assert.equal(rep.origin, 'reported')
    assert.equal(rep.run?.workload, 'randomRead')
    assert.deepEqual(
      rep.perClient.map((c) => [c.clientId, c.format]),
      [
        ['a1.TestClient-0', 'pe'],
        ['a1.TestClient-1', 'pe'],
      ],
    )
    assert.ok(
      rep.perClient.every((c) => c.measurements[0]!.percentiles.length === 7),
      "each client's 7 percentiles as PE printed them",
    )
    assert.ok(
      rep.serverCache?.some((c) => c.source === 'hbase'),
      `${a.runId}: the region server sampled`,
    )
    const profiles = await fetch(`${svc.apiUrl}/api/v1/profiles?run=${a.runId}`)
    assert.equal(profiles.status, 200, `${a.runId}: profiles`)
    const listed = (await profiles.json()) as { profiles: unknown[] }
    assert.ok(listed.profiles.length > 0, `${a.runId}: a CPU profile of the region server attached`)
  }
  log(`${done.length} PE runs complete`)
})

test('the comparison of the two setups is made; with a tiny block cache the server cache-hit ratio is lower', () => {
  const stem = `compare-${plan.setups[0]!.name}-vs-${plan.setups[1]!.name}-randomRead`
  process.stdout.write(`\n# ---- ${stem}.md ----\n${readFileSync(join(expDir, `${stem}.md`), 'utf8')}\n`)
  const json = JSON.parse(readFileSync(join(expDir, `${stem}.json`), 'utf8')) as ReleaseComparison
  assert.equal(json.comparable, true, JSON.stringify(json.differences))
  assert.deepEqual(
    json.workloads.map((w) => [w.baselineRuns.length, w.candidateRuns.length, w.reportedRuns]),
    [[plan.repetitions, plan.repetitions, { baseline: plan.repetitions, candidate: plan.repetitions }]],
  )
  const tp = json.figures.find((f) => f.label === 'OVERALL throughput (ops/s)')!
  assert.equal(tp.samples, 'repetitions')
  const ratio = json.figures.find((f) => f.figure === 'server_cache_hit_ratio')
  assert.ok(ratio !== undefined, 'the server cache-hit ratio is compared')
  assert.ok(ratio.candidate.center! < ratio.baseline.center!, JSON.stringify(ratio))
  assert.ok(json.profiles !== null && json.profiles.baselineSamples > 0, 'profiles of both sides compared')
})

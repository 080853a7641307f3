/**
 * A bisection over real HBase releases (`npm run test:hbase`; about 25 minutes
 * on two cores, more when the releases' jars are fetched first): the plan
 * experiments/hbase-bisect.yaml, its versions the -hadoop3 builds of
 * org.apache.hbase:hbase-server that Maven Central's maven-metadata.xml lists
 * between 2.5.5-hadoop3 and 2.5.10-hadoop3 (2.5.5, 2.5.6, 2.5.7, 2.5.8, 2.5.10:
 * 2.5.9 has none), and a regression of known origin: from 2.5.8-hadoop3 on, a
 * block cache of almost nothing (HBASE_BLOCKCACHE_SIZE 0.001, through the
 * plan's versions.from). `benchstream experiment bisect` with one agent (real
 * YCSB 0.17.0 through the bridge, the HBases started, flushed and stopped by
 * deploy/local/hbase.sh, allowed by name) must find 2.5.8-hadoop3: the ends
 * (2.5.10 against 2.5.5) regress on the server cache-hit ratio, 2.5.7 is
 * proven unchanged, 2.5.8 regresses. Every step is an experiment of its own
 * with two HBases side by side, each release in a data folder of its own.
 *
 * The plan is the example's, on free ports, its data folders under the test's
 * data directory. The chain, each step's comparison.md and the agents' and the
 * coordinator's output stay in TEST_HBASE_OUT (default
 * .benchstream/test-hbase/<bisection id>/). BISECT_MAVEN_REPO names another
 * repository for the metadata (Maven Central by default).
 */
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { createWriteStream, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { after, test } from 'node:test'
import { parse as parseYaml } from 'yaml'
import type { Setup } from '../../schemas/experiment-plan.v1.js'
import type { ExperimentState } from '../../schemas/experiment-state.v1.js'
import { stopLocalHBase } from '../../services/adapters/datastores/local-hbase.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { checkPlan } from '../../services/core/experiments/plan.js'
import { startServer, type Server } from '../../services/server/main.js'
import { testEnv, type TestEnv } from '../helpers/env.js'
import { freePorts } from '../helpers/hbase.js'

const GOOD = '2.5.5-hadoop3'
const BAD = '2.5.10-hadoop3'
/** The whole bisection at most: three steps, six HBase starts, fetches of four releases. */
const TIMEOUT_MS = 90 * 60_000
const PORT_VARS = ['HBASE_ZK_PORT', 'HBASE_MASTER_PORT', 'HBASE_RS_PORT', 'HBASE_RS_INFO_PORT'] as const
const HBASE_ENV = [
  'HBASE_VERSION',
  'HBASE_DATA_DIR',
  'HBASE_ZK_PORT',
  'HBASE_MASTER_PORT',
  'HBASE_RS_PORT',
  'HBASE_MASTER_INFO_PORT',
  'HBASE_RS_INFO_PORT',
  'HBASE_BLOCKCACHE_SIZE',
  'HBASE_START_TIMEOUT',
]

const id = `hbb-${Date.now().toString(36)}`
const out = resolve(process.env.TEST_HBASE_OUT ?? join(repoRoot(), '.benchstream', 'test-hbase'))
const dir = join(out, id)
let te: TestEnv | undefined
let svc: Server | undefined
const children: ChildProcess[] = []
const started: Setup[] = []
const t0 = Date.now()
const log = (s: string): void => void process.stdout.write(`# [${((Date.now() - t0) / 1000).toFixed(0)} s] ${s}\n`)

function startProcess(name: string, args: string[], env: Record<string, string>): ChildProcess {
  const file = createWriteStream(join(dir, `${name}.log`))
  const child = spawn(process.execPath, [join(repoRoot(), 'bin', 'benchstream.js'), ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: repoRoot(),
  })
  child.stdout.pipe(file)
  child.stderr.pipe(file)
  children.push(child)
  return child
}

/** A slot of the plan on ports of its own, its releases' data folders under `base`. */
async function onFreePorts(s: Setup, base: string): Promise<Setup> {
  const env = s.steps!.start!.env!
  const ports = await freePorts(PORT_VARS.length)
  let text = JSON.stringify(s)
  PORT_VARS.forEach((v, i) => {
    text = text.replace(new RegExp(`\\b${env[v]}\\b`, 'g'), String(ports[i]))
  })
  text = text.replaceAll('.benchstream/hbase-bisect/', `${base}/`)
  const copy = JSON.parse(text) as Setup
  // Two HBases starting on a busy two-core machine may take minutes to be ready.
  for (const step of Object.values(copy.steps ?? {})) step.env = { ...step.env, HBASE_START_TIMEOUT: '600' }
  copy.steps!.start!.ready = { ...copy.steps!.start!.ready, timeoutS: 600 }
  return copy
}

after(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGTERM')
  await svc?.stop()
  // The plan's stop steps stop every HBase; after a failure, this makes sure: every release's folder of each slot.
  await Promise.all(
    started.flatMap((s) => {
      const e = s.steps!.start!.env!
      const base = e.HBASE_DATA_DIR!.slice(0, e.HBASE_DATA_DIR!.lastIndexOf('/'))
      const slot = e.HBASE_DATA_DIR!.slice(base.length + 1).split('-')[0]!
      let folders: string[] = []
      try {
        folders = readdirSync(base).filter((f) => f.startsWith(`${slot}-`))
      } catch {
        // nothing started
      }
      return folders.map((f) =>
        stopLocalHBase({
          version: f.slice(slot.length + 1),
          dataDir: join(base, f),
          ports: {
            zk: Number(e.HBASE_ZK_PORT),
            master: Number(e.HBASE_MASTER_PORT),
            regionServer: Number(e.HBASE_RS_PORT),
            regionServerInfo: Number(e.HBASE_RS_INFO_PORT),
          },
        }).catch(() => undefined),
      )
    }),
  )
  te?.cleanup()
})

test(
  `bisect over real HBase releases ${GOOD} .. ${BAD} from Maven Central finds 2.5.8-hadoop3, the release from ` +
    'which the block cache is almost nothing',
  { timeout: TIMEOUT_MS + 5 * 60_000 },
  async () => {
    mkdirSync(dir, { recursive: true })
    te = testEnv({ ALERTS_ENABLED: 'false' })
    svc = await startServer(te.env, { api: true })
    const env = { ...te.env, BENCHSTREAM_API_URL: svc.apiUrl! }
    const example = checkPlan(
      parseYaml(readFileSync(join(repoRoot(), 'experiments', 'hbase-bisect.yaml'), 'utf8')),
      'experiments/hbase-bisect.yaml',
    )
    const setups = [
      await onFreePorts(example.setups[0]!, join(te.dataDir, 'hbase')),
      await onFreePorts(example.setups[1]!, join(te.dataDir, 'hbase')),
    ]
    started.push(...setups)
    const plan = checkPlan({ ...example, setups, agentTimeoutS: 30, agentWaitS: 120 }, 'the test plan')
    const planFile = join(dir, 'plan.json')
    writeFileSync(planFile, JSON.stringify(plan, null, 2))
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
      ],
      env,
    )
    const coordinator = startProcess(
      'coordinator',
      [
        'experiment',
        'bisect',
        planFile,
        '--good',
        GOOD,
        '--bad',
        BAD,
        '--id',
        id,
        '--out',
        out,
        ...(process.env.BISECT_MAVEN_REPO === undefined ? [] : ['--maven-repo', process.env.BISECT_MAVEN_REPO]),
      ],
      env,
    )
    log(`bisecting ${GOOD} .. ${BAD}; output in ${dir}`)
    const code = await new Promise<number | null>((res, rej) => {
      const timer = setTimeout(() => {
        coordinator.kill('SIGKILL')
        rej(new Error(`the bisection did not end within ${TIMEOUT_MS / 60_000} min (${dir})`))
      }, TIMEOUT_MS)
      coordinator.on('close', (c) => {
        clearTimeout(timer)
        res(c)
      })
    })
    const text = readFileSync(join(dir, 'coordinator.log'), 'utf8')
    log(`benchstream experiment bisect exited with ${code}`)
    process.stdout.write(
      `${text
        .split('\n')
        .filter((l) => !l.startsWith('{'))
        .slice(-30)
        .join('\n')}\n`,
    )
    const s = (await (await fetch(`${svc.apiUrl}/api/v1/experiments/${id}`)).json()) as ExperimentState
    writeFileSync(join(dir, 'bisection.json'), JSON.stringify(s, null, 2))
    const b = s.bisect!
    assert.deepEqual(b.versions, [GOOD, '2.5.6-hadoop3', '2.5.7-hadoop3', '2.5.8-hadoop3', BAD])
    assert.equal(b.source, 'maven:org.apache.hbase:hbase-server')
    for (const step of b.chain) {
      const e = (await (await fetch(`${svc.apiUrl}/api/v1/experiments/${step.experiment}`)).json()) as ExperimentState
      for (const st of e.steps)
        assert.equal(st.state, 'done', `${step.experiment} ${st.setup} ${st.phase}: ${st.output}`)
      const f = e.comparisons[0]?.decisions?.figures.find((x) => x.label === 'OVERALL server cache-hit ratio (hbase)')
      log(`${step.version}: ${step.outcome}; ${f?.reason ?? e.comparisons[0]?.error ?? 'no comparison'}`)
    }
    assert.equal(code, 0, text.slice(-4000))
    assert.deepEqual(
      b.chain.map((x) => [x.version, x.outcome]),
      [
        [BAD, 'bad'],
        ['2.5.7-hadoop3', 'good'],
        ['2.5.8-hadoop3', 'bad'],
      ],
    )
    assert.deepEqual(b.result && [b.result.kind, b.result.firstBad, b.result.lastGood], [
      'found',
      '2.5.8-hadoop3',
      '2.5.7-hadoop3',
    ])
  },
)

/**
 * `benchstream profile attach|capture|list`: CPU profiles of runs.
 *
 *   attach   imports profile files into a run: folded stacks (async-profiler
 *            `collapsed`, any stackcollapse script's output) or raw `perf
 *            script` text, collapsed here by stackcollapse-perf.pl's rules.
 *            Every file is read and checked before anything is stored: a
 *            malformed one is a BS_ERR_DECODE naming file and line, and
 *            nothing of any file is stored.
 *   capture  profiles a running JVM with async-profiler
 *            (deploy/local/async-profiler.sh, fetched from Maven Central and
 *            cached on first use) for N seconds and attaches the result.
 *   list     the profiles of a run.
 *
 * Where profiles go: through a running server's API (BENCHSTREAM_API_URL, or
 * the server that holds this data directory), else into ClickHouse directly;
 * with --kafka as PROFILE records to the events topic, as an agent streams
 * them (the processor stores them).
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { ID_PATTERN, ID_RULE } from '../../schemas/events.v1.js'
import { migrate, openClickHouse } from '../adapters/clickhouse/client.js'
import { ClickHouseProfileStore } from '../adapters/clickhouse/profile-store.js'
import { createKafka, ensureTopics, partitioner } from '../adapters/kafka/client.js'
import type { FlagSpecs } from '../common/args.js'
import type { Env } from '../common/config.js'
import { readInfraConfig } from '../common/infra-config.js'
import { repoRoot } from '../common/repo-root.js'
import { findServer } from '../common/server-file.js'
import { BenchstreamError, ERROR_CODES, type ErrorCode } from '../core/errors.js'
import { normalizeHiddenClasses } from '../core/profiles/folded.js'
import { PERF_OPTIONS, perfOptions, type PerfOption } from '../core/profiles/perf-script.js'
import {
  encodeProfileRecords,
  MAX_PROFILE_FILE_BYTES,
  parseProfileFile,
  profileBodies,
  profileId,
  type Profile,
} from '../core/profiles/profile.js'
import type { ProfileInfo, StoreResult } from '../core/ports/profile-store.js'
import { readCliEnv } from '../common/cli-env.js'

export const PROFILE_USAGE = `usage:
  benchstream profile attach --run-id R [--label k=v]... [--from T] [--to T | --seconds N]
                             [--event E] [--interval I] [--perf-option O]... [--raw-frames] [--kafka] FILE...
  benchstream profile capture --pid P --run-id R [--seconds N] [--event cpu|itimer|ctimer|wall]
                             [--interval I] [--threads] [--label k=v]... [--kafka]
  benchstream profile list --run-id R [--json]

attach: each FILE is one profile: folded stacks ("frame;frame;... COUNT", async-profiler's
  collapsed output, stackcollapse-*.pl output) or raw \`perf script\` output (collapsed here like
  stackcollapse-perf.pl). Every file is checked before anything is stored.
  --from, --to      the time the samples cover: ISO 8601 or ms since the epoch; without --to
                    it ends --seconds after --from (default 0), or without either at the
                    file's modification time
  --event           what a sample stands for (default: cpu; perf script: perf:<its event>)
  --interval        sampling interval: 10ms, 100us, 1000000 (ns); default unknown
  --perf-option     stackcollapse-perf.pl options for perf script input: ${PERF_OPTIONS.join(', ')}
  --raw-frames      keep JVM hidden-class addresses in frame names (by default
                    Foo$$Lambda$12.0x00007f...run becomes Foo$$Lambda.run, so runs compare)
  --kafka           send as PROFILE records to the events topic (KAFKA_BROKERS) instead of storing
capture: profiles JVM pid P with async-profiler for N seconds (default 10; event cpu, interval
  10ms, 50ms for wall) and attaches it with labels host and pid.`

/** Bytes per PROFILE record sent to Kafka (the schema's bound is MAX_PROFILE_RECORD_BYTES). */
const KAFKA_RECORD_BYTES = 512 * 1024

function usage(what: string): BenchstreamError {
  return new BenchstreamError('BS_ERR_USAGE', `${what}\n${PROFILE_USAGE}`)
}

export interface ProfileIo {
  env: Env
  out: (s: string) => void
  err: (s: string) => void
}

/** Runs the command; returns the exit code. */
export async function profileMain(
  argv: readonly string[],
  io: ProfileIo = { env: process.env, out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s) },
): Promise<number> {
  const [sub, ...rest] = argv
  if (sub === undefined || sub === '--help' || sub === '-h' || rest.includes('--help') || rest.includes('-h')) {
    io.out(PROFILE_USAGE + '\n')
    return sub === undefined ? 2 : 0
  }
  switch (sub) {
    case 'attach':
      return attach(rest, io)
    case 'capture':
      return capture(rest, io)
    case 'list':
      return list(rest, io)
    default:
      throw usage(`unknown profile command ${JSON.stringify(sub)}; valid are attach, capture, list`)
  }
}

// ---------------------------------------------------------------- attach

const COMMON = {
  'run-id': { type: 'string' },
  label: { type: 'string', multiple: true },
  event: { type: 'string' },
  interval: { type: 'string' },
  kafka: { type: 'boolean' },
  seconds: { type: 'string' },
} as const

/** The flags of each profile subcommand (parseArgs options). */
export const PROFILE_FLAGS = {
  attach: {
    ...COMMON,
    from: { type: 'string' },
    to: { type: 'string' },
    'perf-option': { type: 'string', multiple: true },
    'raw-frames': { type: 'boolean' },
  },
  capture: { ...COMMON, pid: { type: 'string' }, threads: { type: 'boolean' } },
  list: { 'run-id': { type: 'string' }, json: { type: 'boolean' } },
} as const satisfies Record<string, FlagSpecs>

/** parseArgs' own errors (unknown flag, missing value) as usage errors. */
function parsed<T>(fn: () => T): T {
  try {
    return fn()
  } catch (err) {
    throw usage((err as Error).message)
  }
}

function runIdOf(v: unknown): string {
  if (typeof v !== 'string' || !ID_PATTERN.test(v))
    throw usage(`--run-id ${v === undefined ? 'is required' : `${JSON.stringify(v)} is not allowed`}: ${ID_RULE}`)
  return v
}

function labelsOf(v: unknown): Record<string, string> {
  const labels: Record<string, string> = {}
  for (const kv of (v as string[] | undefined) ?? []) {
    const eq = kv.indexOf('=')
    const k = eq === -1 ? kv : kv.slice(0, eq)
    const value = kv.slice(eq + 1)
    if (eq === -1 || !ID_PATTERN.test(k) || value.length > 256 || value.includes(','))
      throw usage(
        `--label ${JSON.stringify(kv)} is not allowed: expected key=value with a key of ${ID_RULE} and ` +
          `a value of at most 256 characters without commas`,
      )
    labels[k] = value
  }
  return labels
}

/** Sampling interval in ns from 10ms, 100us, 1s or a plain number of ns. */
export function intervalNs(text: string | undefined, flag = '--interval'): number {
  if (text === undefined) return 0
  const m = /^(\d{1,13})(ns|us|ms|s)?$/.exec(text)
  if (m === null)
    throw usage(`${flag} ${JSON.stringify(text)} is not allowed: a whole number of ns, or with a unit: 10ms, 100us, 1s`)
  const ns = Number(m[1]) * { ns: 1, us: 1e3, ms: 1e6, s: 1e9 }[(m[2] ?? 'ns') as 'ns']
  if (ns <= 0 || ns > 3_600_000_000_000)
    throw usage(`${flag} ${text} is out of range: more than 0 and at most one hour`)
  return ns
}

function timeMs(text: string, flag: string): number {
  const ms = /^\d{1,15}$/.test(text) ? Number(text) : Date.parse(text)
  if (!Number.isFinite(ms) || ms < 0 || ms > 4_102_444_800_000)
    throw usage(
      `${flag} ${JSON.stringify(text)} is not a time: ISO 8601 (2026-12-02T10:00:00Z) or ms since the Unix epoch`,
    )
  return ms
}

function seconds(text: string | undefined, dflt: number | undefined): number | undefined {
  if (text === undefined) return dflt
  if (!/^\d{1,6}$/.test(text) || Number(text) === 0 || Number(text) > 86_400)
    throw usage(`--seconds ${JSON.stringify(text)} is not allowed: a whole number from 1 to 86400`)
  return Number(text)
}

const EVENT = /^[A-Za-z0-9_.:-]{1,64}$/

async function attach(argv: readonly string[], io: ProfileIo): Promise<number> {
  const { values: v, positionals: files } = parsed(() =>
    parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: true,
      options: PROFILE_FLAGS.attach,
    }),
  )
  const runId = runIdOf(v['run-id'])
  const labels = labelsOf(v.label)
  if (files.length === 0) throw usage('at least one FILE is required')
  if (v.event !== undefined && !EVENT.test(v.event))
    throw usage(`--event ${JSON.stringify(v.event)} is not allowed: 1-64 characters from A-Z a-z 0-9 _ . : -`)
  const perf = (v['perf-option'] ?? []).map((o) => {
    if (!(PERF_OPTIONS as readonly string[]).includes(o))
      throw usage(`--perf-option ${JSON.stringify(o)} is not allowed: one of ${PERF_OPTIONS.join(', ')}`)
    return o as PerfOption
  })
  const interval = intervalNs(v.interval)
  const secs = seconds(v.seconds, undefined)
  if (secs !== undefined && v.from !== undefined && v.to !== undefined)
    throw usage('give two of --from, --to and --seconds, not all three')
  // Every file is read and checked before anything is stored.
  const profiles = files.map((file) => {
    let text: string
    try {
      const size = statSync(file).size
      if (size > MAX_PROFILE_FILE_BYTES)
        throw new BenchstreamError(
          'BS_ERR_DECODE',
          `${file}: ${size} bytes; profile files of at most ${MAX_PROFILE_FILE_BYTES} bytes are read`,
        )
      text = readFileSync(file, 'utf8')
    } catch (err) {
      if (err instanceof BenchstreamError) throw err
      throw new BenchstreamError(
        'BS_ERR_USAGE',
        `cannot read profile file ${JSON.stringify(file)}: ${(err as Error).message}`,
        { cause: err },
      )
    }
    const parsed = parseProfileFile(text, file, perfOptions(perf))
    const mtime = statSync(file).mtimeMs
    const toMs =
      v.to !== undefined
        ? timeMs(v.to, '--to')
        : v.from !== undefined
          ? timeMs(v.from, '--from') + (secs ?? 0) * 1000
          : Math.round(mtime)
    const fromMs = v.from !== undefined ? timeMs(v.from, '--from') : toMs - (secs ?? 0) * 1000
    if (toMs < fromMs || toMs - fromMs > 86_400_000)
      throw usage(`${file}: --from ${fromMs} and --to ${toMs} (ms) must be in order and at most one day apart`)
    const norm =
      v['raw-frames'] === true ? { stacks: parsed.stacks, changed: 0 } : normalizeHiddenClasses(parsed.stacks)
    const event =
      v.event ?? (parsed.format === 'perf-script' ? `perf:${(parsed.event ?? 'unknown').split(':')[0]}` : 'cpu')
    const profile: Profile = {
      runId,
      labels,
      fromUs: fromMs * 1000,
      toUs: toMs * 1000,
      event,
      intervalNs: interval,
      source:
        parsed.format === 'perf-script'
          ? 'perf script (stackcollapse-perf rules; counts are sums of periods)'
          : 'folded stacks',
      stacks: norm.stacks,
    }
    const notes = [
      ...parsed.notes,
      ...(norm.changed > 0
        ? [`${norm.changed} stacks had JVM hidden-class addresses, removed (--raw-frames keeps them)`]
        : []),
    ]
    return { file, profile, id: profileId(profile), format: parsed.format, notes }
  })
  const results = await storeProfiles(
    profiles.map((p) => ({ profile: p.profile, id: p.id, origin: path.basename(p.file) })),
    v.kafka === true,
    io.env,
  )
  profiles.forEach((p, i) => {
    const r = results[i]!
    io.out(
      `${r.created ? 'stored' : r.sent ? 'sent' : 'already stored'} profile ${p.id} of run ${runId} ` +
        (`from ${p.file} (${p.format}): ${r.samples} samples, ${r.stacks} ` +
          `stacks${r.created ? ` (${r.newStacks} new)` : ''}\n`),
    )
    for (const n of p.notes) io.out(`  note: ${n}\n`)
  })
  return 0
}

// ---------------------------------------------------------------- capture

async function capture(argv: readonly string[], io: ProfileIo): Promise<number> {
  const { values: v } = parsed(() =>
    parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: PROFILE_FLAGS.capture,
    }),
  )
  const runId = runIdOf(v['run-id'])
  const labels = labelsOf(v.label)
  if (v.pid === undefined || !/^\d{1,10}$/.test(v.pid))
    throw usage(`--pid ${v.pid === undefined ? 'is required' : `${JSON.stringify(v.pid)} is not a process id`}`)
  const event = v.event ?? 'cpu'
  if (!['cpu', 'itimer', 'ctimer', 'wall'].includes(event))
    throw usage(`--event ${JSON.stringify(event)} is not allowed: one of cpu, itimer, ctimer, wall`)
  const secs = seconds(v.seconds, 10)!
  const interval = intervalNs(v.interval ?? (event === 'wall' ? '50ms' : '10ms'))
  const dir = mkdtempSync(path.join(os.tmpdir(), 'benchstream-profile-'))
  try {
    const output = path.join(dir, `pid-${v.pid}.collapsed`)
    const script = path.join(repoRoot(), 'deploy', 'local', 'async-profiler.sh')
    const args = [
      'capture',
      '--pid',
      v.pid,
      '--seconds',
      String(secs),
      '--event',
      event,
      '--interval',
      String(interval),
      '--output',
      output,
      ...(v.threads === true ? ['--threads'] : []),
    ]
    const run = await runScript(script, args, io)
    if (run.code !== 0)
      throw new BenchstreamError(
        'BS_ERR_USAGE',
        `async-profiler could not profile pid ${v.pid} (exit ${run.code}): ` +
          `${run.stderr.trim().split('\n').slice(-3).join(' / ')}`,
      )
    const fromMs = run.startedMs
    const parsed = parseProfileFile(readFileSync(output, 'utf8'), output)
    const norm = normalizeHiddenClasses(parsed.stacks)
    const cpu = /target CPU time in the \d+s window: (\d+) ms/.exec(run.stderr)
    const profile: Profile = {
      runId,
      labels: { host: os.hostname().slice(0, 256), pid: v.pid, ...labels },
      fromUs: fromMs * 1000,
      toUs: (fromMs + secs * 1000) * 1000,
      event,
      intervalNs: interval,
      source: `async-profiler ${io.env.ASYNC_PROFILER_VERSION ?? '4.6'} (${run.engine ?? event})`,
      stacks: norm.stacks,
      ...(cpu === null ? {} : { cpuMs: Number(cpu[1]) }),
    }
    const id = profileId(profile)
    const [r] = await storeProfiles([{ profile, id, origin: `capture pid ${v.pid}` }], v.kafka === true, io.env)
    io.out(
      `${r!.created ? 'stored' : r!.sent ? 'sent' : 'already stored'} profile ${id} of run ${runId}: ` +
        `pid ${v.pid}, ${event} every ${interval} ns for ${secs} s, ${r!.samples} samples, ${r!.stacks} ` +
        `stacks${profile.cpuMs === undefined ? '' : `, target CPU time ${profile.cpuMs} ms`}\n`,
    )
    return 0
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Runs async-profiler.sh, passing its progress through; notes when sampling started (its "profiling pid" line). */
function runScript(
  script: string,
  args: string[],
  io: ProfileIo,
): Promise<{ code: number; stderr: string; startedMs: number; engine: string | undefined }> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', [script, ...args], {
      stdio: ['ignore', 'inherit', 'pipe'],
      env: { ...process.env, ...io.env },
    })
    let stderr = ''
    let startedMs = Date.now()
    let engine: string | undefined
    child.stderr.setEncoding('utf8')
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk
      io.err(chunk)
      // The profiler's own timer starts just before this line; the sampled window is the next N s.
      const m = /profiling pid \d+: event=(\S+)/.exec(chunk)
      if (m !== null) {
        startedMs = Date.now()
        engine = m[1]
      }
    })
    child.on('error', reject)
    child.on('close', (code) => resolve({ code: code ?? 1, stderr, startedMs, engine }))
  })
}

// ---------------------------------------------------------------- list

async function list(argv: readonly string[], io: ProfileIo): Promise<number> {
  const { values: v } = parsed(() =>
    parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: PROFILE_FLAGS.list,
    }),
  )
  const runId = runIdOf(v['run-id'])
  let profiles: ProfileInfo[]
  const api = apiOf(io.env)
  if (api !== undefined)
    profiles = (await call<{ profiles: ProfileInfo[] }>(api, `/api/v1/profiles?run=${encodeURIComponent(runId)}`))
      .profiles
  else profiles = await withLocalStore(io.env, (s) => s.list({ runIds: [runId] }))
  if (v.json === true) io.out(JSON.stringify(profiles, null, 2) + '\n')
  else
    for (const p of profiles)
      io.out(
        `${p.profileId}\t${new Date(p.fromMs).toISOString()}\t${((p.toMs - p.fromMs) / 1000).toFixed(1)} ` +
          `s\t${p.event}\t${p.samples} samples\t${JSON.stringify(p.labels)}\n`,
      )
  return 0
}

// ---------------------------------------------------------------- where profiles go

interface Stored extends StoreResult {
  sent: boolean
}

async function storeProfiles(
  items: Array<{ profile: Profile; id: string; origin: string }>,
  viaKafka: boolean,
  env: Env,
): Promise<Stored[]> {
  if (viaKafka) return sendToKafka(items, env)
  const api = apiOf(env)
  if (api !== undefined) {
    const out: Stored[] = []
    for (const it of items) {
      const [body] = profileBodies(it.profile, it.id, Infinity)
      out.push({ ...(await call<StoreResult>(api, '/api/v1/profiles', { ...body, origin: it.origin })), sent: false })
    }
    return out
  }
  return withLocalStore(env, async (store) => {
    const out: Stored[] = []
    for (const it of items) out.push({ ...(await store.store(it.profile, it.id, it.origin)), sent: false })
    return out
  })
}

async function sendToKafka(items: Array<{ profile: Profile; id: string }>, env: Env): Promise<Stored[]> {
  const infra = readInfraConfig(env)
  const kafka = createKafka(infra.kafka, 'profile')
  await ensureTopics(kafka, infra.kafka, infra.topics)
  const producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    createPartitioner: partitioner,
    allowAutoTopicCreation: false,
  })
  try {
    await producer.connect()
    for (const it of items) {
      // One key per profile: its records stay in order on one partition.
      const messages = encodeProfileRecords(it.profile, it.id, KAFKA_RECORD_BYTES).map((value) => ({
        key: `${it.profile.runId}:${it.id}`,
        value,
      }))
      for (const m of messages) await producer.send({ topic: infra.topics.events, acks: -1, messages: [m] })
    }
  } catch (err) {
    throw new BenchstreamError(
      'BS_ERR_KAFKA',
      `cannot send to Kafka at ${infra.kafka.brokers.join(',')}: ${(err as Error).message}`,
      { cause: err },
    )
  } finally {
    await producer.disconnect().catch(() => undefined)
  }
  return items.map((it) => ({
    profileId: it.id,
    created: false,
    sent: true,
    stacks: it.profile.stacks.size,
    newStacks: 0,
    samples: [...it.profile.stacks.values()].reduce((a, b) => a + b, 0),
  }))
}

function apiOf(env: Env): { url: string; token: string | undefined } | undefined {
  const cli = readCliEnv(env)
  const infra = readInfraConfig(env)
  const url = cli.apiUrl ?? (infra.clickhouse.url === undefined ? findServer(infra.dataDir)?.apiUrl : undefined)
  return url === undefined ? undefined : { url, token: cli.apiToken }
}

async function call<T>(api: { url: string; token: string | undefined }, route: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = api.token === undefined ? {} : { authorization: `Bearer ${api.token}` }
  const res = await fetch(
    api.url + route,
    body === undefined
      ? { headers }
      : { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) },
  )
  const text = await res.text()
  if (!res.ok) {
    let e: { code?: string; message?: string } = {}
    try {
      e = JSON.parse(text) as typeof e
    } catch {
      // not JSON
    }
    const code = typeof e.code === 'string' && e.code in ERROR_CODES ? (e.code as ErrorCode) : 'BS_ERR_BAD_REQUEST'
    throw new BenchstreamError(
      code,
      e.message ?? `the API at ${api.url} answered HTTP ${res.status}: ${text.slice(0, 300)}`,
    )
  }
  return JSON.parse(text) as T
}

async function withLocalStore<T>(env: Env, fn: (store: ClickHouseProfileStore) => Promise<T>): Promise<T> {
  const infra = readInfraConfig(env)
  const ch = openClickHouse(infra.clickhouse)
  try {
    await migrate(ch, { opsTtlDays: infra.clickhouse.opsTtlDays })
    return await fn(new ClickHouseProfileStore(ch))
  } finally {
    await ch.close()
  }
}

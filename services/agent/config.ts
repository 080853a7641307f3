/**
 * `benchstream agent`'s configuration: what this machine's agent may run,
 * from its own command line only (never from the control topic): bindings,
 * YCSB and its bindings, the folders workload files are looked up in,
 * lifecycle commands by name and path, the environment variables steps may
 * set, the processes it may profile. Read and checked once at start.
 */
import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ID_PATTERN, ID_RULE } from '../../schemas/events.v1.js'
import { ENV_NAME } from '../../schemas/experiment-common.v1.js'
import { flagNames, parseFlags, type FlagSpecs } from '../common/args.js'
import { freeze, type Env } from '../common/config.js'
import { readInfraConfig, type InfraConfig } from '../common/infra-config.js'
import { repoRoot } from '../common/repo-root.js'
import { BenchstreamError } from '../core/errors.js'

export const AGENT_FLAGS = {
  name: { type: 'string' },
  label: { type: 'string', multiple: true },
  binding: { type: 'string' },
  ycsb: { type: 'boolean' },
  'ycsb-home': { type: 'string' },
  'ycsb-binding': { type: 'string' },
  workloads: { type: 'string', multiple: true },
  'allow-command': { type: 'string', multiple: true },
  'allow-env': { type: 'string', multiple: true },
  'profile-target': { type: 'string', multiple: true },
  'allow-server-metrics': { type: 'boolean' },
  'heartbeat-ms': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies FlagSpecs

export const AGENT_USAGE = `usage: benchstream agent [options]
Runs on a client machine: registers on the control topic (KAFKA_BROKERS, BENCHSTREAM_TOPIC_CONTROL), heartbeats,
measures its clock against the broker's, and runs the work of \`benchstream experiment run\` addressed to it, but only
what these options allow; it never runs a command string from the topic.
  --name <name>               this agent's name, unique among the agents (default: the host name); it is claimed
                              first: if an agent heartbeats under it, this one exits (BS_ERR_AGENT_NAME_TAKEN)
  --label <key>=<value>       a label plans can select agents by (repeatable)
  --binding <list>            Benchstream bindings it may run, comma-separated (default: memory,redis,postgres)
  --ycsb                      it may run real YCSB through the bridge (benchstream ycsb)
  --ycsb-home <dir>           ... with this YCSB installation (implies --ycsb)
  --ycsb-binding <list>       YCSB -db names it may run (default: redis,hbase, and the bindings of --ycsb-home)
  --workloads <dir>           a folder of workload files plans may name (repeatable; default: the project's workloads/)
  --allow-command <name>=<path>  a lifecycle command plans may run by name (repeatable), e.g.
                              hbase=/opt/benchstream/deploy/local/hbase.sh; its arguments come from the plan
  --allow-env <NAME>          an environment variable plan steps may set (repeatable), e.g. HBASE_VERSION
  --profile-target <name>=<pidfile>  a process plans may profile (async-profiler), by the pid in the file (repeatable)
  --allow-server-metrics      plans may have this agent's clients sample a datastore's metrics URL
  --heartbeat-ms <ms>         heartbeat interval, 200 to 10000 (default 1000)
  -h, --help                  this text
environment: KAFKA_BROKERS, BENCHSTREAM_TOPIC_CONTROL (docs/reference/configuration.md);
  BENCHSTREAM_AGENT_CLOCK_SKEW_MS moves this agent's clock by that many ms (tests: a machine whose clock is off)`

export const AGENT_FLAG_NAMES = flagNames(AGENT_FLAGS)

/** The Benchstream driver's bindings an agent offers when --binding is not given. */
const DEFAULT_BINDINGS = ['memory', 'redis', 'postgres']
const DEFAULT_YCSB_BINDINGS = ['redis', 'hbase']
/** Workload files listed in a heartbeat at most. */
const MAX_WORKLOADS = 512

export interface AgentConfig {
  name: string
  labels: Record<string, string>
  bindings: string[]
  ycsb: boolean
  ycsbHome: string | undefined
  ycsbBindings: string[]
  /** Real paths of the workload folders, in order. */
  workloadDirs: string[]
  /** name -> absolute path of the executable. */
  commands: Record<string, string>
  env: string[]
  /** name -> pid file. */
  profileTargets: Record<string, string>
  allowServerMetrics: boolean
  heartbeatMs: number
  /** Moves this agent's clock (tests). */
  clockSkewMs: number
  infra: InfraConfig
}

function usage(message: string): BenchstreamError {
  return new BenchstreamError('BS_ERR_USAGE', `${message}\n${AGENT_USAGE}`)
}

function pairs(flag: string, values: readonly string[] | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  for (const v of values ?? []) {
    const eq = v.indexOf('=')
    const name = v.slice(0, eq)
    if (eq <= 0 || !ID_PATTERN.test(name) || v.slice(eq + 1) === '')
      throw usage(`--${flag} ${JSON.stringify(v)} is not NAME=VALUE with a name of ${ID_RULE}`)
    if (Object.hasOwn(out, name)) throw usage(`--${flag} ${name} is given twice`)
    out[name] = v.slice(eq + 1)
  }
  return out
}

const list = (v: string | undefined, def: string[]): string[] =>
  v === undefined
    ? def
    : v
        .split(',')
        .map((s) => s.trim())
        .filter((s) => s !== '')

export function readAgentConfig(argv: readonly string[], env: Env): Readonly<AgentConfig> | 'help' {
  const { values: v } = parseFlags(argv, AGENT_FLAGS, AGENT_USAGE)
  if (v.help === true) return 'help'
  const name =
    v.name ??
    os
      .hostname()
      .replace(/[^A-Za-z0-9._:-]/g, '-')
      .slice(0, 64)
  if (!ID_PATTERN.test(name)) throw usage(`--name ${JSON.stringify(name)} is not allowed: ${ID_RULE}`)
  const labels = pairs('label', v.label)
  const commands: Record<string, string> = {}
  for (const [cmd, file] of Object.entries(pairs('allow-command', v['allow-command']))) {
    const abs = path.resolve(file)
    if (!existsSync(abs) || !statSync(abs).isFile())
      throw usage(`--allow-command ${cmd}=${file}: no such file (${abs})`)
    commands[cmd] = abs
  }
  const envNames = v['allow-env'] ?? []
  for (const e of envNames)
    if (!new RegExp(ENV_NAME).test(e) || /^(LD_|DYLD_)|^(PATH|NODE_OPTIONS|BASH_ENV|ENV|JAVA_TOOL_OPTIONS)$/.test(e))
      throw usage(
        `--allow-env ${JSON.stringify(e)} is not allowed: A-Z 0-9 _, and not a variable that changes what runs`,
      )
  const dirs = (v.workloads ?? [path.join(repoRoot(), 'workloads')]).map((d) => {
    const abs = path.resolve(d)
    if (!existsSync(abs) || !statSync(abs).isDirectory()) throw usage(`--workloads ${d}: no such folder (${abs})`)
    return realpathSync(abs)
  })
  const ycsbHome = v['ycsb-home'] === undefined ? undefined : path.resolve(v['ycsb-home'])
  if (ycsbHome !== undefined && !existsSync(path.join(ycsbHome, 'lib')))
    throw usage(`--ycsb-home ${ycsbHome}: not a YCSB installation (no lib/ folder)`)
  const homeBindings = ycsbHome === undefined ? [] : bindingsOfHome(ycsbHome)
  const heartbeatMs = v['heartbeat-ms'] === undefined ? 1000 : Number(v['heartbeat-ms'])
  if (!Number.isInteger(heartbeatMs) || heartbeatMs < 200 || heartbeatMs > 10_000)
    throw usage(`--heartbeat-ms ${JSON.stringify(v['heartbeat-ms'])} is not allowed: an integer from 200 to 10000`)
  const skew = Number(env.BENCHSTREAM_AGENT_CLOCK_SKEW_MS ?? '0')
  if (!Number.isFinite(skew) || Math.abs(skew) > 86_400_000)
    throw new BenchstreamError('BS_ERR_CONFIG', 'BENCHSTREAM_AGENT_CLOCK_SKEW_MS must be a number of ms within a day')
  return freeze({
    name,
    labels,
    bindings: list(v.binding, DEFAULT_BINDINGS),
    ycsb: v.ycsb === true || ycsbHome !== undefined,
    ycsbHome,
    ycsbBindings: [...new Set([...list(v['ycsb-binding'], DEFAULT_YCSB_BINDINGS), ...homeBindings])],
    workloadDirs: dirs,
    commands,
    env: envNames,
    profileTargets: pairs('profile-target', v['profile-target']),
    allowServerMetrics: v['allow-server-metrics'] === true,
    heartbeatMs,
    clockSkewMs: skew,
    infra: readInfraConfig(env),
  })
}

/** YCSB's binding names from an installation's bin/bindings.properties (name:class lines). */
function bindingsOfHome(home: string): string[] {
  const file = path.join(home, 'bin', 'bindings.properties')
  if (!existsSync(file)) return []
  return readFileSync(file, 'utf8')
    .split('\n')
    .map((l) => /^([A-Za-z0-9._-]+):/.exec(l.trim())?.[1])
    .filter((x): x is string => x !== undefined)
}

/** Workload files under the folders, as paths relative to their folder (first folder wins), at most MAX_WORKLOADS. */
export function listWorkloads(dirs: readonly string[]): string[] {
  const out = new Set<string>()
  const walk = (root: string, rel: string, depth: number): void => {
    if (depth > 3 || out.size >= MAX_WORKLOADS) return
    for (const e of readdirSync(path.join(root, rel), { withFileTypes: true })) {
      if (e.name.startsWith('.')) continue
      const r = rel === '' ? e.name : `${rel}/${e.name}`
      if (e.isDirectory()) walk(root, r, depth + 1)
      else if (e.isFile() && out.size < MAX_WORKLOADS) out.add(r)
    }
  }
  for (const d of dirs) walk(d, '', 0)
  return [...out].sort()
}

/**
 * The file a plan's workload names on this machine: `workloada` or `workloads/workloada` (a folder's own name may
 * lead), found in the folders and never outside them (no `..`, no link out). undefined when there is none.
 */
export function resolveWorkload(dirs: readonly string[], name: string): string | undefined {
  if (name.split('/').some((p) => p === '..' || p === '.' || p === '')) return undefined
  for (const d of dirs) {
    for (const rel of [name, name.split('/').slice(1).join('/')]) {
      if (rel === '') continue
      const abs = path.join(d, rel)
      if (!existsSync(abs) || !statSync(abs).isFile()) continue
      const real = realpathSync(abs)
      if (real.startsWith(d + path.sep)) return real
    }
  }
  return undefined
}

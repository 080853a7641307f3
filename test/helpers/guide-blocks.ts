/**
 * Each guide's first block of commands (docs/guides/*.md, its first ```sh block), as a newcomer runs it on a fresh
 * clone: read with the marker that says how (guide-blocks' syntax below), and run in a fresh copy of the checkout
 * with private ports, bounded in time, its background commands checked and stopped.
 *
 * A guide may carry one marker, an HTML comment before its first block:
 *
 *   <!-- first-block-test
 *   skip: needs a real HBase (npm run test:hbase runs this)     not run here; listed with the reason
 *   setup: npx benchstream server &                              a shell line run before the block (repeatable):
 *                                                                what the block assumes (a server, a run r1)
 *   interrupt: 5 --follow                                        block lines containing "--follow" run until
 *                                                                Ctrl-C: SIGINT after 5 s (exit 0 or 130)
 *   exit: 5 benchstream compare                                  block lines containing the text may also exit
 *                                                                with that code (a documented outcome: undecided)
 *   timeout: 600                                                 seconds for setup and block (default 600)
 *   -->
 *
 * The fresh copy is what a clone holds after `npm install`: the checkout's files (git ls-files: tracked and
 * untracked-not-ignored, so uncommitted work is tested too; nothing ignored, no .benchstream), its node_modules
 * (linked) and dist/ (copied: `npm install` builds it, the test tier builds first). The environment is a clean one
 * (PATH, HOME, locale) plus KAFKA_PORT and API_PORT on free ports: nothing of the caller's KAFKA_BROKERS or data dirs.
 */
import { spawn, spawnSync } from 'node:child_process'
import {
  copyFileSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'

/** How a guide's first block is run. */
export interface GuideMarker {
  /** Why it is not run here; undefined = it is run. */
  skip: string | undefined
  setup: string[]
  interrupt: Array<{ afterS: number; text: string }>
  /** Block lines containing text may exit with code as well as 0. */
  exit: Array<{ code: number; text: string }>
  timeoutS: number
}

export interface GuideBlock {
  /** docs/guides/NAME.md */
  guide: string
  /** The first ```sh block's lines; undefined when the guide has none. */
  block: string | undefined
  /** 1-based line of the block's first line. */
  line: number
  marker: GuideMarker
}

const DEFAULT_TIMEOUT_S = 600
const MARKER = /<!-- first-block-test\n([\s\S]*?)-->/g

/** The marker's text as a GuideMarker; throws on a key it does not know or a malformed value. */
export function parseMarker(body: string, where: string): GuideMarker {
  const m: GuideMarker = { skip: undefined, setup: [], interrupt: [], exit: [], timeoutS: DEFAULT_TIMEOUT_S }
  for (const raw of body.split('\n')) {
    const line = raw.trim()
    if (line === '') continue
    const kv = /^(skip|setup|interrupt|exit|timeout):\s*(.*)$/.exec(line)
    if (kv === null)
      throw new Error(`${where}: "${line}" is not a first-block-test line (skip:, setup:, interrupt:, exit:, timeout:)`)
    const [, key, value] = kv as unknown as [string, string, string]
    if (value === '') throw new Error(`${where}: ${key}: needs a value`)
    if (key === 'skip') m.skip = value
    else if (key === 'setup') m.setup.push(value)
    else if (key === 'timeout') {
      const n = Number(value)
      if (!Number.isInteger(n) || n < 10 || n > 3600) throw new Error(`${where}: timeout: ${value}: 10 to 3600 s`)
      m.timeoutS = n
    } else {
      const i = /^(\d+)\s+(\S.*)$/.exec(value)
      if (i === null)
        throw new Error(`${where}: ${key}: ${value}: expected ${key === 'exit' ? 'CODE' : 'SECONDS'} TEXT`)
      if (key === 'exit') {
        const code = Number(i[1])
        if (code < 1 || code > 255) throw new Error(`${where}: exit: ${value}: a code from 1 to 255`)
        m.exit.push({ code, text: i[2]! })
      } else m.interrupt.push({ afterS: Number(i[1]), text: i[2]! })
    }
  }
  if (m.skip !== undefined && (m.setup.length > 0 || m.interrupt.length > 0 || m.exit.length > 0))
    throw new Error(`${where}: a skipped block has no setup, interrupt or exit`)
  return m
}

/** Every guide's first block and marker, in file order. */
export function readGuideBlocks(root: string): GuideBlock[] {
  const dir = path.join(root, 'docs', 'guides')
  return readdirSync(dir)
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => {
      const guide = `docs/guides/${f}`
      const text = readFileSync(path.join(dir, f), 'utf8')
      const lines = text.split('\n')
      const open = lines.findIndex((l) => l.trim() === '```sh')
      const close = open === -1 ? -1 : lines.findIndex((l, i) => i > open && l.trim() === '```')
      const markers = [...text.matchAll(MARKER)]
      if (markers.length > 1) throw new Error(`${guide}: more than one first-block-test marker`)
      const at = markers[0]
      if (at !== undefined) {
        const markerLine = text.slice(0, at.index).split('\n').length
        if (open === -1) throw new Error(`${guide}:${markerLine}: a first-block-test marker but no \`\`\`sh block`)
        if (markerLine > open) throw new Error(`${guide}:${markerLine}: the marker must come before the first block`)
      }
      return {
        guide,
        block: open === -1 || close === -1 ? undefined : lines.slice(open + 1, close).join('\n'),
        line: open + 2,
        marker: parseMarker(at?.[1] ?? '', guide),
      }
    })
}

/** The shell script a block runs as: setup, the block (interrupted lines wrapped), then the background jobs listed. */
export function blockScript(b: GuideBlock, jobsFile: string): string {
  const wrap = (line: string): string => {
    const i = b.marker.interrupt.find((x) => line.includes(x.text))
    if (i !== undefined) return `__until_ctrl_c ${i.afterS} ${line}`
    const e = b.marker.exit.find((x) => line.includes(x.text))
    return e === undefined ? line : `__exit_ok ${e.code} ${line}`
  }
  return [
    'set -eo pipefail',
    // A command that runs until Ctrl-C gets SIGINT after N s; exiting 0 or as interrupted (130) is a success.
    '__until_ctrl_c() { local s=$1; shift; local rc=0; timeout --preserve-status -s INT "$s" "$@" || rc=$?; ' +
      '[ "$rc" -eq 0 ] || [ "$rc" -eq 130 ]; }',
    // A command whose documented outcome may be another code (compare's "undecided", 5).
    '__exit_ok() { local c=$1; shift; local rc=0; "$@" || rc=$?; [ "$rc" -eq 0 ] || [ "$rc" -eq "$c" ]; }',
    ...b.marker.setup,
    ...(b.block ?? '').split('\n').map(wrap),
    `jobs -p > ${JSON.stringify(jobsFile)}`,
    '',
  ].join('\n')
}

/** A fresh copy of the checkout at root (see the header); returns its folder. */
export function freshCopy(root: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'benchstream-guide-'))
  const ls = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  })
  if (ls.status !== 0) throw new Error(`git ls-files failed in ${root}: ${ls.stderr}`)
  for (const f of ls.stdout.split('\0').filter((x) => x !== '')) {
    const from = path.join(root, f)
    if (!existsSync(from) && !isLink(from)) continue // deleted in the working tree
    mkdirSync(path.dirname(path.join(dir, f)), { recursive: true })
    if (isLink(from)) symlinkSync(readlinkSync(from), path.join(dir, f))
    else copyFileSync(from, path.join(dir, f))
  }
  symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'))
  cpSync(path.join(root, 'dist'), path.join(dir, 'dist'), { recursive: true, verbatimSymlinks: true })
  return dir
}

function isLink(p: string): boolean {
  try {
    return lstatSync(p).isSymbolicLink()
  } catch {
    return false
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port
      s.close(() => resolve(port))
    })
  })
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer()
    s.once('error', () => resolve(false))
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)))
  })
}

/** A free port whose next port is free too (the local broker's controller takes it). */
export async function freePortPair(): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const p = await freePort()
    if (p < 65534 && (await portFree(p + 1))) return p
  }
  throw new Error('no two free ports in a row after 50 tries')
}

/** Whether something accepts connections on 127.0.0.1:port. */
export function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port })
    const done = (ok: boolean): void => {
      s.destroy()
      resolve(ok)
    }
    s.setTimeout(1000, () => done(false))
    s.once('connect', () => done(true))
    s.once('error', () => done(false))
  })
}

export interface GuideRun {
  /** The script's exit code; null when it was killed at its timeout. */
  code: number | null
  timedOut: boolean
  stdout: string
  stderr: string
  /** Seconds the setup and block took. */
  seconds: number
  /** Background commands of the block (`server &`) that had already exited when the block ended. */
  deadJobs: number[]
  /** Seconds SIGTERM took to end every process the block started; null when SIGKILL had to. */
  stopSeconds: number | null
  /** Whether something still answered on KAFKA_PORT after everything stopped (a broker left behind). */
  brokerLeft: boolean
  kafkaPort: number
  apiPort: number
  /** The fresh copy it ran in (removed afterwards unless keep). */
  dir: string
}

/** Longest wait for everything a block started to end after SIGTERM (the server stops its broker: up to 30 s). */
const STOP_WAIT_S = 90
const KEEP_OUTPUT = 64 * 1024

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0)
    return true
  } catch {
    return false
  }
}

async function waitGone(pgid: number, seconds: number): Promise<boolean> {
  const deadline = Date.now() + seconds * 1000
  while (Date.now() < deadline) {
    if (!groupAlive(pgid)) return true
    await new Promise((r) => setTimeout(r, 250))
  }
  return !groupAlive(pgid)
}

/**
 * Runs a guide's setup and first block in a fresh copy (see the header), then stops what it left running (SIGTERM to
 * its process group, as a shell's Ctrl-C or `kill %1` does) and checks that nothing was left behind.
 */
export async function runGuideBlock(root: string, b: GuideBlock, o: { keep?: boolean } = {}): Promise<GuideRun> {
  const dir = freshCopy(root)
  const kafkaPort = await freePortPair()
  const apiPort = await freePort()
  const jobsFile = path.join(dir, '.guide-jobs')
  const script = path.join(dir, '.guide-block.sh')
  writeFileSync(script, blockScript(b, jobsFile))
  const env: Record<string, string> = { KAFKA_PORT: String(kafkaPort), API_PORT: String(apiPort) }
  for (const k of ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR', 'XDG_CACHE_HOME', 'JAVA_HOME', 'MAVEN_OPTS'])
    if (process.env[k] !== undefined) env[k] = process.env[k]!
  const started = Date.now()
  const child = spawn('bash', [script], { cwd: dir, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  const pgid = child.pid!
  let stdout = ''
  let stderr = ''
  const keep = (acc: string, d: Buffer): string => (acc + d.toString()).slice(-KEEP_OUTPUT)
  child.stdout.on('data', (d: Buffer) => (stdout = keep(stdout, d)))
  child.stderr.on('data', (d: Buffer) => (stderr = keep(stderr, d)))
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    try {
      process.kill(-pgid, 'SIGKILL')
    } catch {
      // gone already
    }
  }, b.marker.timeoutS * 1000)
  // 'exit', not 'close': what the block left running in the background holds the pipes open until it is stopped.
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)))
  clearTimeout(timer)
  const seconds = (Date.now() - started) / 1000
  const jobs = existsSync(jobsFile)
    ? readFileSync(jobsFile, 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map(Number)
    : []
  const deadJobs = jobs.filter((pid) => {
    try {
      process.kill(pid, 0)
      return false
    } catch {
      return true
    }
  })
  let stopSeconds: number | null = null
  const t0 = Date.now()
  try {
    process.kill(-pgid, 'SIGTERM')
  } catch {
    // nothing left
  }
  if (await waitGone(pgid, STOP_WAIT_S)) stopSeconds = (Date.now() - t0) / 1000
  else {
    try {
      process.kill(-pgid, 'SIGKILL')
    } catch {
      // gone
    }
  }
  const brokerLeft = await answers(kafkaPort)
  // Whatever the checks say, no broker of this copy outlives the test.
  spawnSync('bash', [path.join(dir, 'deploy', 'local', 'kafka.sh'), 'stop'], {
    env: { ...env, KAFKA_DATA_DIR: path.join(dir, '.benchstream', `kafka-${kafkaPort}`) },
    stdio: 'ignore',
  })
  if (o.keep !== true) rmSync(dir, { recursive: true, force: true, maxRetries: 3 })
  return { code, timedOut, stdout, stderr, seconds, deadJobs, stopSeconds, brokerLeft, kafkaPort, apiPort, dir }
}

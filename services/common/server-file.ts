/**
 * Where a running server can be found: `<BENCHSTREAM_DATA_DIR>/server.json`,
 * written when its API listens and removed when it stops. Read commands
 * (report, sql, runs) use it to go through the API while the server holds
 * the embedded data directory (chDB binds it to one process), instead of
 * failing on the lock. Before that, a starting server writes it without an
 * API (`starting`), so that a command started beside it (`benchstream server
 * & benchstream experiment run ...`) can wait for it rather than fail.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'

export interface ServerFile {
  pid: number
  apiUrl: string
  startedAt: string
}

const NAME = 'server.json'

/**
 * Says that this process is starting a server on dataDir (no API yet; writeServerFile replaces it once the API
 * listens). Returns the removal, for a start that fails.
 */
export function markServerStarting(dataDir: string): () => void {
  const file = path.join(dataDir, NAME)
  mkdirSync(dataDir, { recursive: true })
  writeAtomically(file, { pid: process.pid, starting: true, startedAt: new Date().toISOString() })
  return () => removeOwn(file)
}

/** The pid of a server starting on dataDir (its API not listening yet), or undefined. */
export function findStartingServer(dataDir: string): number | undefined {
  try {
    const f = JSON.parse(readFileSync(path.join(dataDir, NAME), 'utf8')) as { pid?: unknown; starting?: unknown }
    if (f.starting !== true || typeof f.pid !== 'number') return undefined
    process.kill(f.pid, 0) // throws when no such process
    return f.pid
  } catch {
    return undefined
  }
}

/** Readers never see half a file: written beside it, then renamed over it. */
function writeAtomically(file: string, value: object): void {
  const tmp = `${file}.${process.pid}.tmp`
  writeFileSync(tmp, JSON.stringify(value) + '\n')
  renameSync(tmp, file)
}

function removeOwn(file: string): void {
  try {
    const f = JSON.parse(readFileSync(file, 'utf8')) as { pid?: unknown }
    if (f.pid === process.pid) rmSync(file, { force: true })
  } catch {
    // already gone
  }
}

export function writeServerFile(dataDir: string, apiUrl: string): () => void {
  const file = path.join(dataDir, NAME)
  writeAtomically(file, { pid: process.pid, apiUrl, startedAt: new Date().toISOString() } satisfies ServerFile)
  return () => removeOwn(file)
}

/** The running server of this data directory, or undefined (none, or a file left by one that died). */
export function findServer(dataDir: string): ServerFile | undefined {
  try {
    const f = JSON.parse(readFileSync(path.join(dataDir, NAME), 'utf8')) as Partial<ServerFile>
    if (typeof f.pid !== 'number' || typeof f.apiUrl !== 'string' || !/^https?:\/\//.test(f.apiUrl)) return undefined
    process.kill(f.pid, 0) // throws when no such process
    return { pid: f.pid, apiUrl: f.apiUrl, startedAt: String(f.startedAt) }
  } catch {
    return undefined
  }
}

/** How long a command waits for a server, and what it says while it does. */
export interface AwaitServerOptions {
  /** For a server of this data directory to show up at all (one started on the same command line, `... &`). */
  appearMs: number
  /** For a server that is starting (its marker there, its process alive): the local broker, the engine. */
  startingMs: number
  /** Told once when the wait begins: the starting server's pid, or undefined while there is none yet. */
  onWait?: (startingPid: number | undefined) => void
  /**
   * While no server has been seen starting: another way the wait is over (the local broker answers, started by other
   * means); awaitServer then resolves undefined.
   */
  alsoDone?: () => Promise<boolean>
  /** @default 250 */
  pollMs?: number
}

/**
 * The running server of dataDir: at once when there is one; after waiting while one is starting; undefined when none
 * appeared within appearMs, or a starting one died or took longer than startingMs.
 */
export async function awaitServer(dataDir: string, o: AwaitServerOptions): Promise<ServerFile | undefined> {
  const t0 = Date.now()
  const pause = (): Promise<void> => new Promise((r) => setTimeout(r, o.pollMs ?? 250))
  let seenStarting = false
  let toldNone = false
  for (;;) {
    const up = findServer(dataDir)
    if (up !== undefined) return up
    const starting = findStartingServer(dataDir)
    const elapsed = Date.now() - t0
    if (starting !== undefined) {
      if (!seenStarting) o.onWait?.(starting)
      seenStarting = true
      if (elapsed >= o.startingMs) return undefined
    } else if (seenStarting) {
      // It was starting and is not any more: up by now (look once more), or its start failed.
      await pause()
      return findServer(dataDir)
    } else {
      if (elapsed >= o.appearMs || (o.alsoDone !== undefined && (await o.alsoDone()))) return undefined
      if (!toldNone) o.onWait?.(undefined)
      toldNone = true
    }
    await pause()
  }
}

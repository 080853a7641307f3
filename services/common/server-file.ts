/**
 * Where a running server can be found: `<BENCHSTREAM_DATA_DIR>/server.json`,
 * written when its API listens and removed when it stops. Read commands
 * (report, sql, runs) use it to go through the API while the server holds
 * the embedded data directory (chDB binds it to one process), instead of
 * failing on the lock.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'

export interface ServerFile {
  pid: number
  apiUrl: string
  startedAt: string
}

const NAME = 'server.json'

export function writeServerFile(dataDir: string, apiUrl: string): () => void {
  const file = path.join(dataDir, NAME)
  writeFileSync(
    file,
    JSON.stringify({ pid: process.pid, apiUrl, startedAt: new Date().toISOString() } satisfies ServerFile) + '\n',
  )
  return () => {
    try {
      const f = JSON.parse(readFileSync(file, 'utf8')) as Partial<ServerFile>
      if (f.pid === process.pid) rmSync(file, { force: true })
    } catch {
      // already gone
    }
  }
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

/**
 * Child side of processor-process.ts: runs one processor (no API) with the
 * environment it was forked with and answers the parent's requests over IPC.
 * Not a benchmark on its own.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { queryRows } from '../services/adapters/clickhouse/client.js'
import { startServer, type Server } from '../services/server/main.js'
import type {
  ChildStats,
  FlushLog,
  MemorySample,
  Reply,
  Request,
  WatchEntry,
  WatchResult,
} from './processor-process.js'

const send = (m: Reply): void => void process.send!(m)
const now = (): number => performance.timeOrigin + performance.now()

interface Watch {
  sql: string
  everyMs: number
  entries: Map<string, WatchEntry>
  pollMs: number[]
  stopped: boolean
}

async function main(): Promise<void> {
  if (process.send === undefined) {
    process.stderr.write(
      'bench/processor-child.js is started by the benchmarks through IPC (processor-process.ts), not by hand\n',
    )
    process.exit(2)
  }
  // The parent going away must not leave a processor (and its group membership) behind.
  process.on('disconnect', () => process.exit(1))
  const flushLog: FlushLog = { flushes: 0, firstFlushAtMs: 0, lastFlushAtMs: 0, windowRows: 0 }
  const t0 = performance.now()
  let svc: Server
  try {
    svc = await startServer(process.env, {
      // BENCH_API=1: serve the API too (benchmarks that load it); its URL comes back in 'ready'.
      api: process.env.BENCH_API === '1',
      onFlushed: (b) => {
        const at = now()
        if (flushLog.flushes === 0) flushLog.firstFlushAtMs = at
        flushLog.lastFlushAtMs = at
        flushLog.flushes++
        flushLog.windowRows += b.windows.length
      },
    })
  } catch (err) {
    send({ type: 'failed', message: (err as Error).stack ?? String(err) })
    process.exit(1)
  }
  let watch: Watch | undefined
  let lastMessages = 0
  let lastMessageAtMs = now()
  setInterval(() => {
    if (svc.processor.stats.messages !== lastMessages) {
      lastMessages = svc.processor.stats.messages
      lastMessageAtMs = now()
    }
  }, 20).unref()
  let profiler: Session | undefined

  const poll = async (w: Watch): Promise<void> => {
    while (!w.stopped) {
      const started = performance.now()
      try {
        // On the readers' connection, as the API reads: not in the inserts' queue.
        const rows = await queryRows<{ k: string; v: string | number }>(svc.reader, w.sql)
        const at = now()
        for (const r of rows) {
          const v = Number(r.v)
          const prev = w.entries.get(String(r.k))
          if (prev === undefined || prev.v !== v) w.entries.set(String(r.k), { v, changedAtMs: at })
        }
      } catch (err) {
        process.stderr.write(`watch query failed: ${(err as Error).message}\n`)
      }
      const took = performance.now() - started
      w.pollMs.push(took)
      await new Promise((r) => setTimeout(r, Math.max(0, w.everyMs - took)))
    }
  }

  const handle = async (m: Request): Promise<unknown> => {
    switch (m.type) {
      case 'query':
        return queryRows(svc.ch, m.sql)
      case 'command':
        await svc.ch.client.command({ query: m.sql })
        return undefined
      case 'memory': {
        const gc = (globalThis as { gc?: () => void }).gc
        if (m.gc && gc !== undefined) gc()
        const u = process.memoryUsage()
        const { rssAnon, rssFile } = rssParts()
        const s: MemorySample = {
          rss: u.rss,
          heapUsed: u.heapUsed,
          heapTotal: u.heapTotal,
          external: u.external,
          arrayBuffers: u.arrayBuffers,
          rssAnon,
          rssFile,
          gc: m.gc && gc !== undefined,
        }
        return s
      }
      case 'stats': {
        const s: ChildStats = { processor: svc.processor.stats, flushLog, lastMessageAtMs }
        return s
      }
      case 'watch':
        if (watch !== undefined) watch.stopped = true
        watch = { sql: m.sql, everyMs: m.everyMs, entries: new Map(), pollMs: [], stopped: false }
        void poll(watch)
        return undefined
      case 'watched': {
        const w = watch
        if (w === undefined) throw new Error('nothing is watched: send a watch request first')
        const sorted = [...w.pollMs].sort((a, b) => a - b)
        const r: WatchResult = {
          entries: Object.fromEntries(w.entries),
          polls: w.pollMs.length,
          pollMsMedian: sorted[sorted.length >> 1] ?? 0,
          pollMsMax: sorted[sorted.length - 1] ?? 0,
        }
        return r
      }
      case 'profile-start':
        profiler = new Session()
        profiler.connect()
        await profiler.post('Profiler.enable')
        await profiler.post('Profiler.start')
        return undefined
      case 'profile-stop': {
        if (profiler === undefined) throw new Error('the profiler is not running: send profile-start first')
        const { profile } = await profiler.post('Profiler.stop')
        writeFileSync(m.file, JSON.stringify(profile))
        profiler.disconnect()
        profiler = undefined
        return undefined
      }
      case 'stop':
        if (watch !== undefined) watch.stopped = true
        await svc.stop()
        // Exit after the reply is out; exiting also writes a --cpu-prof profile.
        setTimeout(() => process.exit(0), 50)
        return undefined
    }
  }

  process.on('message', (m: Request) => {
    handle(m).then(
      (value) => send({ type: 'reply', id: m.id, ok: true, value }),
      (err: unknown) => send({ type: 'reply', id: m.id, ok: false, message: (err as Error).message }),
    )
  })
  send({
    type: 'ready',
    atMs: now(),
    startupMs: performance.now() - t0,
    clickhouse: `${svc.ch.mode} at ${svc.ch.location}`,
    apiUrl: svc.apiUrl ?? '',
  })
}

/** RssAnon and RssFile of /proc/self/status, bytes (Linux only; 0 elsewhere). */
function rssParts(): { rssAnon: number; rssFile: number } {
  let status = ''
  try {
    status = readFileSync('/proc/self/status', 'utf8')
  } catch {
    return { rssAnon: 0, rssFile: 0 }
  }
  const kib = (field: string): number =>
    1024 * Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0)
  return { rssAnon: kib('RssAnon'), rssFile: kib('RssFile') }
}

void main()

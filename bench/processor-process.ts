/**
 * A Benchstream processor in a child process, driven over IPC by a bench.
 *
 * Why a child: the embedded ClickHouse (chDB) binds one data directory to one
 * process, the processor's memory must be measured without the bench's own,
 * and a CPU profile should hold only the processor. The child
 * (processor-child.ts) runs startServer with the given environment
 * and answers the requests below. Timestamps are epoch milliseconds from
 * performance.timeOrigin + performance.now(), comparable between the two
 * processes.
 */
import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { BenchstreamError } from '../services/core/errors.js'
import type { ProcessorStats } from '../services/processor/app.js'

export interface MemorySample {
  rss: number
  heapUsed: number
  heapTotal: number
  external: number
  arrayBuffers: number
  /**
   * Of rss: anonymous memory (heaps of V8, glibc malloc and ClickHouse's jemalloc) and file-backed pages (mostly
   * libchdb.so's code), from /proc/self/status; 0 where that is unreadable.
   */
  rssAnon: number
  rssFile: number
  /** Whether a full GC ran just before (the child needs --expose-gc). */
  gc: boolean
}

export interface FlushLog {
  flushes: number
  firstFlushAtMs: number
  lastFlushAtMs: number
  windowRows: number
}

/** One watched key: its latest value and when that value was first seen. */
export interface WatchEntry {
  v: number
  /** When the poll that first returned this value completed, epoch ms. */
  changedAtMs: number
}

export interface WatchResult {
  entries: Record<string, WatchEntry>
  polls: number
  /** Durations of the polls' queries, ms. */
  pollMsMedian: number
  pollMsMax: number
}

export type Request =
  | { id: number; type: 'query'; sql: string }
  /** A statement without a result (SYSTEM ..., SET ...). */
  | { id: number; type: 'command'; sql: string }
  | { id: number; type: 'memory'; gc: boolean }
  | { id: number; type: 'stats' }
  /** Polls `sql` (rows {k, v}) every everyMs and keeps, per k, the latest v and when it changed. */
  | { id: number; type: 'watch'; sql: string; everyMs: number }
  | { id: number; type: 'watched' }
  /** Starts the V8 CPU profiler in the child (node:inspector), so the profile covers the measured work only. */
  | { id: number; type: 'profile-start' }
  /** Stops it and writes the .cpuprofile to `file`. */
  | { id: number; type: 'profile-stop'; file: string }
  | { id: number; type: 'stop' }

export type Reply =
  | { type: 'ready'; atMs: number; startupMs: number; clickhouse: string; apiUrl: string }
  | { type: 'failed'; message: string }
  | { type: 'reply'; id: number; ok: true; value: unknown }
  | { type: 'reply'; id: number; ok: false; message: string }

export interface ChildStats {
  processor: ProcessorStats
  flushLog: FlushLog
  /** When processor.stats.messages last changed (sampled every 20 ms): the last message taken from Kafka, epoch ms. */
  lastMessageAtMs: number
}

type RequestBody = Request extends infer R ? (R extends { id: number } ? Omit<R, 'id'> : never) : never

export class ProcessorProcess {
  private nextId = 1
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>()
  private exited: Promise<number>
  private exitCode: number | undefined

  private constructor(
    private readonly child: ChildProcess,
    /** When the processor had joined its group and started fetching, epoch ms. */
    readonly readyAtMs: number,
    /** From fork to ready, ms (chDB start, migrations, group join). */
    readonly startupMs: number,
    /** ClickHouse mode and location. */
    readonly clickhouse: string,
    /** The child's API (BENCH_API=1), else ''. */
    readonly apiUrl: string,
  ) {
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code ?? 1)))
    void this.exited.then((code) => {
      this.exitCode = code
      for (const w of this.waiting.values()) w.reject(new Error(`processor child exited with code ${code}`))
      this.waiting.clear()
    })
    child.on('message', (m: Reply) => {
      if (m.type !== 'reply') return
      const w = this.waiting.get(m.id)
      if (w === undefined) return
      this.waiting.delete(m.id)
      if (m.ok) w.resolve(m.value)
      else w.reject(new Error(m.message))
    })
  }

  /**
   * Forks the child with `env` added to this process's environment and waits
   * until its processor runs. execArgv: e.g. ['--expose-gc'] or ['--cpu-prof', '--cpu-prof-dir', dir].
   */
  static async start(
    env: Record<string, string>,
    execArgv: string[] = [],
    timeoutMs = 120_000,
  ): Promise<ProcessorProcess> {
    const t0 = performance.now()
    const child = fork(fileURLToPath(new URL('./processor-child.js', import.meta.url)), [], {
      env: { ...process.env, ...env },
      execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    const first = await new Promise<Reply>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL')
        reject(new BenchstreamError('BS_ERR_TIMEOUT', `the processor child did not start within ${timeoutMs} ms`))
      }, timeoutMs)
      child.once('message', (m: Reply) => {
        clearTimeout(timer)
        resolve(m)
      })
      child.once('exit', (code) => {
        clearTimeout(timer)
        reject(new Error(`the processor child exited with code ${code} before it was ready`))
      })
    })
    if (first.type !== 'ready') {
      child.kill('SIGKILL')
      throw new Error(
        `the processor child failed to start: ${first.type === 'failed' ? first.message : JSON.stringify(first)}`,
      )
    }
    return new ProcessorProcess(child, first.atMs, performance.now() - t0, first.clickhouse, first.apiUrl)
  }

  get pid(): number {
    return this.child.pid ?? -1
  }

  private request<T>(body: RequestBody): Promise<T> {
    if (this.exitCode !== undefined)
      return Promise.reject(new Error(`processor child exited with code ${this.exitCode}`))
    const id = this.nextId++
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject })
      this.child.send({ ...body, id })
    })
  }

  query<T>(sql: string): Promise<T[]> {
    return this.request<T[]>({ type: 'query', sql })
  }

  command(sql: string): Promise<void> {
    return this.request<void>({ type: 'command', sql })
  }

  memory(gc: boolean): Promise<MemorySample> {
    return this.request<MemorySample>({ type: 'memory', gc })
  }

  stats(): Promise<ChildStats> {
    return this.request<ChildStats>({ type: 'stats' })
  }

  watch(sql: string, everyMs: number): Promise<void> {
    return this.request<void>({ type: 'watch', sql, everyMs })
  }

  watched(): Promise<WatchResult> {
    return this.request<WatchResult>({ type: 'watched' })
  }

  profileStart(): Promise<void> {
    return this.request<void>({ type: 'profile-start' })
  }

  profileStop(file: string): Promise<void> {
    return this.request<void>({ type: 'profile-stop', file })
  }

  /**
   * Waits until the watched key `k` reaches `target` (or stops moving for
   * stallMs); returns its entry. Checks every checkMs.
   */
  async waitForValue(
    k: string,
    target: number,
    o: { stallMs: number; checkMs?: number; onProgress?: (v: number) => void },
  ): Promise<WatchEntry & { reached: boolean }> {
    let last: WatchEntry = { v: -1, changedAtMs: performance.timeOrigin + performance.now() }
    for (;;) {
      const w = await this.watched()
      const e = w.entries[k]
      if (e !== undefined) {
        if (e.v !== last.v) o.onProgress?.(e.v)
        last = e
        if (e.v >= target) return { ...e, reached: e.v === target }
      }
      if (performance.timeOrigin + performance.now() - last.changedAtMs > o.stallMs) return { ...last, reached: false }
      await new Promise((r) => setTimeout(r, o.checkMs ?? 250))
    }
  }

  /** Stops the processor (flush, commit, leave the group) and waits for the child to exit. */
  async stop(): Promise<number> {
    if (this.exitCode === undefined) await this.request<void>({ type: 'stop' }).catch(() => undefined)
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 60_000)
    const code = await this.exited
    clearTimeout(timer)
    return code
  }
}

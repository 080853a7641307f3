/**
 * A run's client on this machine: launched with its command line (run-args.ts), held at the start barrier
 * (ready on stderr, then `start <ms>` or `abort` on its stdin, called off when no `go` comes in time), and its
 * end reported with the operations it counted and the tail of its output. `go` and `cancel` from the topic land
 * here.
 */
import type { RunSpec } from '../../schemas/experiment-control.v1.js'
import { TAIL_LINES, type Job, type JobHost } from './job.js'
import { runArgs } from './run-args.js'

/** YCSB-style report lines the driver prints: `[READ], Operations, 1234`. */
const OPERATIONS_LINE = /^\[([A-Z][A-Z0-9_-]*)\], Operations, (\d+)$/
/** The driver's line when it is ready at the barrier (services/driver/config.ts BARRIER_READY_LINE). */
export const READY_LINE = 'benchstream-barrier: ready'

/** Launches a run's client; its statuses (ready, ended or failed) are sent as they come. */
export function startRun(host: JobHost, job: Job, r: RunSpec): void {
  const a = job.assign
  const child = host.deps.launcher.launch({
    command: host.deps.benchstream.command,
    args: [
      ...host.deps.benchstream.args,
      ...runArgs({ cfg: host.cfg, clock: host.clock(), resolveWorkload: host.deps.resolveWorkload }, r),
    ],
    env: { ...host.deps.env },
  })
  job.child = child
  child.onLine((stream, line) => {
    if (stream === 'stdout') {
      job.stdout.push(line)
      if (job.stdout.length > 2000) job.stdout.shift()
    } else {
      job.tail.push(line)
      if (job.tail.length > TAIL_LINES) job.tail.shift()
    }
    if (stream === 'stderr' && line === READY_LINE && job.state === 'accepted' && !job.cancelled) {
      job.state = 'ready'
      job.barrierTimer = setTimeout(() => {
        if (job.state !== 'ready') return
        job.cancelled = true
        child.write('abort\n')
        job.tail.push(`benchstream agent: no go within ${a.barrierTimeoutS} s of being ready: called off`)
      }, a.barrierTimeoutS * 1000)
      void host.status(a, 'ready')
    }
  })
  void child.exited.then(async (exit) => {
    if (job.barrierTimer !== undefined) clearTimeout(job.barrierTimer)
    const operations: Record<string, number> = {}
    for (const l of job.stdout) {
      const m = OPERATIONS_LINE.exec(l)
      // The first report only: benchstream ycsb prints YCSB's (this client's), then Benchstream's of the whole run.
      if (m !== null && m[1] !== 'OVERALL' && !m[1]!.startsWith('Intended-') && !Object.hasOwn(operations, m[1]!))
        operations[m[1]!] = Number(m[2])
    }
    const ok = exit.code === 0 && !job.cancelled
    const output = job.tail.join('\n')
    job.state = ok ? 'ended' : 'failed'
    host.jobs.delete(a.assignment)
    // Free again: say so at once rather than at the next heartbeat (the coordinator waits for free agents).
    void host.heartbeat()
    await host.status(a, job.state, {
      operations,
      exitCode: exit.code,
      output,
      ...(ok
        ? {}
        : {
            detail: job.cancelled
              ? 'called off (cancelled, or no go in time)'
              : `the client exited with ${exit.code === null ? `signal ${exit.signal}` : `code ${exit.code}`}`,
          }),
    })
  })
}

/** `go`: a client ready at the barrier is told the instant to start, on this machine's clock. */
export function onGo(host: JobHost, id: string, startAtMs: number): void {
  const job = host.jobs.get(id)
  // A go after a cancel must not start a client that was told to abort.
  if (job === undefined || job.child === undefined || job.state !== 'ready' || job.cancelled) return
  if (job.barrierTimer !== undefined) clearTimeout(job.barrierTimer)
  job.state = 'started'
  // startAtMs is on the broker's clock; the child's clock is the machine's (without the skew tests add).
  const offset = host.clock()?.offsetMs ?? 0
  const local = Math.round(startAtMs - offset - host.cfg.clockSkewMs)
  job.child.write(`start ${local}\n`)
  void host.status(job.assign, 'started')
}

/** `cancel`: a client at the barrier aborts, one running is stopped, one not launched yet never starts. */
export function onCancel(host: JobHost, id: string, reason: string): void {
  const job = host.jobs.get(id)
  if (job === undefined || job.cancelled) return
  if (job.barrierTimer !== undefined) clearTimeout(job.barrierTimer)
  job.cancelled = true
  job.tail.push(`benchstream agent: cancelled: ${reason}`)
  // Not launched yet: onAssign sees the flag and starts nothing.
  if (job.child === undefined) return
  if (job.state === 'ready' || job.state === 'accepted') job.child.write('abort\n')
  else job.child.kill('SIGTERM')
}

/**
 * `benchstream import-ycsb --follow PREFIX`: the HdrHistogram interval logs a running YCSB writes, each interval sent
 * as it appears, until YCSB's process (--pid) exits or nothing new came for --idle-timeout seconds.
 */
import { openSync, readdirSync, readSync, closeSync, fstatSync } from 'node:fs'
import path from 'node:path'
import { KafkaRecordSender } from '../adapters/kafka/record-sender.js'
import type { InfraConfig } from '../common/infra-config.js'
import { BenchstreamError } from '../core/errors.js'
import { encodeIntervalHistogram, encodeJsonRecord } from '../core/codec/record-encoders.js'
import { IntervalLogFollower } from '../core/ycsb/follow.js'
import type { PlannedInterval } from '../core/ycsb/import-plan.js'
import { measurementFromFileName } from '../core/ycsb/measurement-name.js'
import type { ImportYcsbArgs } from './import-ycsb-args.js'
import { lifecycle } from './import-ycsb-records.js'
import { findWorkload } from './import-ycsb-workload.js'

/** How often --follow looks at the logs. */
const FOLLOW_POLL_MS = 250

/**
 * --follow: polls the directory of PREFIX for `PREFIX<NAME>.hdr` logs and
 * each log for new lines; sends each interval as it becomes complete.
 */
export async function follow(
  args: ImportYcsbArgs,
  f: NonNullable<ImportYcsbArgs['follow']>,
  infra: InfraConfig,
  out: (s: string) => void,
  signal: AbortSignal | undefined,
): Promise<number> {
  const dir = f.prefix.endsWith('/') ? f.prefix : path.dirname(f.prefix)
  const base = f.prefix.endsWith('/') ? '' : path.basename(f.prefix)
  const follower = new IntervalLogFollower()
  // --follow has no report to look next to: the workload is what --workload and -P say.
  const followWorkload =
    args.workloadFiles.length > 0 || args.workload !== undefined ? findWorkload(args, []) : undefined
  const offsets = new Map<string, number>()
  const sent: Record<string, number> = {}
  let firstUs: number | undefined
  let lastUs: number | undefined
  let records = 0
  const stop = new AbortController()
  const onSignal = (): void => stop.abort()
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  signal?.addEventListener('abort', onSignal, { once: true })
  const sender = await KafkaRecordSender.open(infra, `import-ycsb-${args.clientId}`, `${args.runId}:${args.clientId}`)
  process.stderr.write(
    `benchstream: following ${path.join(dir, `${base}*.hdr`)} into run ${args.runId}, client ${args.clientId}, ` +
      'until ' +
      (f.pid === undefined ? '' : `process ${f.pid} exits${f.idleTimeoutS > 0 ? ' or ' : ''}`) +
      (f.idleTimeoutS > 0 ? `${f.idleTimeoutS} s pass without a new interval` : '') +
      '\n',
  )
  let started = false
  const sendIntervals = async (intervals: PlannedInterval[]): Promise<void> => {
    if (intervals.length === 0) return
    if (!started) {
      started = true
      await sender.send([
        encodeJsonRecord(
          lifecycle(
            args,
            'start',
            Math.min(...intervals.map((iv) => iv.intervalStartUs)),
            'ycsb-follow',
            followWorkload,
          ),
        ),
      ])
    }
    for (const iv of intervals) {
      await sender.add(encodeIntervalHistogram({ runId: args.runId, clientId: args.clientId, ...iv }))
      let n = 0
      for (const [, c] of iv.buckets) n += c
      if (n > 0) sent[`${iv.op}/${iv.status}`] = (sent[`${iv.op}/${iv.status}`] ?? 0) + n
      firstUs = Math.min(firstUs ?? iv.intervalStartUs, iv.intervalStartUs)
      lastUs = Math.max(lastUs ?? 0, iv.intervalStartUs + iv.intervalLengthUs)
      records++
    }
    await sender.flush()
  }
  /**
   * Reads what every log grew by; true when something new came. Bytes from the first NUL on are not taken: two
   * writers of one log (see IntervalLogFollower.rewind) leave a hole of NULs where the file was truncated under the
   * one still writing further on, until the other writes those bytes; they are read once written. `last`: YCSB has
   * exited, and a NUL still there is the file's content, refused.
   */
  const poll = (last = false): boolean => {
    let grew = false
    let names: string[] = []
    try {
      names = readdirSync(dir)
    } catch {
      // the directory does not exist yet: YCSB has not started
    }
    for (const n of names) {
      if (!n.endsWith('.hdr') || !n.startsWith(base)) continue
      const file = path.join(dir, n)
      if (!follower.has(file)) {
        const m = measurementFromFileName(n)
        if (m === undefined || m.prefix !== base) continue
        follower.add(file, m.name)
        offsets.set(file, 0)
      }
      const fd = openSync(file, 'r')
      try {
        const size = fstatSync(fd).size
        let at = offsets.get(file)!
        // YCSB opens its logs anew (truncating) at start: a file that shrank after it gave intervals belongs to
        // another run; one that shrank before is the same run's second writer of it, read again from the start.
        if (size < at) {
          if (!follower.rewind(file))
            throw new BenchstreamError(
              'BS_ERR_DECODE',
              `${file} shrank from ${at} to ${size} bytes: a new YCSB run is writing it; give each run its ` +
                `own hdrhistogram.output.path and follow that`,
            )
          at = 0
          offsets.set(file, 0)
        }
        if (size === at) continue
        const buf = Buffer.alloc(size - at)
        const r = readSync(fd, buf, 0, buf.length, at)
        const nul = buf.subarray(0, r).indexOf(0)
        if (nul !== -1 && last)
          throw new BenchstreamError(
            'BS_ERR_DECODE',
            `${file}: a NUL byte at offset ${at + nul} after YCSB exited; expected an HdrHistogram interval log (text)`,
          )
        const taken = nul === -1 ? r : nul
        if (taken === 0) continue
        // Only whole UTF-8 text matters here: the log is ASCII.
        follower.feed(file, buf.toString('latin1', 0, taken))
        offsets.set(file, at + taken)
        grew = true
      } finally {
        closeSync(fd)
      }
    }
    return grew
  }
  const alive = (pid: number): boolean => {
    try {
      process.kill(pid, 0)
      return true
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'EPERM'
    }
  }
  let lastNewAt = Date.now()
  let ended: string
  try {
    for (;;) {
      // Liveness first, then a read: what YCSB wrote before exiting is read once more below.
      const exited = f.pid !== undefined && !alive(f.pid)
      if (poll()) lastNewAt = Date.now()
      await sendIntervals(follower.ready(false))
      if (exited) {
        ended = `process ${f.pid} exited`
        break
      }
      if (f.idleTimeoutS > 0 && Date.now() - lastNewAt > f.idleTimeoutS * 1000) {
        ended = `${f.idleTimeoutS} s without a new interval`
        break
      }
      if (stop.signal.aborted) {
        ended = 'interrupted'
        break
      }
      await new Promise((r) => setTimeout(r, FOLLOW_POLL_MS))
    }
    poll(true)
    await sendIntervals(follower.ready(true))
    if (started)
      await sender.send([
        encodeJsonRecord(
          lifecycle(
            args,
            'end',
            lastUs ?? Date.now() * 1000,
            'ycsb-follow',
            followWorkload,
            sent,
            firstUs === undefined || lastUs === undefined ? undefined : Math.round((lastUs - firstUs) / 1000),
          ),
        ),
      ])
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
    signal?.removeEventListener('abort', onSignal)
    await sender.close()
  }
  const lines = [
    `followed run ${args.runId}, client ${args.clientId}: ` +
      `${ended}${started ? '' : '; no interval appeared, nothing was sent'}`,
  ]
  for (const s of follower.summary())
    lines.push(
      `  ${s.file}: ${s.name}, ${s.intervals} intervals, ${s.operations} ` +
        'operations' +
        (s.kind === 'cleanup' ? ' (CLEANUP: reported, not counted)' : s.kind === 'other' ? ' (skipped)' : ''),
    )
  const total = Object.values(sent).reduce((a, b) => a + b, 0)
  lines.push(
    `  operations: ${total}${
      total === 0
        ? ''
        : ` (${Object.entries(sent)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ')})`
    }, as ${records} interval records`,
  )
  out(lines.join('\n') + '\n')
  return 0
}

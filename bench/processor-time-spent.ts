/**
 * Where a processor run's time went, as printable lines (bench/processor-throughput): JS hot spots from a V8
 * .cpuprofile, Linux perf's busiest libraries and functions over all threads, CPU seconds from /proc, and the
 * embedded ClickHouse's own counters (system.events).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { repoRoot } from '../services/common/repo-root.js'
import { fmt, fmtInt, statCpuSeconds } from './common.js'
import type { ProcessorProcess } from './processor-process.js'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}

/** Self and inclusive time per function from a .cpuprofile, as printable lines. */
export function hotSpots(file: string, top: number): string {
  const prof = JSON.parse(readFileSync(file, 'utf8')) as {
    nodes: ProfileNode[]
    samples: number[]
    timeDeltas: number[]
  }
  const byId = new Map(prof.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  const root = `file://${repoRoot()}/`
  const key = (n: ProfileNode): string => {
    const f = n.callFrame
    if (f.url === '') return f.functionName === '' ? '(anonymous)' : f.functionName
    return (
      `${f.functionName === '' ? '(anonymous)' : f.functionName} ` +
      ` ${f.url.replace(root, '').replace(/^node:/, 'node:')}:${f.lineNumber + 1}`
    )
  }
  const self = new Map<string, number>()
  const inclusive = new Map<string, number>()
  let total = 0
  let idle = 0
  for (let i = 0; i < prof.samples.length; i++) {
    const dt = prof.timeDeltas[i] ?? 0
    const n = byId.get(prof.samples[i]!)
    if (n === undefined) continue
    if (n.callFrame.functionName === '(idle)') {
      idle += dt
      continue
    }
    total += dt
    self.set(key(n), (self.get(key(n)) ?? 0) + dt)
    const seen = new Set<string>()
    for (let id: number | undefined = n.id; id !== undefined; id = parent.get(id)) {
      const k = key(byId.get(id)!)
      if (k === '(root)' || seen.has(k)) continue
      seen.add(k)
      inclusive.set(k, (inclusive.get(k) ?? 0) + dt)
    }
  }
  const table = (m: Map<string, number>, n: number): string =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, us]) => `    ${fmt((100 * us) / total, 1).padStart(5)}%  ${fmt(us / 1000, 0).padStart(7)} ms  ${k}`)
      .join('\n')
  return [
    `  profile: ${fmt(total / 1000, 0)} ms busy on the main thread, ${fmt(idle / 1000, 0)} ms idle ` +
      `(chDB works on its own threads, which a JS profile does not show)`,
    `  top ${top} by self time:`,
    table(self, top),
    `  top ${top} by inclusive time (program, GC and runtime frames excluded):`,
    table(new Map([...inclusive].filter(([k]) => !k.startsWith('('))), top),
  ].join('\n')
}

/**
 * CPU seconds (user + system) a process has used, all its threads and its
 * main thread alone (where JS runs; ClickHouse works on threads of its own).
 * CPU time is what other load on the machine moves least.
 */
export function cpuSeconds(pid: number): { all: number; main: number } {
  return { all: statCpuSeconds(`/proc/${pid}/stat`), main: statCpuSeconds(`/proc/${pid}/task/${pid}/stat`) }
}

/** ClickHouse's cumulative counters in the processor's process (all of them started at its start). */
export async function clickhouseEvents(p: ProcessorProcess): Promise<Map<string, number>> {
  const rows = await p.query<{ event: string; value: string }>(
    'SELECT event, toString(value) AS value FROM system.events',
  )
  return new Map(rows.map((r) => [r.event, Number(r.value)]))
}

/** What the engine spent its time on during a run, from system.events, as printable lines. */
export function engineLines(e: Map<string, number>, events: number): string {
  const g = (k: string): number => e.get(k) ?? 0
  const s = (us: number): string => `${fmt(us / 1e6, 2)} s`
  return [
    `  ClickHouse's own counters (system.events; times summed over threads):`,
    `    inserts: ${fmtInt(g('InsertQuery'))} queries, ${fmtInt(g('InsertedRows'))} ` +
      `rows (${fmt(g('InsertedRows') / events, 2)} ` +
      (`per event), ${s(g('InsertQueryTimeMicroseconds'))} in INSERT ` +
        `queries; parts written: ${fmtInt(g('MergeTreeDataWriterBlocks'))} `) +
      (`(${fmt(g('MergeTreeDataWriterCompressedBytes') / 1e6, 1)} MB ` +
        `compressed of ${fmt(g('MergeTreeDataWriterUncompressedBytes') / 1e6, 1)} `) +
      `MB), sorting ${s(g('MergeTreeDataWriterSortingBlocksMicroseconds'))}`,
    `    merges: ${fmtInt(g('Merge'))} of ${fmtInt(g('MergeSourceParts'))} parts, ${fmtInt(g('MergedRows'))} ` +
      `rows (${fmt(g('MergedRows') / events, 2)} per event), ${s(g('MergeTotalMilliseconds') * 1000)}`,
    `    engine threads: user ${s(g('UserTimeMicroseconds'))}, system ${s(g('SystemTimeMicroseconds'))}; ` +
      `files opened ${fmtInt(g('FileOpen'))}`,
  ].join('\n')
}

/** `perf record` of every thread of a process until stop(); cpu-clock: hardware counters are not there in every VM. */
export function perfRecord(pid: number, file: string): { stop(): Promise<void> } {
  const child: ChildProcess = spawn(
    'perf',
    ['record', '-e', 'cpu-clock', '-F', '999', '-g', '-p', String(pid), '-o', file],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  )
  let stderr = ''
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
  const exited = new Promise<number>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code) => resolve(code ?? 1))
  })
  return {
    async stop() {
      child.kill('SIGINT')
      const code = await exited
      // perf 6.1 exits with 1 after SIGINT even when it wrote everything: judge by its summary line.
      if (!stderr.includes('Captured and wrote'))
        throw new Error(`perf record exited with ${code}: ${stderr.slice(-2000)}`)
    },
  }
}

/** The busiest libraries and functions of a perf recording (self time), as printable lines. */
export function perfReport(file: string, top: number): string {
  const report = (sort: string, limit: number): string[] => {
    const r = spawnSync(
      'perf',
      ['report', '-i', file, '--no-children', '--sort', sort, '--stdio', '-g', 'none', '--percent-limit', '0.3'],
      { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
    )
    if (r.status !== 0) throw new Error(`perf report failed: ${r.stderr.slice(-2000)}`)
    return r.stdout
      .split('\n')
      .filter((l) => l.trim() !== '' && !l.startsWith('#'))
      .slice(0, limit)
      .map((l) => `    ${l.trim().replace(/\s{2,}/g, '  ')}`)
  }
  // libchdb.so ships stripped (its .gnu_debuglink names a libchdb.so.debug that is not published):
  // its functions show as addresses, so the threads' names (ClickHouse names its pools) say what it does.
  return [
    `  perf (cpu-clock, all threads), by thread name:`,
    ...report('comm', 12),
    `  by library:`,
    ...report('dso', 8),
    `  top ${top} functions by self time:`,
    ...report('dso,sym', top),
  ].join('\n')
}

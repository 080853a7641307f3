/**
 * `benchstream sweep -P workloads/workloada -threads 1,2,4,8`: one run per
 * value of one parameter (-threads, -target or any -p KEY=A,B,...), back to
 * back through the ordinary driver path, each labelled sweep=<id>,
 * sweep.param=<parameter>, point=<value>. Then, from the runs' merged
 * reports (the server's, all clients): throughput and p50/p95/p99 per point,
 * saturation and knee (services/core/compare/saturation.ts), and the chart
 * (sweep-chart.ts) written next to the table in --out.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import type { RunReport } from '../../schemas/run-reports-api.v1.js'
import type { RunFigures } from '../../schemas/runs-api.v1.js'
import { BINDING_NAMES } from '../adapters/datastores/names.js'
import { readInfraConfig } from '../common/infra-config.js'
import { analyzeSweep, type SweepAnalysis } from '../core/compare/saturation.js'
import { renderSweepChart } from '../core/compare/sweep-chart.js'
import { BenchstreamError } from '../core/errors.js'
import { parseDriverArgs } from '../driver/config.js'
import { driverMain } from '../driver/main.js'
import { apiOf, openReader, type Reader } from './reader.js'
import { SWEEP_USAGE } from './usage.js'

/** How long to wait for the server to count a point's every event. */
const POINT_WAIT_MS = 60_000
/** Driver flags a sweep sets itself for each point. */
export const SWEEP_SETS = ['--run-id', '--repeat', '--repetition', '--no-emit'] as const
/** The sweep's own flags; every other is a driver flag, shared by every point. */
export const SWEEP_FLAGS = ['--out', '--sweep-id'] as const

interface SweepPlan {
  sweepId: string
  outDir: string
  /** threads, target or a property name. */
  param: string
  values: string[]
  /** The driver flags shared by every point. */
  common: string[]
  /** The flags that set the parameter to one value. */
  setParam: (value: string) => string[]
}

function usage(message: string): BenchstreamError {
  return new BenchstreamError('BS_ERR_USAGE', `${message}\n${SWEEP_USAGE}`)
}

/** Splits the command line into the swept parameter, sweep flags and driver flags. */
export function planSweep(argv: readonly string[], now = new Date()): SweepPlan {
  let sweepId: string | undefined
  let outDir = '.'
  let swept: Pick<SweepPlan, 'param' | 'values' | 'setParam'> | undefined
  const common: string[] = []
  const list = (flag: string, raw: string): string[] => {
    const values = raw.split(',').map((v) => v.trim())
    if (values.some((v) => v === '' || !Number.isFinite(Number(v))))
      throw usage(`${flag} ${JSON.stringify(raw)}: every value of a sweep must be a number (a chart needs an x axis)`)
    if (new Set(values).size !== values.length) throw usage(`${flag} ${JSON.stringify(raw)} repeats a value`)
    return values
  }
  const sweep = (s: NonNullable<typeof swept>): void => {
    if (swept !== undefined)
      throw usage(`only one parameter can take a list of values; ${swept.param} already does, and so does ${s.param}`)
    swept = s
  }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    const value = argv[i + 1]
    if ((SWEEP_SETS as readonly string[]).includes(a)) throw usage(`${a} is set by sweep for each point`)
    if ((SWEEP_FLAGS as readonly string[]).includes(a)) {
      if (value === undefined || value === '') throw usage(`${a} needs a value`)
      if (a === '--out') outDir = value
      else sweepId = value
      i++
    } else if ((a === '-threads' || a === '-target') && value?.includes(',') === true) {
      const flag = a
      sweep({ param: a.slice(1), values: list(a, value), setParam: (v) => [flag, v] })
      i++
    } else if (
      a === '-p' &&
      value !== undefined &&
      value.indexOf('=') > 0 &&
      value.slice(value.indexOf('=') + 1).includes(',')
    ) {
      const key = value.slice(0, value.indexOf('=')).trim()
      if (key === 'exportfile') throw usage('-p exportfile is set by sweep for each point (the reports go to --out)')
      sweep({
        param: key === 'threadcount' ? 'threads' : key,
        values: list(`-p ${key}`, value.slice(value.indexOf('=') + 1)),
        setParam: (v) => ['-p', `${key}=${v}`],
      })
      i++
    } else {
      common.push(a)
      // The driver's flags that take no value; every other one does (config.ts).
      if (!['-s', '--help', '-h'].includes(a) && value !== undefined) {
        common.push(value)
        i++
      }
    }
  }
  if (swept === undefined)
    throw usage(
      'nothing to sweep: give one parameter a list of values, e.g. -threads 1,2,4,8, -target 1000,5000 ' +
        'or -p recordcount=10000,100000',
    )
  sweepId ??= `sweep-${now.toISOString().replace(/[-:]/g, '').slice(0, 15)}-${Math.random().toString(36).slice(2, 6)}`
  if (!/^[A-Za-z0-9][A-Za-z0-9._:-]{0,57}$/.test(sweepId))
    throw usage(
      `--sweep-id ${JSON.stringify(sweepId)} is not allowed: 1-58 characters from A-Z a-z 0-9 . _ ` +
        `: -, starting with a letter or digit (room for the point's -k)`,
    )
  return { sweepId, outDir, common, ...swept }
}

/** The driver command line of point k (0-based). */
function pointArgv(plan: SweepPlan, k: number): string[] {
  const value = plan.values[k]!
  const runId = `${plan.sweepId}-${k + 1}`
  return [
    ...plan.common,
    ...plan.setParam(value),
    '--run-id',
    runId,
    '--label',
    `sweep=${plan.sweepId}`,
    '--label',
    `sweep.param=${plan.param}`,
    '--label',
    `point=${value}`,
    '-p',
    `exportfile=${path.join(plan.outDir, `${runId}.txt`)}`,
  ]
}

interface PointResult {
  value: string
  runId: string
  report: RunReport
  figures: RunFigures
}

export async function sweepMain(argv: readonly string[]): Promise<number> {
  const plan = planSweep(argv)
  // Every point's command line is checked before the first one runs.
  plan.values.forEach((_, k) => parseDriverArgs('run', pointArgv(plan, k), process.env, { bindings: BINDING_NAMES }))
  if (apiOf(process.env).api === undefined && readInfraConfig(process.env).clickhouse.url === undefined) {
    throw new BenchstreamError(
      'BS_ERR_CONFIG',
      "sweep reads each point's merged report from the server that counts the events: start `benchstream " +
        'server` (on this BENCHSTREAM_DATA_DIR), or set BENCHSTREAM_API_URL or CLICKHOUSE_URL',
    )
  }
  mkdirSync(plan.outDir, { recursive: true })
  const reader = openReader(process.env)
  try {
    const results: PointResult[] = []
    for (let k = 0; k < plan.values.length; k++) {
      const value = plan.values[k]!
      const runId = `${plan.sweepId}-${k + 1}`
      process.stderr.write(
        `benchstream: sweep ${plan.sweepId}: point ${k + 1} of ${plan.values.length}, ` +
          `${plan.param}=${value}, run ${runId}\n`,
      )
      const code = await driverMain('run', pointArgv(plan, k))
      // 99 is a failed --threshold: the point ran; anything else stops the sweep.
      if (code !== 0 && code !== 99)
        throw new BenchstreamError(
          'BS_ERR_BINDING',
          `point ${plan.param}=${value} (run ${runId}) ended with exit code ${code}; the sweep stops there`,
        )
      const report = await waitForReport(reader, runId)
      results.push({ value, runId, report, figures: await reader.figures(runId) })
    }
    const analysis = analyzeSweep(
      results.map((r) => ({
        x: Number(r.value),
        throughput: r.report.throughputOpsPerSec,
        p99Us: r.figures.ops.find((o) => o.op === 'OVERALL')?.p99Us ?? null,
      })),
      { x: plan.param === 'target' ? 'target' : 'threads' },
    )
    const svgFile = path.join(plan.outDir, `${plan.sweepId}.svg`)
    const text = sweepTable(plan, results, analysis, svgFile)
    writeFileSync(path.join(plan.outDir, `${plan.sweepId}.txt`), text)
    writeFileSync(
      svgFile,
      renderSweepChart(analysis, {
        title: `${plan.sweepId}: throughput and p99 (all operations) by ${plan.param}`,
        xLabel: plan.param === 'target' ? 'target (ops/s)' : plan.param,
      }),
    )
    process.stdout.write(text)
  } finally {
    await reader.close()
  }
  return 0
}

/** The point's report once every client has ended and every event it sent was counted. */
async function waitForReport(reader: Reader, runId: string): Promise<RunReport> {
  const deadline = Date.now() + POINT_WAIT_MS
  let last: RunReport | undefined
  for (;;) {
    try {
      last = await reader.report(runId)
      const run = last.run
      const sent = last.completeness.sent
      if (run !== undefined && run.clients_ended >= run.clients && sent !== null && last.completeness.counted >= sent)
        return last
    } catch {
      // not counted yet
    }
    if (Date.now() > deadline) {
      if (last !== undefined) {
        process.stderr.write(
          `benchstream: warning: run ${runId} was not completely counted after ${POINT_WAIT_MS / 1000} ` +
            `s (${last.completeness.counted} of ${last.completeness.sent ?? '?'} events); its figures are ` +
            `what was counted\n`,
        )
        return last
      }
      throw new BenchstreamError(
        'BS_ERR_TIMEOUT',
        `run ${runId} has no data at ${reader.where} after ${POINT_WAIT_MS / 1000} s: is the server ` +
          `consuming this Kafka topic?`,
      )
    }
    await new Promise((r) => setTimeout(r, 500))
  }
}

/** The table and the analysis, as printed and as written to sweep-<id>.txt. */
function sweepTable(plan: SweepPlan, results: readonly PointResult[], a: SweepAnalysis, svgFile: string): string {
  const header = [plan.param, 'run', 'op', 'ops/s', 'p50 (µs)', 'p95 (µs)', 'p99 (µs)']
  const rows: string[][] = []
  const us = (v: number | null | undefined): string => (v === null || v === undefined ? '—' : String(Math.round(v)))
  for (const r of results) {
    const all = r.figures.ops.find((o) => o.op === 'OVERALL')
    rows.push([
      r.value,
      r.runId,
      'ALL',
      r.report.throughputOpsPerSec.toFixed(2),
      us(all?.p50Us),
      us(all?.p95Us),
      us(all?.p99Us),
    ])
    for (const m of r.report.measurements.filter(
      (x) => !x.name.startsWith('Intended-') && !x.name.endsWith('-FAILED') && x.operations > 0,
    )) {
      const opsPerSec = r.report.runtimeMs > 0 ? (m.operations * 1000) / r.report.runtimeMs : 0
      rows.push(['', '', m.name, opsPerSec.toFixed(2), us(m.p50LatencyUs), us(m.p95LatencyUs), us(m.p99LatencyUs)])
    }
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i < 3 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join('  ')
      .trimEnd()
  const x = (i: number): string => `${plan.param}=${plan.values.length > 0 ? (a.points[i]?.x ?? '') : ''}`
  const tp = (v: number): string => v.toLocaleString('en-US', { maximumFractionDigits: 2, minimumFractionDigits: 2 })
  const out = [
    `sweep ${plan.sweepId}: ${plan.param} over ${plan.values.join(', ')} (ALL: every operation, ` +
      `percentiles from the merged histogram of all of them)`,
    '',
    line(header),
    ...rows.map(line),
    '',
    `peak: ${x(a.peak.index)}, ${tp(a.peak.throughput)} ops/s`,
    a.saturation === null
      ? `saturation: none, throughput still grows at the last point (${x(a.points.length - 1)})`
      : `saturation: throughput stops growing after ${x(a.saturation.index)} (${tp(a.saturation.throughput)} ` +
        'ops/s' +
        (a.saturation.nextGrowth === null
          ? ', its first target already missed'
          : `; ${a.saturation.nextGrowth >= 0 ? '+' : ''}${(a.saturation.nextGrowth * 100).toFixed(1)}% ` +
            'to the next point') +
        ')',
    a.knee === null
      ? 'knee: none, p99 never more than doubles from one point to the next'
      : `knee: p99 jumps ${a.knee.factor.toFixed(1)}x at ${x(a.knee.index)} (${Math.round(a.knee.previousP99Us)} ` +
        `-> ${Math.round(a.knee.p99Us)} µs)`,
    `chart: ${svgFile}`,
  ]
  return out.join('\n') + '\n'
}

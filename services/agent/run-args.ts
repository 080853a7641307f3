/**
 * The command line of a run's client on this machine: `benchstream run|load` (the driver), `benchstream ycsb`
 * (real YCSB through the bridge) or `benchstream pe` (HBase's PerformanceEvaluation), each with the run's ids,
 * labels, the start barrier on stdin and this machine's clock offset; a length-bound run's operation limit as the
 * tool understands it.
 */
import type { ClockEstimate, RunSpec } from '../../schemas/experiment-control.v1.js'
import type { AgentConfig } from './config.js'

/**
 * operationcount of a YCSB run bounded by its length alone: YCSB 0.17.0 makes no more client threads than
 * operations, so its 0 ("no limit" to the Benchstream driver) would start none.
 */
const YCSB_NO_LIMIT = 2_000_000_000

/**
 * PE's arguments of a run: a property with a dot in its name is HBase configuration (`-Dhbase.zookeeper.quorum=h`,
 * which the setup's properties give), any other one of PE's options (`--valueSize=100`); each PE client gets the
 * same share of the rows.
 */
function peArgs(r: RunSpec): string[] {
  const props = Object.entries(r.properties)
  return [
    ...props.filter(([k]) => k.includes('.')).map(([k, v]) => `-D${k}=${v}`),
    '--nomapred',
    ...props.filter(([k]) => !k.includes('.')).map(([k, v]) => `--${k}=${v}`),
    `--rows=${r.operations! / r.threads}`,
    r.workload,
    String(r.threads),
  ]
}

/** The command line of a client of a run: Benchstream's driver, or real YCSB through `benchstream ycsb`. */
export function runArgs(
  x: { cfg: AgentConfig; clock: ClockEstimate | null; resolveWorkload: (name: string) => string | undefined },
  r: RunSpec,
): string[] {
  const { cfg, clock } = x
  // A PE test is no workload file: `file` is unused for driver pe.
  const file = x.resolveWorkload(r.workload) ?? r.workload
  const own = [
    '--run-id',
    r.runId,
    '--client-id',
    r.clientId,
    ...Object.entries(r.labels).flatMap(([k, v]) => ['--label', `${k}=${v}`]),
    ...(r.group === undefined ? [] : ['--group', r.group]),
    ...(r.repetition === undefined ? [] : ['--repetition', String(r.repetition)]),
    '--barrier',
    'stdin',
    '--expected-clients',
    String(r.expectedClients),
    // This machine's clock minus the broker's.
    ...(clock === null ? [] : ['--clock-offset-ms', (-clock.offsetMs).toFixed(3)]),
  ]
  const ycsb = [
    '-P',
    file,
    '-db',
    r.binding,
    '-threads',
    String(r.threads),
    ...(r.target > 0 ? ['-target', String(Math.round(r.target))] : []),
    ...Object.entries(r.properties).flatMap(([k, v]) => ['-p', `${k}=${v}`]),
  ]
  const limit =
    r.operations !== undefined
      ? ['-p', `operationcount=${r.operations}`]
      : r.seconds !== undefined
        ? ['-p', `maxexecutiontime=${r.seconds}`, '-p', `operationcount=${r.driver === 'ycsb' ? YCSB_NO_LIMIT : 0}`]
        : []
  if (r.driver === 'pe')
    return [
      'pe',
      '--command',
      cfg.commands[r.binding]!,
      ...own,
      ...(r.serverMetrics ?? []).flatMap((s) => ['--server-metrics', s]),
      '--',
      ...peArgs(r),
    ]
  if (r.driver === 'benchstream') return [r.phase, ...ycsb, ...(r.phase === 'run' ? limit : []), ...own]
  return [
    'ycsb',
    ...(cfg.ycsbHome === undefined ? [] : ['--ycsb-home', cfg.ycsbHome]),
    ...own,
    ...(r.serverMetrics ?? []).flatMap((s) => ['--server-metrics', s]),
    '--',
    r.phase,
    ...ycsb,
    ...(r.phase === 'run' ? limit : []),
  ]
}

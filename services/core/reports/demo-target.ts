/**
 * The demo's default target, from a short unthrottled probe of the driver on
 * this machine. Intended latency counts each operation from when it was due,
 * so it describes the datastore only while the client starts operations on
 * time (schedule-kept.ts). A fixed default (20,000 ops/s) was more than a busy
 * 2-core machine keeps once the processor, ClickHouse, the API and the broker
 * share its cores: intended p99 ran 100x past the measured one. A fraction of
 * what this machine's driver reaches alone leaves the client idle most of the
 * time, free to start each operation when it is due.
 */

/** What the probe measured: the driver unthrottled, no events sent. */
export interface DemoProbe {
  /** [OVERALL] Throughput(ops/sec) of the probe's report. */
  opsPerSec: number | null
  /** [OVERALL] RunTime(ms) of the probe's report. */
  runtimeMs: number | null
  /** Operations the probe completed (its report's Operations, summed over operations). */
  operations: number
}

export interface DemoTargetChoice {
  /** ops/s */
  target: number
  /** Why, in one sentence after "target N ops/s: ". */
  why: string
}

/** The share of the probe's rate the demo runs at: the rest is idle time for the pipeline and for being on time. */
export const DEMO_TARGET_FRACTION = 0.1
/** Never below: fewer operations make windows too sparse to show percentiles that mean anything. */
export const DEMO_TARGET_MIN = 200
/** Never above (the former fixed default): enough for a live view, and a run of 30 s stays under a million events. */
export const DEMO_TARGET_MAX = 20_000
/** A probe shorter than this, or with fewer operations, measured start-up rather than the machine. */
const PROBE_MIN_MS = 1000
const PROBE_MIN_OPERATIONS = 1000

/** Rounded down to two significant digits, so the target reads as chosen, not measured: 3,059 → 3,000. */
function roundDown2(v: number): number {
  const step = 10 ** Math.max(0, Math.floor(Math.log10(v)) - 1)
  return Math.floor(v / step) * step
}

const fmt = (v: number): string => Math.round(v).toLocaleString('en-US')

/** The target for a probe's figures (a pure function: the demo's wiring runs the probe). */
export function chooseDemoTarget(p: DemoProbe): DemoTargetChoice {
  const ms = p.runtimeMs ?? 0
  if (p.opsPerSec === null || !Number.isFinite(p.opsPerSec) || p.opsPerSec <= 0)
    return {
      target: DEMO_TARGET_MIN,
      why: 'the probe reported no throughput, so the lowest default (--target N to choose)',
    }
  if (ms < PROBE_MIN_MS || p.operations < PROBE_MIN_OPERATIONS)
    return {
      target: DEMO_TARGET_MIN,
      why:
        `the probe ran ${fmt(p.operations)} operations in ${fmt(ms)} ms, too few to size a target, so the lowest ` +
        `default (--target N to choose)`,
    }
  const share = roundDown2(p.opsPerSec * DEMO_TARGET_FRACTION)
  const seconds = (ms / 1000).toFixed(1)
  const probe = `the ${fmt(p.opsPerSec)} ops/s this machine's driver ran unthrottled in a ${seconds} s probe`
  if (share < DEMO_TARGET_MIN)
    return {
      target: DEMO_TARGET_MIN,
      why:
        `a tenth of ${probe} is under the demo's floor of ${fmt(DEMO_TARGET_MIN)} ops/s: expect the client to fall ` +
        'behind its schedule (--target N to choose)',
    }
  if (share > DEMO_TARGET_MAX)
    return {
      target: DEMO_TARGET_MAX,
      why: `a tenth of ${probe} is over the demo's cap of ${fmt(DEMO_TARGET_MAX)} ops/s (--target N to choose)`,
    }
  return {
    target: share,
    why:
      `a tenth of ${probe}, so that the client, sharing the cores with the processor, ClickHouse and the broker, ` +
      "is free to start each operation when it is due, and intended latency measures the store, not the client's " +
      'lateness (--target N to choose)',
  }
}

/**
 * Runs for the real comparison (services/core/compare/release.ts compareRuns)
 * without a pipeline: each run's RunInfo and its figures as the read model
 * gives them, READ's p50 as the test says, every other figure steady with 1 %
 * seeded noise. What is decided over them is the product's, not the test's.
 */
import type { OpFigures, RunFigures, RunInfo } from '../../schemas/runs-api.v1.js'
import { Rng } from '../../services/core/workload/random.js'

/** `n` values 1 × (1 + relNoise × U(-√3, √3)): seeded noise of standard deviation relNoise. */
function noisy(n: number, relNoise: number, seed: number): number[] {
  const rng = new Rng(seed)
  return Array.from({ length: n }, () => 1 + relNoise * Math.sqrt(3) * (2 * rng.next() - 1))
}

export function fabricatedRun(id: string, o: Partial<RunInfo> = {}): RunInfo {
  return {
    run_id: id,
    started_at: '2026-12-03 10:00:00.000000',
    ended_at: '2026-12-03 10:01:00.000000',
    clients: 2,
    clients_ended: 2,
    threads: 8,
    target: 0,
    labels: {},
    workload: 'workloada',
    binding: 'memory',
    sent: {},
    undelivered: 0,
    runtime_ms: 10_000,
    window_ms: 1000,
    group_id: '',
    repeat: 0,
    properties: { recordcount: '1000', maxexecutiontime: '10' },
    schedule_lag_max_ms: 0,
    behind_schedule_episodes: 0,
    expected_clients: 0,
    start_skew_ms: null,
    clock_offset_max_ms: null,
    ...o,
  }
}

function op(name: string, o: Partial<OpFigures>): OpFigures {
  return {
    op: name,
    operations: 10_000,
    errors: 0,
    opsPerSec: 1000,
    errorRate: 0,
    avgUs: 120,
    minUs: 10,
    maxUs: 5000,
    p50Us: 100,
    p90Us: 180,
    p95Us: 200,
    p99Us: 400,
    p999Us: 900,
    p9999Us: 2000,
    cacheHitRatio: null,
    ...o,
  }
}

/** Figures of runs `ids` whose READ p50 is `p50[i]` µs; `extra` adds operations a run has (READ-FAILED, ...). */
export function fabricatedFigures(
  ids: readonly string[],
  p50: readonly number[],
  seed: number,
  extra: (i: number) => OpFigures[] = () => [],
): RunFigures[] {
  const noise = noisy(ids.length * 10, 0.01, seed)
  return ids.map((id, i) => {
    const n = (k: number): number => noise[i * 10 + k]!
    return {
      runId: id,
      runtimeMs: 10_000,
      ops: [
        op('OVERALL', { opsPerSec: 2000 * n(0), p50Us: null }),
        op('READ', {
          opsPerSec: 1000 * n(1),
          p50Us: p50[i]!,
          avgUs: 120 * n(2),
          p95Us: 200 * n(3),
          p99Us: 400 * n(4),
          p999Us: 900 * n(5),
          maxUs: 5000 * n(6),
        }),
        op('UPDATE', { opsPerSec: 1000 * n(8), avgUs: 150 * n(9) }),
        ...extra(i),
      ],
      serverCache: [],
    }
  })
}

/** An operation's figures (for `extra`): steady values of a run. */
export function fabricatedOp(name: string, o: Partial<OpFigures> = {}): OpFigures {
  return op(name, o)
}

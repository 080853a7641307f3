/**
 * The alert engine's ports (services/alerts/app.ts): where complete windows
 * come from, where incidents are recorded, and who is notified. ClickHouse,
 * Kafka and HTTP implement them in services/adapters/.
 */
import type { AlertTransition } from '../alerting/alert-window.js'
import type { BaselineWindowRow } from '../alerting/baseline-profile.js'
import type { SilenceSpec } from '../alerting/silences.js'
import type { RunProgress } from '../stats/window-completeness.js'

export interface AlertRunInfo {
  runId: string
  startedAtMs: number
  /** undefined while the run has not ended. */
  endedAtMs: number | undefined
  /** Sum of the clients' targets, ops/s; 0 = none. */
  targetOpsPerSec: number
  /** The run or group:NAME it is compared with while it runs (label baseline, benchstream run --baseline). */
  baseline?: string
}

/** Merged counts of one operation in one window. */
export interface WindowCountRow {
  startMs: number
  op: string
  count: number
  errors: number
  /** p99 of the window's successful operations from its merged histogram, µs; null without any. */
  p99Us?: number | null
}

/** Where windows come from (ClickHouse: services/adapters/clickhouse/alerts.ts). */
export interface AlertWindowSource {
  /** Runs started since sinceMs that have not ended, and runs that ended since sinceMs. */
  runs(sinceMs: number): Promise<AlertRunInfo[]>
  /** A run's progress, looking only at windows starting at or after sinceMs; undefined when there are none. */
  progress(runId: string, sinceMs: number): Promise<RunProgress | undefined>
  /** Counts merged over clients, statuses and partitions, for window starts in [fromMs, toMs). */
  windows(runId: string, fromMs: number, toMs: number): Promise<WindowCountRow[]>
  /**
   * Every window of the baseline a run names (a run id or group:NAME), per operation, offsets from each run's first
   * window.
   */
  baselineWindows(ref: string): Promise<BaselineWindowRow[]>
}

/** Where transitions are recorded (the `alerts` table). */
export interface AlertStore {
  /** Every incident whose latest recorded state is firing. */
  loadOpen(): Promise<AlertTransition[]>
  /** The latest recorded transition of every incident of these runs. */
  loadRuns(runIds: readonly string[]): Promise<AlertTransition[]>
  record(t: AlertTransition, notifiedAtMs: number | undefined): Promise<void>
}

/** Where silences are kept (the `silences` table). */
export interface SilenceStore {
  /** Silences not yet expired at nowMs (pending or active): what the engine judges new incidents by. */
  current(nowMs: number): Promise<SilenceSpec[]>
  /** Every silence's latest version, newest first, at most limit. */
  list(limit: number): Promise<SilenceSpec[]>
  get(id: string): Promise<SilenceSpec | undefined>
  /** Stores a new silence, or a new version of one (an expiry). */
  save(s: SilenceSpec): Promise<void>
}

/** Expected failures are values, not exceptions. */
export type DeliveryResult = { ok: true } | { ok: false; error: string }

export interface AlertNotifier {
  /** Counter key: kafka, webhook, ... */
  readonly channel: string
  /**
   * Whether silences hold this channel's notifications back: true for what reaches people (the webhook), false for the
   * record of every transition (the alerts topic, where a silenced one is marked).
   */
  readonly mutedBySilences: boolean
  notify(t: AlertTransition): Promise<DeliveryResult>
}

/**
 * Where experiments are kept between coordinator runs and for the API:
 * the whole state of each, the newest version winning. The API stores them
 * in ClickHouse (services/adapters/clickhouse/experiment-store.ts); the
 * coordinator reaches them through the API (services/adapters/http/experiment-api.ts).
 */
import type { ExperimentState } from '../../../schemas/experiment-state.v1.js'
import type { ExperimentSummary } from '../../../schemas/experiments-api.v1.js'

export interface ExperimentStore {
  /** Stores this version of the state; an older version than the one stored is ignored. */
  save(state: ExperimentState): Promise<void>
  load(id: string): Promise<ExperimentState | undefined>
  list(limit: number): Promise<ExperimentSummary[]>
}

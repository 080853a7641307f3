/**
 * Experiments in ClickHouse (table `experiments`, schemas/clickhouse/0010-experiments.sql):
 * one row per stored version of an experiment's whole state, the newest
 * version winning (ReplacingMergeTree, and argMax when read, before merges).
 */
import type { ExperimentState, ExperimentSummary } from '../../../schemas/experiments.v1.js'
import { BenchstreamError } from '../../core/errors.js'
import { summaryOf } from '../../core/experiments/state.js'
import type { ExperimentStore } from '../../core/ports/experiment-store.js'
import { queryRows, type ClickHouse } from './client.js'
import { usToDateTime64 } from './window-store.js'

export class ClickHouseExperimentStore implements ExperimentStore {
  constructor(private readonly ch: ClickHouse) {}

  async save(s: ExperimentState): Promise<void> {
    try {
      await this.ch.client.insert({
        table: `${this.ch.database}.experiments`,
        format: 'JSONEachRow',
        values: [
          {
            experiment_id: s.id,
            name: s.name,
            status: s.status,
            // As text ("seconds.micros"): a JSON number is refused for a DateTime64 (chDB: "expected ','").
            created_at: usToDateTime64(Math.round(s.createdAtMs * 1000)),
            updated_at: usToDateTime64(Math.round(s.updatedAtMs * 1000)),
            version: s.version,
            state: JSON.stringify(s),
          },
        ],
        // A retried save of the same version is one row.
        clickhouse_settings: { insert_deduplication_token: `experiment:${s.id}:${s.version}` },
      })
    } catch (err) {
      throw new BenchstreamError('BS_ERR_CLICKHOUSE', `storing experiment ${s.id} failed: ${(err as Error).message}`, {
        cause: err,
      })
    }
  }

  async load(id: string): Promise<ExperimentState | undefined> {
    const rows = await queryRows<{ state: string }>(
      this.ch,
      `SELECT argMax(state, version) AS state FROM ${this.ch.database}.experiments
       WHERE experiment_id = {id:String} GROUP BY experiment_id`,
      { id },
    )
    return rows[0] === undefined ? undefined : (JSON.parse(rows[0].state) as ExperimentState)
  }

  async list(limit: number): Promise<ExperimentSummary[]> {
    const rows = await queryRows<{ state: string }>(
      this.ch,
      `SELECT argMax(state, version) AS state FROM ${this.ch.database}.experiments
       GROUP BY experiment_id ORDER BY max(created_at) DESC, experiment_id LIMIT {limit:UInt32}`,
      { limit },
    )
    return rows.map((r) => summaryOf(JSON.parse(r.state) as ExperimentState))
  }
}

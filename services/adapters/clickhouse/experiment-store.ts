/**
 * Experiments in ClickHouse (table `experiments`, schemas/clickhouse/0010-experiments.sql):
 * one row per stored version of an experiment's whole state, the newest
 * version winning (ReplacingMergeTree, and argMax when read, before merges).
 */
import type { ExperimentState } from '../../../schemas/experiment-state.v1.js'
import type { ExperimentSummary } from '../../../schemas/experiments-api.v1.js'
import { BenchstreamError } from '../../core/errors.js'
import { summaryOf } from '../../core/experiments/state.js'
import type { ExperimentStore } from '../../core/ports/experiment-store.js'
import { queryRows, writeTable, type ClickHouse } from './client.js'

/** ms since the epoch as DateTime64(3) text: 2026-12-04 16:42:18.849 (UTC). */
function dateTime64(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', '')
}

export class ClickHouseExperimentStore implements ExperimentStore {
  constructor(private readonly ch: ClickHouse) {}

  async save(s: ExperimentState): Promise<void> {
    try {
      await this.ch.client.insert({
        table: writeTable(this.ch, `${this.ch.database}.experiments`),
        format: 'JSONEachRow',
        values: [
          {
            experiment_id: s.id,
            name: s.name,
            status: s.status,
            created_at: dateTime64(s.createdAtMs),
            updated_at: dateTime64(s.updatedAtMs),
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

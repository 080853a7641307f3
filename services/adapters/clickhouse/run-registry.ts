/**
 * RunWindowRegistry on ClickHouse (`run_settings`, schemas/clickhouse/0004).
 * A claim reads the registered lengths, inserts this processor's for the
 * runs that have none, and reads again: concurrent claims of one new run
 * all read the same earliest row (argMin), so they agree on the winner.
 */
import { BenchstreamError } from '../../core/errors.js'
import type { RunWindowRegistry } from '../../core/ports/run-registry.js'
import { queryRows, writeTable, type ClickHouse } from './client.js'

export class ClickHouseRunRegistry implements RunWindowRegistry {
  /** @param claimant who registers (processor instance id), the tie-breaker between claims at the same microsecond. */
  constructor(
    private readonly ch: ClickHouse,
    private readonly claimant: string,
  ) {}

  async claim(runIds: readonly string[], windowMs: number): Promise<Map<string, number>> {
    if (runIds.length === 0) return new Map()
    try {
      const known = await this.read(runIds)
      const missing = runIds.filter((r) => !known.has(r))
      if (missing.length === 0) return known
      await this.ch.client.insert({
        table: writeTable(this.ch, `${this.ch.database}.run_settings`),
        format: 'JSONEachRow',
        values: missing.map((run_id) => ({ run_id, window_ms: windowMs, claimed_by: this.claimant })),
      })
      return await this.read(runIds)
    } catch (err) {
      throw new BenchstreamError(
        'BS_ERR_CLICKHOUSE',
        `registering the window length of ${runIds.length} run(s) in ClickHouse (${this.ch.location}) ` +
          `failed: ${(err as Error).message}`,
        { cause: err },
      )
    }
  }

  private async read(runIds: readonly string[]): Promise<Map<string, number>> {
    const rows = await queryRows<{ run_id: string; window_ms: number | string }>(
      this.ch,
      `
      SELECT run_id, argMin(window_ms, (claimed_at, claimed_by)) AS window_ms
      FROM ${this.ch.database}.run_settings WHERE run_id IN {runIds:Array(String)} GROUP BY run_id`,
      { runIds },
    )
    return new Map(rows.map((r) => [r.run_id, Number(r.window_ms)]))
  }
}

/**
 * The port the processor writes through. An implementation must make
 * write() idempotent per batch.token: writing the same batch twice (a retry,
 * or a replay after a crash) stores it once.
 */
import type { FlushBatch } from '../stats/partition-state.js'

export interface WindowStore {
  write(batch: FlushBatch): Promise<void>
}

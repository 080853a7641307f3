import type { TestContext } from 'node:test'
import { migrate, openClickHouse, type ClickHouse } from '../../services/adapters/clickhouse/client.js'
import type { ClickHouseConfig } from '../../services/common/infra-config.js'

/** The embedded engine (or CLICKHOUSE_URL's server) of a test, migrated, closed when the test ends. */
export async function migratedClickHouse(t: TestContext, cfg: ClickHouseConfig): Promise<ClickHouse> {
  const ch = openClickHouse(cfg)
  t.after(() => ch.close())
  await migrate(ch, { opsTtlDays: 0 })
  return ch
}

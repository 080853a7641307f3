/** Operation counts per OP/status as YCSB printed them and as Benchstream counted them, for exact comparisons. */
import type { Report } from '../../schemas/run-reports-api.v1.js'
import type { SummaryReport } from '../../services/core/ycsb/report-types.js'

/** YCSB's counts per OP/status (measured operations only). */
export const ycsbReturns = (r: SummaryReport): Record<string, number> => {
  const out: Record<string, number> = {}
  for (const m of r.measurements) {
    if (m.name.kind !== 'operation' || m.name.latency !== 'measured' || m.name.ycsbStatus !== undefined) continue
    for (const [s, n] of Object.entries(m.returns)) out[`${m.name.op}/${s}`] = n
  }
  return out
}
/** Benchstream's counts per OP/status. */
export const ourReturns = (r: Report): Record<string, number> => {
  const out: Record<string, number> = {}
  for (const m of r.measurements)
    if (!m.name.startsWith('Intended-') && !m.name.endsWith('-FAILED'))
      for (const [s, n] of Object.entries(m.returns)) out[`${m.name}/${s}`] = n
  return out
}

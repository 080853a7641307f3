/**
 * The rules of a plan with `driver: pe` (HBase's PerformanceEvaluation) that
 * its schema cannot say: the workloads are PE's tests, a run is a number of
 * rows (PE has no time limit), split evenly over the agents and their PE
 * clients (`threads`), and the data PE reads is loaded by each setup's load
 * step (PE has no load phase of its own that an experiment could split), or
 * is there already (`load: none`). docs/guides/experiments.md#driver-pe.
 */
import type { Plan } from '../../../schemas/experiment-plan.v1.js'
import { PE_COMMANDS } from '../pe/pe-tests.js'
import { closest } from '../suggest.js'

/** Problems of a pe plan, each naming its field and what is allowed; none for other drivers. */
export function pePlanProblems(plan: Plan): string[] {
  if (plan.driver !== 'pe') return []
  const out: string[] = []
  plan.workloads.forEach((w, i) => {
    if (!PE_COMMANDS.includes(w.file)) {
      const c = closest(w.file, [...PE_COMMANDS])
      out.push(
        `workloads[${i}].file: ${JSON.stringify(w.file)} is not one of PE's tests` +
          `${c === undefined ? '' : `; did you mean ${c}?`}; driver pe runs ${PE_COMMANDS.join(', ')}`,
      )
    }
  })
  if (plan.seconds !== undefined)
    out.push('seconds: PE runs a number of rows, not a time: give operations (rows of all clients together)')
  const clients = typeof plan.clients === 'number' ? plan.clients : plan.clients.length
  const threads = plan.threads ?? 1
  if (plan.operations !== undefined && plan.operations % (clients * threads) !== 0)
    out.push(
      `operations: ${plan.operations} rows do not split evenly over ${clients} agents x ${threads} PE clients ` +
        `(threads); PE gives each client the same --rows: give a multiple of ${clients * threads}`,
    )
  if (plan.target !== undefined && plan.target > 0) out.push('target: PE runs unthrottled; drop target')
  if ((plan.load ?? 'setup') !== 'none')
    plan.setups.forEach((s, i) => {
      if (s.steps?.load === undefined)
        out.push(
          `setups[${i}].steps.load: driver pe has no load phase of its own: give the setup a load step (an ` +
            'allowed command, e.g. hbase pe --nomapred --rows=N sequentialWrite 1) or say load: none when ' +
            "PE's table is there already",
        )
    })
  return out
}

/**
 * The comparisons the plan names, over complete runs only, at the end of an experiment: for each pair and workload,
 * compare over the runs (at the last look's level when repetitions run until decided), the decisions and what was
 * not testable kept in the state, the comparison's files and comparison.md written into the experiment's folder.
 * A comparison that fails is recorded with its error, never left out.
 */
import type { ReleaseComparison } from '../../schemas/compare-api.v1.js'
import type { ComparisonRecord, ExperimentState } from '../../schemas/experiment-state.v1.js'
import { decideComparison, figureChange, untestedByConcern } from '../core/compare/decision.js'
import { formatComparison } from '../core/compare/release-format.js'
import { experimentMarkdown } from '../core/experiments/comparison-markdown.js'
import { comparePairs, workloadName } from '../core/experiments/plan.js'
import { comparedRuns } from '../core/experiments/state.js'
import type { ConductorDeps } from './deps.js'
import { comparisonLevel, decisionsOf } from './sequential.js'

/** Compares every pair of setups the plan names, for each workload; writes the files and comparison.md. */
export async function compareAll(state: ExperimentState, deps: Pick<ConductorDeps, 'runs' | 'write'>): Promise<void> {
  const plan = state.plan
  state.comparisons = []
  for (const pair of comparePairs(plan))
    for (const w of plan.workloads) {
      const workload = workloadName(w)
      const a = comparedRuns(state, pair.baseline, workload)
      const b = comparedRuns(state, pair.candidate, workload)
      const stem = `compare-${pair.baseline}-vs-${pair.candidate}-${workload}`
      const record: ComparisonRecord = {
        baseline: pair.baseline,
        candidate: pair.candidate,
        workload,
        regressions: [],
        improvements: [],
        baselineRuns: a,
        candidateRuns: b,
        files: [],
      }
      if (a.length === 0 || b.length === 0) {
        record.error = `no complete run of ${a.length === 0 ? pair.baseline : pair.candidate} for ${workload}`
        state.comparisons.push(record)
        continue
      }
      try {
        // A sequential experiment's comparison is its last look's: that round's share of alpha, Welch's t.
        const level = comparisonLevel(state, workload)
        const c = await deps.runs.compare(`runs:${a.join(',')}`, `runs:${b.join(',')}`, {
          force: true,
          ...(level.test === 'welch' || plan.alpha !== undefined ? { alpha: level.alpha } : {}),
          ...(level.test === 'welch' ? { test: level.test } : {}),
          ...(plan.minEffect === undefined ? {} : { minEffect: plan.minEffect }),
        })
        record.decisions = decisionsOf(state, workload, c)
        const named: ReleaseComparison = {
          ...c,
          baseline: { ...c.baseline, ref: `${pair.baseline} (${workload})` },
          candidate: { ...c.candidate, ref: `${pair.candidate} (${workload})` },
        }
        const d = decideComparison(c)
        record.regressions = d.regressions.map((f) => f.label)
        record.improvements = d.improvements.map((f) => f.label)
        record.untested = untestedByConcern(d).map((f) => ({
          figure: figureChange(f),
          n: `${f.baseline.n} + ${f.candidate.n}`,
        }))
        record.notCompared = d.notCompared
        record.files = [
          deps.write(state.id, `${stem}.md`, formatComparison(named, 'markdown')),
          deps.write(state.id, `${stem}.txt`, formatComparison(named, 'terminal')),
          deps.write(state.id, `${stem}.json`, JSON.stringify(named, null, 2) + '\n'),
        ]
      } catch (err) {
        record.error = (err as Error).message.slice(0, 4000)
      }
      state.comparisons.push(record)
    }
  deps.write(state.id, 'comparison.md', experimentMarkdown(state))
}

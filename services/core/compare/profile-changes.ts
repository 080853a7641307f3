/**
 * The profile side of a release comparison: "SCAN throughput -23%" and, in
 * the same answer, which frames took a larger share of the CPU. Both sides'
 * CPU profiles (every profile attached to their runs, merged) go through
 * frameShareChanges: shares rather than counts, so profiles of different
 * lengths or sampling intervals compare.
 */
import type { ProfileChanges } from '../../../schemas/compare-api.v1.js'
import { MAX_MERGED_STACKS, type ProfileStore } from '../ports/profile-store.js'
import { frameShareChanges } from '../profiles/flame-graph.js'
import { totalSamples } from '../profiles/folded.js'
import type { ProfileComparisonHook } from './release.js'

/** Frames listed per ordering (self, total). */
export const PROFILE_FRAMES = 10

export function profileComparison(store: Pick<ProfileStore, 'stacks'>, limit = PROFILE_FRAMES): ProfileComparisonHook {
  return async (baselineRuns, candidateRuns): Promise<ProfileChanges | null> => {
    if (baselineRuns.length === 0 || candidateRuns.length === 0) return null
    const [a, b] = await Promise.all([
      store.stacks({ runIds: [...baselineRuns] }, MAX_MERGED_STACKS),
      store.stacks({ runIds: [...candidateRuns] }, MAX_MERGED_STACKS),
    ])
    // One side without samples: no comparison rather than "every frame grew".
    if (totalSamples(a) === 0 || totalSamples(b) === 0) return null
    const q = (runs: readonly string[]): string => encodeURIComponent(runs.join(','))
    return {
      ...frameShareChanges(a, b, limit),
      diffFlameGraph: `/profiles?baseline=${q(baselineRuns)}&candidate=${q(candidateRuns)}`,
    }
  }
}

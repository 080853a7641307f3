/**
 * Where profiles are kept: services/adapters/clickhouse/profile-store.ts
 * (stacks deduplicated in a table keyed by a hash of the frame list, sample
 * counts per profile, time slice and stack id). The API reads through it and
 * `benchstream profile attach` writes through it; the processor writes
 * PROFILE records through the WindowStore with the rest of a flush.
 */
import type { Profile } from '../profiles/profile.js'
import type { Folded } from '../profiles/folded.js'

/** Which samples: runs (or a group of runs), optionally a time range and labels. Empty selections select nothing. */
export interface ProfileSelection {
  runIds?: readonly string[]
  /** Runs whose drivers announced this group (RUN_LIFECYCLE group). */
  group?: string
  /** Slices starting in [fromMs, toMs), ms since the Unix epoch (as windows are selected by their start). */
  fromMs?: number
  toMs?: number
  /** Only profiles with all of these labels. */
  labels?: Readonly<Record<string, string>>
}

export interface ProfileInfo {
  profileId: string
  runId: string
  labels: Record<string, string>
  event: string
  intervalNs: number
  source: string
  /** Covered time, ms since the Unix epoch. */
  fromMs: number
  toMs: number
  samples: number
  /** Time slices stored (1 for a file, one per record streamed). */
  slices: number
  cpuMs: number | null
}

export interface StoreResult {
  profileId: string
  /** False when this profile was stored before (same id): nothing was written. */
  created: boolean
  stacks: number
  /** Stacks the store did not know yet (the rest were deduplicated). */
  newStacks: number
  samples: number
}

export interface ProfiledRun {
  runId: string
  profiles: number
  samples: number
  fromMs: number
  toMs: number
}

/** Distinct stacks one read may merge (bounds the memory of a flame graph, a diff or a comparison). */
export const MAX_MERGED_STACKS = 500_000

export interface ProfileStore {
  /** Stores one profile under the id given (profileId() of its content), all or nothing for the caller. */
  store(profile: Profile, id: string, origin: string): Promise<StoreResult>
  list(selection: ProfileSelection): Promise<ProfileInfo[]>
  /** Runs that have profiles, newest first. */
  runs(limit: number): Promise<ProfiledRun[]>
  /** The selected samples merged per stack; BS_ERR_TOO_LARGE when more than maxStacks distinct stacks. */
  stacks(selection: ProfileSelection, maxStacks: number): Promise<Folded>
}

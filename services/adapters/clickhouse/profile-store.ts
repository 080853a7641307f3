/**
 * ProfileStore on ClickHouse (schemas/clickhouse/0006-profiles.sql): each
 * distinct stack once in profile_stacks (keyed by stackId, a hash of its
 * frames), sample counts per profile, time slice and stack id in
 * profile_samples, and one profile_slices row per profile and slice, written
 * last: readers only see profiles whose slice row exists, so a write that
 * fails half way shows nothing. The processor writes PROFILE records with
 * the same rows (window-store.ts, via profileRecordRows).
 */
import type { ProfileRecord } from '../../../schemas/events.v1.js'
import { BenchstreamError } from '../../core/errors.js'
import { stackFrames, totalSamples, type Folded } from '../../core/profiles/folded.js'
import { recordStacks, stackId, type Profile, type ProfileMeta } from '../../core/profiles/profile.js'
import type {
  ProfiledRun,
  ProfileInfo,
  ProfileSelection,
  ProfileStore,
  StoreResult,
} from '../../core/ports/profile-store.js'
import { queryRows, writeTable, type ClickHouse } from './client.js'

export interface StackRow {
  stack_id: string
  frames: string[]
  depth: number
}
interface SampleRow {
  run_id: string
  profile_id: string
  window_start: string
  stack_id: string
  count: number
}
interface SliceRow {
  profile_id: string
  run_id: string
  labels: Record<string, string>
  event: string
  interval_ns: number
  source: string
  origin: string
  window_start: string
  window_ms: number
  samples: number
  stacks: number
  cpu_ms: number | null
  src_partition: number
  src_offset: number
}

export interface ProfileRows {
  stacks: StackRow[]
  samples: SampleRow[]
  slice: SliceRow
}

/** The rows of one time slice of a profile. `src` is the Kafka message it came from (-1, -1 for none). */
function sliceRows(
  meta: ProfileMeta,
  stacks: Folded,
  id: string,
  origin: string,
  src: { partition: number; offset: number },
): ProfileRows {
  const start = msText(meta.fromUs)
  const stackRows: StackRow[] = []
  const samples: SampleRow[] = []
  for (const [key, count] of stacks) {
    const sid = stackId(key)
    const frames = stackFrames(key)
    stackRows.push({ stack_id: sid, frames, depth: frames.length })
    samples.push({ run_id: meta.runId, profile_id: id, window_start: start, stack_id: sid, count })
  }
  return {
    stacks: stackRows,
    samples,
    slice: {
      profile_id: id,
      run_id: meta.runId,
      labels: meta.labels,
      event: meta.event,
      interval_ns: meta.intervalNs,
      source: meta.source,
      origin,
      window_start: start,
      window_ms: Math.max(0, Math.round((meta.toUs - meta.fromUs) / 1000)),
      samples: totalSamples(stacks),
      stacks: stacks.size,
      cpu_ms: meta.cpuMs ?? null,
      src_partition: src.partition,
      src_offset: src.offset,
    },
  }
}

/** The rows of a PROFILE record read from Kafka. */
export function profileRecordRows(r: ProfileRecord, partition: number, offset: number): ProfileRows {
  return sliceRows(r, recordStacks(r), r.profileId, 'kafka', { partition, offset })
}

/** Stack ids (of `ids`) that profile_stacks already has. */
export async function knownStacks(ch: ClickHouse, ids: readonly string[]): Promise<Set<string>> {
  const known = new Set<string>()
  const unique = [...new Set(ids)]
  // In chunks: the ids travel as one query parameter.
  for (let i = 0; i < unique.length; i += KNOWN_CHUNK) {
    const rows = await queryRows<{ stack_id: string }>(
      ch,
      `SELECT DISTINCT toString(stack_id) AS stack_id FROM ${ch.database}.profile_stacks WHERE stack_id ` +
        `IN {ids:Array(UInt64)}`,
      { ids: unique.slice(i, i + KNOWN_CHUNK).map((id) => BigInt(id)) },
    )
    for (const r of rows) known.add(r.stack_id)
  }
  return known
}
const KNOWN_CHUNK = 20_000

/** ms text that DateTime64(3) parses exactly. */
function msText(us: number): string {
  const ms = Math.floor(us / 1000)
  const s = Math.floor(ms / 1000)
  return `${s}.${String(ms - s * 1000).padStart(3, '0')}`
}

export class ClickHouseProfileStore implements ProfileStore {
  constructor(private readonly ch: ClickHouse) {}

  async store(profile: Profile, id: string, origin: string): Promise<StoreResult> {
    const db = this.ch.database
    const samples = totalSamples(profile.stacks)
    try {
      const [seen] = await queryRows<{ n: string }>(
        this.ch,
        `SELECT count() AS n FROM ${db}.profile_slices WHERE profile_id = {id:String}`,
        { id },
      )
      if (Number(seen!.n) > 0)
        return { profileId: id, created: false, stacks: profile.stacks.size, newStacks: 0, samples }
      const rows = sliceRows(profile, profile.stacks, id, origin, { partition: -1, offset: -1 })
      const known = await knownStacks(
        this.ch,
        rows.stacks.map((s) => s.stack_id),
      )
      const fresh = rows.stacks.filter((s) => !known.has(s.stack_id))
      // Tokens from the profile id: a retried attach writes each table once.
      if (fresh.length > 0) await this.insert(`${db}.profile_stacks`, `profile:${id}:stacks`, fresh)
      await this.insert(`${db}.profile_samples`, `profile:${id}:samples`, rows.samples)
      await this.insert(`${db}.profile_slices`, `profile:${id}:slices`, [rows.slice])
      return { profileId: id, created: true, stacks: profile.stacks.size, newStacks: fresh.length, samples }
    } catch (err) {
      throw new BenchstreamError(
        'BS_ERR_CLICKHOUSE',
        `storing profile ${id} of run ${profile.runId} in ClickHouse (${this.ch.location}) ` +
          `failed: ${(err as Error).message}`,
        { cause: err, retryable: true },
      )
    }
  }

  async list(sel: ProfileSelection): Promise<ProfileInfo[]> {
    const { where, params } = sliceFilter(this.ch.database, sel)
    const rows = await queryRows<{
      profile_id: string
      run_id: string
      labels: Record<string, string>
      event: string
      interval_ns: string
      source: string
      from_ms: string
      to_ms: string
      samples: string
      slices: string
      cpu_ms: number | null
    }>(
      this.ch,
      `
      SELECT profile_id, any(run_id) AS run_id, any(labels) AS labels, any(event) AS event,
             any(interval_ns) AS interval_ns, any(source) AS source,
             toUnixTimestamp64Milli(min(window_start)) AS from_ms,
             max(toUnixTimestamp64Milli(window_start) + window_ms) AS to_ms,
             sum(samples) AS samples, count() AS slices, sum(cpu_ms) AS cpu_ms
      FROM (SELECT * FROM ${this.ch.database}.profile_slices WHERE ${where})
      GROUP BY profile_id
      ORDER BY from_ms, profile_id`,
      params,
    )
    return rows.map((r) => ({
      profileId: r.profile_id,
      runId: r.run_id,
      labels: r.labels,
      event: r.event,
      intervalNs: Number(r.interval_ns),
      source: r.source,
      fromMs: Number(r.from_ms),
      toMs: Number(r.to_ms),
      samples: Number(r.samples),
      slices: Number(r.slices),
      cpuMs: r.cpu_ms === null ? null : Number(r.cpu_ms),
    }))
  }

  async runs(limit: number): Promise<ProfiledRun[]> {
    const rows = await queryRows<{ run_id: string; profiles: string; samples: string; from_ms: string; to_ms: string }>(
      this.ch,
      `
      SELECT run_id, uniqExact(profile_id) AS profiles, sum(samples) AS samples,
             toUnixTimestamp64Milli(min(window_start)) AS from_ms,
             max(toUnixTimestamp64Milli(window_start) + window_ms) AS to_ms
      FROM ${this.ch.database}.profile_slices
      GROUP BY run_id
      ORDER BY to_ms DESC, run_id
      LIMIT {limit:UInt32}`,
      { limit },
    )
    return rows.map((r) => ({
      runId: r.run_id,
      profiles: Number(r.profiles),
      samples: Number(r.samples),
      fromMs: Number(r.from_ms),
      toMs: Number(r.to_ms),
    }))
  }

  async stacks(sel: ProfileSelection, maxStacks: number): Promise<Folded> {
    const db = this.ch.database
    const { where, params } = sliceFilter(db, sel)
    // Samples of slices that are stored (their slice row written last), cut to the time range.
    const samples = `
        SELECT stack_id, count FROM ${db}.profile_samples
        WHERE (profile_id, window_start) IN (SELECT profile_id, window_start FROM ${db}.profile_slices WHERE ${where})`
    const rows = await queryRows<{ frames: string[]; n: string }>(
      this.ch,
      `
      SELECT s.frames AS frames, c.n AS n
      FROM (SELECT stack_id, sum(count) AS n FROM (${samples}) GROUP BY stack_id) AS c
      INNER JOIN (SELECT stack_id, any(frames) AS frames FROM ${db}.profile_stacks
                  WHERE stack_id IN (SELECT stack_id FROM (${samples})) GROUP BY stack_id) AS s
      ON s.stack_id = c.stack_id
      LIMIT {limit:UInt64}`,
      { ...params, limit: maxStacks + 1 },
    )
    if (rows.length > maxStacks)
      throw new BenchstreamError(
        'BS_ERR_TOO_LARGE',
        `the selection has more than ${maxStacks} distinct stacks; narrow it (fewer runs, a time range, labels)`,
      )
    const out: Folded = new Map()
    for (const r of rows) out.set(r.frames.join(';'), Number(r.n))
    return out
  }

  private async insert(table: string, token: string, values: object[]): Promise<void> {
    await this.ch.client.insert({
      table: writeTable(this.ch, table),
      values,
      format: 'JSONEachRow',
      clickhouse_settings: { insert_deduplication_token: token },
    })
  }
}

/** WHERE over profile_slices for a selection, with its query parameters. */
function sliceFilter(db: string, sel: ProfileSelection): { where: string; params: Record<string, unknown> } {
  const parts: string[] = []
  const params: Record<string, unknown> = {}
  const runs: string[] = []
  if (sel.runIds !== undefined) {
    params.runs = [...sel.runIds]
    runs.push('run_id IN {runs:Array(String)}')
  }
  if (sel.group !== undefined) {
    params.group = sel.group
    runs.push(`run_id IN (SELECT run_id FROM ${db}.run_clients WHERE group_id = {group:String})`)
  }
  // No run and no group selects nothing, never everything.
  parts.push(runs.length === 0 ? '0' : `(${runs.join(' OR ')})`)
  if (sel.fromMs !== undefined) {
    params.fromMs = sel.fromMs
    parts.push('window_start >= fromUnixTimestamp64Milli(toInt64({fromMs:Int64}))')
  }
  if (sel.toMs !== undefined) {
    params.toMs = sel.toMs
    parts.push('window_start < fromUnixTimestamp64Milli(toInt64({toMs:Int64}))')
  }
  Object.entries(sel.labels ?? {}).forEach(([k, v], i) => {
    params[`lk${i}`] = k
    params[`lv${i}`] = v
    parts.push(`labels[{lk${i}:String}] = {lv${i}:String}`)
  })
  return { where: parts.join(' AND '), params }
}

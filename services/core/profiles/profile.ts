/**
 * A profile of a run: folded stacks with sample counts, tagged with the run,
 * labels naming the host/process, the time slice the samples cover and what
 * one sample stands for. How files become one (format detection, parsing),
 * how one travels (PROFILE records, schemas/events.v1.ts) and the ids that
 * make storage idempotent (a profile id from the content, a stack id from
 * the frame list).
 */
import { createHash } from 'node:crypto'
import {
  MAGIC_0,
  MAGIC_1,
  MAX_PROFILE_RECORD_BYTES,
  RECORD_KIND,
  SCHEMA_VERSION,
  type ProfileRecord,
} from '../../../schemas/events.v1.js'
import { BenchstreamError } from '../errors.js'
import { decodeError, parseFolded, stackFrames, totalSamples, type Folded } from './folded.js'
import { collapsePerfScript, looksLikePerfScript, type PerfCollapseOptions } from './perf-script.js'

/**
 * What a profile says about itself: the fields of a PROFILE record
 * (schemas/events.v1.ts, the single source of their meaning and bounds)
 * without its id and its stacks. Labels name the host/process; fromUs/toUs
 * is the time slice in µs since the Unix epoch; event is what one sample
 * stands for (cpu, itimer, ctimer, wall, perf:<event>); intervalNs 0 is
 * unknown; cpuMs is the profiled process's CPU time over the slice, when
 * measured.
 */
export type ProfileMeta = Pick<
  ProfileRecord,
  'runId' | 'labels' | 'fromUs' | 'toUs' | 'event' | 'intervalNs' | 'source' | 'cpuMs'
>

export interface Profile extends ProfileMeta {
  stacks: Folded
}

export type ProfileFormat = 'collapsed' | 'perf-script'

export interface ParsedFile {
  format: ProfileFormat
  stacks: Folded
  samples: number
  /** perf script: the event of the samples kept. */
  event?: string
  /** Notes for the user (samples skipped or dropped). */
  notes: string[]
}

/** Largest profile file read (bytes). */
export const MAX_PROFILE_FILE_BYTES = 512 * 1024 * 1024

/**
 * Reads one profile file: `perf script` output is collapsed here
 * (perf-script.ts), anything else must be folded stacks. A file that is
 * neither, or breaks a bound, is a BS_ERR_DECODE naming file and line.
 */
export function parseProfileFile(text: string, file: string, perf: PerfCollapseOptions = {}): ParsedFile {
  if (text.trim() === '')
    throw decodeError(file, 1, 'the file is empty; expected folded stacks or `perf script` output')
  if (looksLikePerfScript(text)) {
    const r = collapsePerfScript(text, file, perf)
    const notes: string[] = []
    if (r.skippedOtherEvents > 0)
      notes.push(
        `${r.skippedOtherEvents} samples of events other than ${r.event ?? '?'} skipped (as stackcollapse-perf.pl ` +
          `does; pick one with an event filter)`,
      )
    if (r.droppedUnterminated)
      notes.push('the last sample had no blank line after it and was not counted (as stackcollapse-perf.pl does)')
    if (r.stacks.size === 0)
      throw decodeError(
        file,
        1,
        'no complete sample in this perf script output (a sample is a header line, its frame lines and a blank line)',
      )
    return {
      format: 'perf-script',
      stacks: r.stacks,
      samples: totalSamples(r.stacks),
      ...(r.event === undefined ? {} : { event: r.event }),
      notes,
    }
  }
  const r = parseFolded(text, file)
  if (r.stacks.size === 0) throw decodeError(file, 1, 'no stack with a sample in this file')
  return { format: 'collapsed', stacks: r.stacks, samples: r.samples, notes: [] }
}

/**
 * A profile's id from what it is: run, labels, slice, event, interval and
 * stacks. Attaching the same file to the same run twice gives the same id,
 * which the store recognises instead of counting it twice.
 */
export function profileId(p: Profile): string {
  const h = createHash('sha256')
  const labels = Object.keys(p.labels)
    .sort()
    .map((k) => [k, p.labels[k]])
  h.update(JSON.stringify([p.runId, labels, p.fromUs, p.toUs, p.event, p.intervalNs]))
  for (const k of [...p.stacks.keys()].sort()) h.update(`\n${k} ${p.stacks.get(k)}`)
  return `p-${h.digest('hex').slice(0, 24)}`
}

/**
 * The id of a stack: the first 8 bytes of SHA-256 over its frames, as the
 * decimal text of a UInt64 (ClickHouse's key of profile_stacks). 64 bits:
 * a collision is expected after about 4 billion distinct stacks.
 */
export function stackId(key: string): string {
  return createHash('sha256').update(key).digest().readBigUInt64BE(0).toString()
}

/** The JSON body of a PROFILE record (and of an upload to POST /api/v1/profiles). */
export type ProfileBody = Omit<ProfileRecord, 'kind' | 'cpuMs'> & { cpuMs?: number }

/**
 * Splits a profile into PROFILE bodies whose JSON is at most `maxBytes` long
 * (stacks split between bodies; each has its own frame table and the same
 * metadata, and their counts add up). Infinity gives one body.
 */
export function profileBodies(p: Profile, id: string, maxBytes: number): ProfileBody[] {
  const meta = {
    profileId: id,
    runId: p.runId,
    labels: p.labels,
    fromUs: p.fromUs,
    toUs: p.toUs,
    event: p.event,
    intervalNs: p.intervalNs,
    source: p.source,
    ...(p.cpuMs === undefined ? {} : { cpuMs: p.cpuMs }),
  }
  // Bytes of the metadata and the JSON around the two arrays.
  const base = Buffer.byteLength(JSON.stringify({ ...meta, frames: [], stacks: [] }))
  const out: ProfileBody[] = []
  let frames: string[] = []
  let index = new Map<string, number>()
  let stacks: number[][] = []
  let size = base
  const flush = (): void => {
    if (stacks.length === 0) return
    out.push({ ...meta, frames, stacks })
    frames = []
    index = new Map()
    stacks = []
    size = base
  }
  for (const [key, count] of p.stacks) {
    const names = stackFrames(key)
    // Worst case for this stack: every frame new to the body.
    let need = String(count).length + 3
    for (const f of names) need += (index.has(f) ? 0 : Buffer.byteLength(JSON.stringify(f)) + 1) + 8
    if (base + need > maxBytes)
      throw new BenchstreamError(
        'BS_ERR_DECODE',
        `a stack of ${names.length} frames needs ${base + need} bytes, more than one record may hold (${maxBytes})`,
      )
    if (size + need > maxBytes) flush()
    const row = [count]
    for (const f of names) {
      let i = index.get(f)
      if (i === undefined) {
        i = frames.length
        frames.push(f)
        index.set(f, i)
        size += Buffer.byteLength(JSON.stringify(f)) + 1
      }
      row.push(i)
      size += String(i).length + 1
    }
    size += String(count).length + 3
    stacks.push(row)
  }
  flush()
  return out
}

/** A profile as PROFILE records (Kafka messages) of at most `maxBytes` each. */
export function encodeProfileRecords(p: Profile, id: string, maxBytes = MAX_PROFILE_RECORD_BYTES): Buffer[] {
  const head = Buffer.from([MAGIC_0, MAGIC_1, SCHEMA_VERSION, RECORD_KIND.PROFILE])
  return profileBodies(p, id, maxBytes - head.length).map((b) => Buffer.concat([head, Buffer.from(JSON.stringify(b))]))
}

/** A record's stacks with their keys, equal stacks summed. */
export function recordStacks(r: Pick<ProfileRecord, 'frames' | 'stacks'>): Folded {
  const out: Folded = new Map()
  for (const s of r.stacks) {
    let key = r.frames[s[1]!]!
    for (let j = 2; j < s.length; j++) key += ';' + r.frames[s[j]!]!
    out.set(key, (out.get(key) ?? 0) + s[0]!)
  }
  return out
}

/**
 * PROFILE records (schemas/events.v1.ts kind 5): a real profile split into
 * bounded records decodes back to the same stacks; malformed or oversized
 * records are rejected with a dead-letter reason, never thrown; the
 * partition state hands decoded records to the store with the flush.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { MAGIC_0, MAGIC_1, MAX_PROFILE_RECORD_BYTES, RECORD_KIND, SCHEMA_VERSION } from '../../schemas/events.v1.js'
import { repoRoot } from '../../services/common/repo-root.js'
import type { DecodeResult } from '../../services/core/codec/decode-result.js'
import { decodeMessage, peekRunId } from '../../services/core/codec/event-codec.js'
import { parseFolded } from '../../services/core/profiles/folded.js'
import {
  encodeProfileRecords,
  profileId,
  recordStacks,
  stackId,
  type Profile,
} from '../../services/core/profiles/profile.js'
import { PartitionState } from '../../services/core/stats/partition-state.js'

const now = Date.now() * 1000
const limits = { minStartUs: now - 86_400e6, maxStartUs: now + 600e6 }
const noVisitor = {
  event: () => assert.fail('no events in a profile record'),
  reject: () => assert.fail('no event rejects'),
}

function profile(): Profile {
  const stacks = parseFolded(
    readFileSync(
      path.join(
        repoRoot(),
        'test',
        'fixtures',
        'profiles',
        'async-profiler-4.6',
        'kafka-broker-cpu-1ms-threads-ann.min2.collapsed',
      ),
      'utf8',
    ),
    'f',
  ).stacks
  return {
    runId: 'run-1',
    labels: { host: 'rs1', process: 'broker' },
    fromUs: now - 10e6,
    toUs: now,
    event: 'cpu',
    intervalNs: 1e6,
    source: 'async-profiler 4.6',
    cpuMs: 1770,
    stacks,
  }
}

test('a real profile split into records of at most N bytes decodes back to the same stacks', () => {
  const p = profile()
  const id = profileId(p)
  assert.match(id, /^p-[0-9a-f]{24}$/)
  assert.equal(
    profileId({ ...p, stacks: new Map([...p.stacks].reverse()) }),
    id,
    'the id does not depend on stack order',
  )
  assert.notEqual(profileId({ ...p, runId: 'run-2' }), id)
  const records = encodeProfileRecords(p, id, 16 * 1024)
  assert.ok(records.length >= 3, `${records.length} records`)
  const merged = new Map<string, number>()
  for (const buf of records) {
    assert.ok(buf.length <= 16 * 1024, `${buf.length} bytes`)
    assert.deepEqual([...buf.subarray(0, 4)], [MAGIC_0, MAGIC_1, SCHEMA_VERSION, RECORD_KIND.PROFILE])
    assert.equal(peekRunId(buf), 'run-1')
    const r = decodeMessage(buf, limits, noVisitor)
    assert.ok(r.ok && r.kind === RECORD_KIND.PROFILE, JSON.stringify(r))
    const rec = r.record
    assert.deepEqual(
      [rec.profileId, rec.runId, rec.labels, rec.event, rec.intervalNs, rec.cpuMs, rec.fromUs, rec.toUs],
      [id, 'run-1', { host: 'rs1', process: 'broker' }, 'cpu', 1e6, 1770, p.fromUs, p.toUs],
    )
    for (const [k, v] of recordStacks(rec)) merged.set(k, (merged.get(k) ?? 0) + v)
  }
  assert.deepEqual(merged, p.stacks)
  assert.equal(encodeProfileRecords(p, id).length, 1, 'the default bound holds this profile in one record')
  // Stack ids: 64-bit, from the frames only.
  assert.match(stackId('a;b;c'), /^\d{1,20}$/)
  assert.equal(stackId('a;b;c'), stackId(['a', 'b', 'c'].join(';')))
  assert.notEqual(stackId('a;b;c'), stackId('a;b;d'))
})

function body(over: Record<string, unknown>): Buffer {
  const base = {
    profileId: 'p-1',
    runId: 'run-1',
    fromUs: now - 1e6,
    toUs: now,
    event: 'cpu',
    frames: ['main', 'work'],
    stacks: [[3, 0, 1]],
  }
  return Buffer.concat([
    Buffer.from([MAGIC_0, MAGIC_1, SCHEMA_VERSION, RECORD_KIND.PROFILE]),
    Buffer.from(JSON.stringify({ ...base, ...over })),
  ])
}
const reject = (buf: Buffer): Extract<DecodeResult, { ok: false }> => {
  const r = decodeMessage(buf, limits, noVisitor)
  assert.ok(!r.ok, 'rejected')
  return r
}

test('malformed PROFILE records are rejected with a reason and a detail, never thrown', () => {
  assert.ok(decodeMessage(body({}), limits, noVisitor).ok)
  assert.deepEqual(
    [reject(body({ stacks: [[3, 0, 7]] })).reason, reject(body({ stacks: [[3, 0, 7]] })).detail],
    ['invalid_record', 'stacks[0][2]: frame index 7; the record has 2 frames (indexes 0..1)'],
  )
  assert.match(reject(body({ stacks: [[0, 0]] })).detail, /at least 1/)
  assert.match(reject(body({ stacks: [[5]] })).detail, /stacks/)
  assert.match(reject(body({ frames: ['a;b'], stacks: [[1, 0]] })).detail, /frames\[0\]: got "a;b"/)
  assert.match(reject(body({ toUs: now - 2e6 })).detail, /toUs .* must be at least fromUs/)
  assert.equal(
    reject(body({ fromUs: now - 90 * 86_400e6, toUs: now - 90 * 86_400e6 })).reason,
    'timestamp_out_of_range',
  )
  assert.equal(reject(body({ runId: 'bad run' })).reason, 'invalid_record')
  assert.equal(reject(body({ event: '' })).reason, 'invalid_record')
  assert.equal(reject(Buffer.concat([body({}).subarray(0, 4), Buffer.from('{"profileId":')])).reason, 'invalid_json')
  const big = body({
    frames: ['x'.repeat(4000)],
    stacks: Array.from({ length: 200 }, () => [1, 0]),
    pad: 'y'.repeat(MAX_PROFILE_RECORD_BYTES),
  })
  assert.deepEqual([reject(big).reason], ['record_too_large'])
})

test('the partition state hands PROFILE records to the flush, in offset order', () => {
  const st = new PartitionState('t', 0, 0, {
    windowUs: 1e6,
    allowedLatenessUs: 0,
    storeRawEvents: false,
    maxEventAgeUs: 86_400e6,
    maxEventFutureUs: 600e6,
  })
  const p = profile()
  const records = encodeProfileRecords(p, 'p-x', 16 * 1024)
  records.forEach((r, i) => st.add(r, i, now))
  st.add(body({ stacks: [[1, 9]] }), records.length, now)
  const b = st.drain('g')
  assert.deepEqual(
    b.profiles.map((x) => x.offset),
    records.map((_, i) => i),
  )
  assert.equal(b.deadLetters.length, 1)
  assert.equal(b.deadLetters[0]!.reason, 'invalid_record')
  assert.equal(b.events, 0)
})

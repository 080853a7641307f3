/**
 * CoreWorkload: property validation, the load phase, the operation mix and
 * the keys the run phase picks. Fixed seeds throughout.
 */
import assert from 'node:assert/strict'
import { readFileSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { repoRoot } from '../../services/common/repo-root.js'
import { CoreWorkload } from '../../services/core/workload/core-workload.js'
import { REQUEST_DISTRIBUTIONS } from '../../services/core/workload/core-workload-config.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import { fnvhash64 } from '../../services/core/workload/fnv-hash.js'
import {
  CORE_WORKLOAD_PROPERTIES,
  mergeProperties,
  parseProperties,
  type Properties,
} from '../../services/core/workload/properties.js'
import type { Operation, Transaction } from '../../services/core/workload/workload-types.js'

const WORKLOADS_DIR = path.join(repoRoot(), 'workloads')
const readWorkload = (name: string): Properties =>
  parseProperties(readFileSync(path.join(WORKLOADS_DIR, name), 'utf8'), name)

function opShares(w: CoreWorkload, draws: number): Record<string, number> {
  const c: Record<string, number> = {}
  for (let i = 0; i < draws; i++) {
    const tx = w.nextTransaction()
    c[tx.op] = (c[tx.op] ?? 0) + 1
    if (tx.op === 'INSERT') w.acknowledgeInsert(tx.keynum)
  }
  for (const k of Object.keys(c)) c[k] = (c[k] ?? 0) / draws
  return c
}

/** Asserts fn throws BS_ERR_WORKLOAD and that its message matches every pattern. */
function assertWorkloadError(fn: () => unknown, ...patterns: RegExp[]): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(isBenchstreamError(err, 'BS_ERR_WORKLOAD'), `expected BS_ERR_WORKLOAD, got ${String(err)}`)
    for (const p of patterns) assert.match(err.message, p)
    return true
  })
}

function loadAll(w: CoreWorkload): Array<Extract<Transaction, { op: 'INSERT' }>> {
  const out: Array<Extract<Transaction, { op: 'INSERT' }>> = []
  for (let tx = w.nextLoad(); tx !== undefined; tx = w.nextLoad()) {
    assert.equal(tx.op, 'INSERT')
    if (tx.op === 'INSERT') out.push(tx)
  }
  return out
}

function keyOf(tx: Transaction): string {
  return tx.op === 'SCAN' ? tx.startKey : tx.key
}

test('every file in workloads/ parses and builds a CoreWorkload that loads and runs', () => {
  const files = readdirSync(WORKLOADS_DIR).filter((f) => !f.startsWith('.'))
  for (const letter of 'abcdef') assert.ok(files.includes(`workload${letter}`), `workload${letter} exists`)
  for (const f of files) {
    const props = readWorkload(f)
    assert.equal(props['workload'], 'site.ycsb.workloads.CoreWorkload', f)
    assert.equal(props['readallfields'], 'true', f)
    const w = CoreWorkload.fromProperties(props, { seed: 1 })
    assert.equal(w.loadCount, 1000, f)
    assert.equal(w.operationCount, 1000, f)
    assert.equal(loadAll(w).length, 1000, f)
    for (let i = 0; i < 1000; i++) {
      const tx = w.nextTransaction()
      if (tx.op === 'INSERT') w.acknowledgeInsert(tx.keynum)
    }
  }
})

test('operation mix of workloads A, B, D, E, F is within 1.5 points of their proportions over 100k draws', () => {
  const expected: Record<string, Partial<Record<Operation, number>>> = {
    workloada: { READ: 0.5, UPDATE: 0.5 },
    workloadb: { READ: 0.95, UPDATE: 0.05 },
    workloadd: { READ: 0.95, INSERT: 0.05 },
    workloade: { SCAN: 0.95, INSERT: 0.05 },
    workloadf: { READ: 0.5, 'READ-MODIFY-WRITE': 0.5 },
  }
  for (const [name, mix] of Object.entries(expected)) {
    const shares = opShares(CoreWorkload.fromProperties(readWorkload(name), { seed: 2 }), 100_000)
    assert.deepEqual(Object.keys(shares).sort(), Object.keys(mix).sort(), `${name}: operations present`)
    for (const [op, p] of Object.entries(mix)) {
      assert.ok(Math.abs((shares[op] ?? 0) - p) < 0.015, `${name} ${op}: ${shares[op]} vs ${p}`)
    }
  }
  const withDeletes = CoreWorkload.fromProperties(
    { recordcount: '100', readproportion: '0.7', deleteproportion: '0.3', updateproportion: '0' },
    { seed: 3 },
  )
  const shares = opShares(withDeletes, 100_000)
  assert.ok(Math.abs((shares['DELETE'] ?? 0) - 0.3) < 0.015)
})

test('invalid proportions are rejected with their sum and the rule', () => {
  assertWorkloadError(
    () => CoreWorkload.fromProperties({ recordcount: '10', readproportion: '0.95', updateproportion: '0.25' }),
    /add up to 1/,
    /readproportion=0\.95/,
    /updateproportion=0\.25/,
    /= 1\.2\b/,
  )
  assertWorkloadError(
    () => CoreWorkload.fromProperties({ recordcount: '10', readproportion: '1.5', updateproportion: '-0.5' }),
    /readproportion must be a number in \[0, 1\]/,
  )
  assertWorkloadError(
    () => CoreWorkload.fromProperties({ recordcount: '10', readproportion: 'lots' }),
    /readproportion/,
  )
  // A tiny rounding error is fine.
  CoreWorkload.fromProperties({
    recordcount: '10',
    readproportion: '0.1',
    updateproportion: '0.2',
    insertproportion: '0.7000000000001',
  })
})

test('negative, non-integer or missing counts are rejected naming the property and its range', () => {
  assertWorkloadError(
    () => CoreWorkload.fromProperties({ recordcount: '-5' }),
    /recordcount must be an integer in \[1, /,
    /'-5'/,
  )
  assertWorkloadError(() => CoreWorkload.fromProperties({ recordcount: '10.5' }), /recordcount must be an integer/)
  assertWorkloadError(() => CoreWorkload.fromProperties({}), /recordcount must be an integer in \[1, /, /'0'/)
  assertWorkloadError(
    () => CoreWorkload.fromProperties({ recordcount: '10', operationcount: '-1' }),
    /operationcount must be an integer in \[0, /,
  )
  assertWorkloadError(
    () => CoreWorkload.fromProperties({ recordcount: '10', fieldcount: '0' }),
    /fieldcount must be an integer in \[1, /,
  )
  assertWorkloadError(
    () => CoreWorkload.fromProperties({ recordcount: '10', insertstart: '10' }),
    /insertstart must be an integer in \[0, 9\]/,
  )
  assertWorkloadError(
    () => CoreWorkload.fromProperties({ recordcount: '1000', insertstart: '500', insertcount: '600' }),
    /insertstart \(500\) \+ insertcount \(600\) = 1100 must not exceed recordcount \(1000\)/,
  )
  assertWorkloadError(
    () => CoreWorkload.fromProperties({ recordcount: '10', readallfields: 'yes' }),
    /readallfields must be true or false/,
  )
  assertWorkloadError(
    () => CoreWorkload.fromProperties({ recordcount: '10', zipfianconstant: '1' }),
    /zipfianconstant must be a number in \(0, 1\)/,
  )
})

test('unknown distribution names are rejected listing the valid ones', () => {
  assertWorkloadError(
    () => CoreWorkload.fromProperties({ recordcount: '10', requestdistribution: 'gaussian' }),
    /requestdistribution must be one of uniform, zipfian, latest, hotspot, sequential, exponential; got 'gaussian'/,
  )
  assertWorkloadError(
    () => CoreWorkload.fromProperties({ recordcount: '10', fieldlengthdistribution: 'histogram' }),
    /fieldlengthdistribution must be one of constant, uniform, zipfian/,
  )
  assertWorkloadError(
    () => CoreWorkload.fromProperties({ recordcount: '10', scanlengthdistribution: 'latest' }),
    /scanlengthdistribution must be one of uniform, zipfian/,
  )
  assertWorkloadError(
    () => CoreWorkload.fromProperties({ recordcount: '10', insertorder: 'random' }),
    /insertorder must be one of hashed, ordered/,
  )
})

test('every property in CORE_WORKLOAD_PROPERTIES is read: a nonsense value is rejected by name', () => {
  const freeText = new Set(['workload', 'table', 'fieldnameprefix', 'keyprefix'])
  for (const name of CORE_WORKLOAD_PROPERTIES) {
    if (freeText.has(name)) continue
    const props: Properties = { recordcount: '10', [name]: 'not-a-value' }
    if (name === 'recordcount') props['recordcount'] = 'not-a-value'
    assertWorkloadError(() => CoreWorkload.fromProperties(props), new RegExp(name.replace('.', '\\.')))
  }
})

test(
  'load phase of one client: insertstart=500 insertcount=250 gives ' + 'key numbers 500..749, distinct hashed keys',
  () => {
    const w = CoreWorkload.fromProperties({ recordcount: '1000', insertstart: '500', insertcount: '250' }, { seed: 4 })
    assert.equal(w.loadCount, 250)
    const txs = loadAll(w)
    assert.deepEqual(
      txs.map((t) => t.keynum),
      Array.from({ length: 250 }, (_, i) => 500 + i),
    )
    assert.equal(w.nextLoad(), undefined, 'stays done')
    const keys = txs.map((t) => t.key)
    assert.equal(new Set(keys).size, 250)
    for (const t of txs) {
      assert.equal(t.key, 'user' + fnvhash64(t.keynum), 'YCSB key name: user + fnvhash64(keynum)')
      assert.equal(t.table, 'usertable')
      assert.deepEqual(
        Object.keys(t.values),
        Array.from({ length: 10 }, (_, i) => `field${i}`),
      )
      for (const v of Object.values(t.values)) assert.equal(v.length, 100)
    }
    // Loading the load phase again on a fresh workload gives the same keys (key names do not depend on the seed).
    const again = loadAll(
      CoreWorkload.fromProperties({ recordcount: '1000', insertstart: '500', insertcount: '250' }, { seed: 99 }),
    )
    assert.deepEqual(
      again.map((t) => t.key),
      keys,
    )
  },
)

test('key names: ordered insertorder, zero padding and key prefix', () => {
  const ordered = CoreWorkload.fromProperties({
    recordcount: '20',
    insertorder: 'ordered',
    zeropadding: '5',
    keyprefix: 'k',
  })
  assert.deepEqual(
    loadAll(ordered)
      .slice(0, 3)
      .map((t) => t.key),
    ['k00000', 'k00001', 'k00002'],
  )
  const hashed = CoreWorkload.fromProperties({ recordcount: '20', zeropadding: '25' })
  assert.equal(hashed.buildKeyName(0), 'user000000' + '6284781860667377211')
})

test('keys chosen by the run phase are always among the loaded keys, for every request distribution', () => {
  for (const dist of REQUEST_DISTRIBUTIONS) {
    const props = {
      recordcount: '1000',
      operationcount: '10000',
      requestdistribution: dist,
      readproportion: '0.4',
      updateproportion: '0.2',
      scanproportion: '0.2',
      readmodifywriteproportion: '0.2',
    }
    const w = CoreWorkload.fromProperties(props, { seed: 5 })
    const loaded = new Set(loadAll(w).map((t) => t.key))
    assert.equal(loaded.size, 1000)
    const seen = new Set<string>()
    for (let i = 0; i < 20_000; i++) {
      const k = keyOf(w.nextTransaction())
      assert.ok(loaded.has(k), `${dist}: ${k} was never loaded`)
      seen.add(k)
    }
    assert.ok(seen.size > 50, `${dist}: picks more than a handful of keys (${seen.size})`)
  }
  // One client's share: uniform and zipfian stay inside [insertstart, insertstart + insertcount).
  for (const dist of ['uniform', 'zipfian', 'hotspot', 'sequential']) {
    const w = CoreWorkload.fromProperties(
      {
        recordcount: '1000',
        insertstart: '500',
        insertcount: '250',
        requestdistribution: dist,
        readproportion: '1',
        updateproportion: '0',
      },
      { seed: 6 },
    )
    const loaded = new Set(loadAll(w).map((t) => t.key))
    for (let i = 0; i < 10_000; i++) assert.ok(loaded.has(keyOf(w.nextTransaction())), dist)
  }
})

test('run-phase inserts continue at recordcount; only acknowledged inserts are read (latest and zipfian)', () => {
  for (const dist of ['latest', 'zipfian']) {
    const w = CoreWorkload.fromProperties(
      {
        recordcount: '100',
        operationcount: '2000',
        requestdistribution: dist,
        readproportion: '0.5',
        updateproportion: '0',
        insertproportion: '0.5',
      },
      { seed: 7 },
    )
    const known = new Set(loadAll(w).map((t) => t.key))
    const pending: Array<{ key: string; keynum: number }> = []
    const insertNums: number[] = []
    let readNew = 0
    for (let i = 0; i < 2000; i++) {
      const tx = w.nextTransaction()
      if (tx.op === 'INSERT') {
        insertNums.push(tx.keynum)
        assert.equal(tx.key, w.buildKeyName(tx.keynum))
        pending.push({ key: tx.key, keynum: tx.keynum })
        // Acknowledge with a lag of a few inserts, out of order.
        if (pending.length > 3) {
          const done = pending.splice(pending.length % 2, 1)[0]!
          w.acknowledgeInsert(done.keynum)
          known.add(done.key)
        }
      } else {
        assert.ok(known.has(keyOf(tx)), `${dist}: read of a key not yet acknowledged`)
        if (!loadedRange(tx, w)) readNew++
      }
    }
    assert.deepEqual(
      insertNums,
      Array.from({ length: insertNums.length }, (_, i) => 100 + i),
    )
    assert.ok(readNew > 0, `${dist}: inserted keys become readable`)
  }
  function loadedRange(tx: Transaction, w: CoreWorkload): boolean {
    const k = keyOf(tx)
    for (let i = 0; i < 100; i++) if (w.buildKeyName(i) === k) return true
    return false
  }
})

test('latest: most reads go to the newest keys', () => {
  const w = CoreWorkload.fromProperties(
    {
      recordcount: '1000',
      requestdistribution: 'latest',
      readproportion: '1',
      updateproportion: '0',
      insertorder: 'ordered',
    },
    { seed: 8 },
  )
  let newest = 0
  const draws = 50_000
  for (let i = 0; i < draws; i++) {
    const tx = w.nextTransaction()
    if (tx.op === 'READ' && Number(tx.key.slice(4)) >= 900) newest++
  }
  assert.ok(newest / draws > 0.6, `share of reads among the newest 10% of keys: ${newest / draws}`)
})

test('fields: readallfields, writeallfields, readallfieldsbyname, field lengths and characters', () => {
  const base = {
    recordcount: '100',
    fieldcount: '4',
    fieldnameprefix: 'f',
    readproportion: '0.25',
    updateproportion: '0.25',
    scanproportion: '0.25',
    readmodifywriteproportion: '0.25',
  }
  const one = CoreWorkload.fromProperties(
    {
      ...base,
      readallfields: 'false',
      writeallfields: 'false',
      fieldlengthdistribution: 'uniform',
      minfieldlength: '5',
      fieldlength: '20',
      maxscanlength: '7',
    },
    { seed: 9 },
  )
  const lengths = new Set<number>()
  for (let i = 0; i < 5000; i++) {
    const tx = one.nextTransaction()
    if (tx.op === 'READ' || tx.op === 'SCAN' || tx.op === 'READ-MODIFY-WRITE') {
      assert.equal(tx.fields?.length, 1)
      assert.match(tx.fields[0]!, /^f[0-3]$/)
    }
    if (tx.op === 'SCAN') assert.ok(tx.count >= 1 && tx.count <= 7)
    if (tx.op === 'UPDATE' || tx.op === 'READ-MODIFY-WRITE') {
      const entries = Object.entries(tx.values)
      assert.equal(entries.length, 1)
      for (const [name, v] of entries) {
        assert.match(name, /^f[0-3]$/)
        assert.match(v, /^[A-Za-z0-9_-]+$/)
        lengths.add(v.length)
      }
    }
  }
  assert.ok(Math.min(...lengths) >= 5 && Math.max(...lengths) <= 20 && lengths.size > 10)

  const all = CoreWorkload.fromProperties({ ...base, writeallfields: 'true' }, { seed: 9 })
  for (let i = 0; i < 1000; i++) {
    const tx = all.nextTransaction()
    if (tx.op === 'READ' || tx.op === 'SCAN') assert.equal(tx.fields, undefined)
    if (tx.op === 'UPDATE') assert.deepEqual(Object.keys(tx.values), ['f0', 'f1', 'f2', 'f3'])
  }
  const byName = CoreWorkload.fromProperties({ ...base, readallfieldsbyname: 'true' }, { seed: 9 })
  for (let i = 0; i < 100; i++) {
    const tx = byName.nextTransaction()
    if (tx.op === 'READ') assert.deepEqual(tx.fields, ['f0', 'f1', 'f2', 'f3'])
  }
  const zipfLengths = CoreWorkload.fromProperties(
    { recordcount: '10', fieldlengthdistribution: 'zipfian', fieldlength: '50' },
    { seed: 1 },
  )
  for (const tx of loadAll(zipfLengths)) {
    for (const v of Object.values(tx.values)) assert.ok(v.length >= 1 && v.length <= 50)
  }
})

test('the same seed and properties give the same transactions', () => {
  const props = mergeProperties(
    [readFileSync(path.join(WORKLOADS_DIR, 'workloada'), 'utf8')],
    [['recordcount', '5000']],
  )
  const a = CoreWorkload.fromProperties(props, { seed: 123 })
  const b = CoreWorkload.fromProperties(props, { seed: 123 })
  const c = CoreWorkload.fromProperties(props, { seed: 124 })
  const run = (w: CoreWorkload): Transaction[] => Array.from({ length: 200 }, () => w.nextTransaction())
  const ra = run(a)
  assert.deepEqual(ra, run(b))
  assert.notDeepEqual(ra, run(c))
})

test('maxexecutiontime, operationcount and table are exposed to the driver', () => {
  const w = CoreWorkload.fromProperties({
    recordcount: '10',
    operationcount: '77',
    maxexecutiontime: '30',
    table: 'bench',
  })
  assert.equal(w.operationCount, 77)
  assert.equal(w.maxExecutionTimeS, 30)
  assert.equal(w.table, 'bench')
  assert.equal(w.nextLoad()?.table, 'bench')
  assert.ok(Object.isFrozen(w.config))
})

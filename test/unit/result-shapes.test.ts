/**
 * The shapes that turn the engine's streamed output into the asked format
 * (services/adapters/clickhouse/{text-formats,arrow-ipc,row-binary}.ts),
 * fed what chDB really writes: a result of several blocks, each block
 * formatted as a result of its own (headers again, no commas between Values).
 * Streamed through a shape, block by block or cut into pieces anywhere, the
 * output is byte for byte what the engine writes for the whole result in one
 * go; cut at k rows it is what it writes for LIMIT k; and each shape says
 * why it stopped.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { Session } from 'chdb'
import { ArrowShape } from '../../services/adapters/clickhouse/arrow-ipc.js'
import {
  NO_CAPS,
  type EngineChunk,
  type ResultShape,
  type ShapeCaps,
} from '../../services/adapters/clickhouse/result-shape.js'
import { RowBinaryShape } from '../../services/adapters/clickhouse/row-binary.js'
import { textShape } from '../../services/adapters/clickhouse/text-formats.js'

/** Several blocks (max_block_size 1,000), values with quotes, tabs, new lines and multi-byte text. */
const QUERY =
  "SELECT number, concat('a\"b', toString(number), if(number % 7 = 0, '\\nnew line', ''), '\\tтаб') AS s, " +
  'toDecimal64(number / 3, 2) AS d FROM numbers(2500) SETTINGS max_block_size = 1000'

const session = new Session()
test.after(() => session.close())

/** chDB's streamed chunks for a format: one block's whole result each, with its row count. */
async function chunks(format: string, sql = QUERY): Promise<EngineChunk[]> {
  const out: EngineChunk[] = []
  for await (const c of session.queryStream(sql, { format })) out.push({ data: Buffer.from(c.raw()), rows: c.numRows })
  return out
}

/** The engine's whole result in one go. */
async function whole(format: string, sql = QUERY): Promise<Buffer> {
  return Buffer.from((await session.queryAsync(sql, { format })).bytes())
}

function run(shape: ResultShape, input: EngineChunk[]): Buffer {
  const out: Buffer[] = []
  for (const c of input) {
    out.push(...shape.push(c))
    if (shape.stoppedBy !== undefined) break
  }
  out.push(...shape.end())
  return Buffer.concat(out)
}

/** The same bytes as one stream cut into pieces of n bytes, row counts unknown (a server's HTTP body). */
function pieces(input: EngineChunk[], n: number, sameHeaders: (c: EngineChunk, i: number) => Buffer): EngineChunk[] {
  const all = Buffer.concat(input.map(sameHeaders))
  const out: EngineChunk[] = []
  for (let i = 0; i < all.length; i += n) out.push({ data: all.subarray(i, i + n), rows: undefined })
  return out
}

const text = (format: string, caps: ShapeCaps = NO_CAPS): ResultShape => textShape(format, caps, true, () => 1).shape
const stream = (format: string, caps: ShapeCaps = NO_CAPS): ResultShape => textShape(format, caps, false, () => 1).shape

test('line and CSV formats: blocks with headers again stream as the whole result, cut at exactly k rows', async () => {
  for (const format of [
    'TSV',
    'TSVWithNamesAndTypes',
    'CSV',
    'CSVWithNames',
    'JSONEachRow',
    'JSONCompactEachRowWithNames',
  ]) {
    const input = await chunks(format)
    assert.ok(input.length >= 3, `${format}: ${input.length} blocks`)
    const want = await whole(format)
    const shape = text(format)
    assert.ok(run(shape, input).equals(want), `${format}: streamed block by block`)
    assert.equal(shape.rows, 2500, format)
    assert.equal(shape.stoppedBy, undefined, format)
    // The first block's header and the rows of every block, as one stream cut anywhere (a server).
    const header = (await whole(format, `${QUERY.replace('numbers(2500)', 'numbers(0)')}`)).length
    for (const n of [1, 333, 65536]) {
      const s = stream(format)
      const got = run(
        s,
        pieces(input, n, (c, i) => (i === 0 ? c.data : c.data.subarray(header))),
      )
      assert.ok(got.equals(want), `${format} in pieces of ${n}`)
    }
    for (const k of [0, 1, 999, 1000, 1001, 2499]) {
      const cut = text(format, { maxRows: k, maxBytes: Infinity })
      const got = run(cut, input)
      assert.ok(
        got.equals(await whole(format, QUERY.replace('SETTINGS', `LIMIT ${k} SETTINGS`))),
        `${format} cut at ${k}`,
      )
      assert.equal(cut.rows, k)
      assert.equal(cut.stoppedBy, 'rows', `${format} at ${k}: there was more`)
    }
    // A cap at the result's own size stops nothing.
    const exact = text(format, { maxRows: 2500, maxBytes: want.length })
    assert.ok(run(exact, input).equals(want))
    assert.equal(exact.stoppedBy, undefined)
    // One byte less: the last row does not fit.
    const bytes = text(format, { maxRows: Infinity, maxBytes: want.length - 1 })
    run(bytes, input)
    assert.equal(bytes.stoppedBy, 'bytes')
    assert.equal(bytes.rows, 2499)
  }
})

test('JSON documents: written as the rows come, the same data, meta and row count as the engine writes', async () => {
  for (const [format, source] of [
    ['JSON', 'JSONCompactEachRowWithNamesAndTypes'],
    ['JSONCompact', 'JSONCompactEachRowWithNamesAndTypes'],
    ['JSONStrings', 'JSONCompactStringsEachRowWithNamesAndTypes'],
  ] as const) {
    const { source: asked, shape } = textShape(format, NO_CAPS, true, () => 1)
    assert.equal(asked, source)
    const doc = JSON.parse(run(shape, await chunks(source)).toString()) as Record<string, unknown>
    const want = JSON.parse((await whole(format)).toString()) as Record<string, unknown>
    assert.deepEqual(doc.meta, want.meta, format)
    assert.deepEqual(doc.data, want.data, format)
    assert.equal(doc.rows, 2500)
    const cut = textShape(format, { maxRows: 10, maxBytes: Infinity }, true, () => 1).shape
    const short = JSON.parse(run(cut, await chunks(source)).toString()) as { data: unknown[]; rows: number }
    assert.deepEqual(short.data, (want.data as unknown[]).slice(0, 10))
    assert.equal(short.rows, 10)
  }
})

test('Values: the commas chDB leaves out between blocks are put back', async () => {
  const shape = text('Values')
  assert.ok(run(shape, await chunks('Values')).equals(await whole('Values')))
  assert.equal(shape.rows, 2500)
  // Formats for people stop before a block that would pass the row cap (the guard cuts them with a LIMIT).
  const capped = text('PrettyCompact', { maxRows: 1500, maxBytes: Infinity })
  run(capped, await chunks('PrettyCompact'))
  assert.equal(capped.stoppedBy, 'rows')
  assert.equal(capped.rows, 1000)
})

test('RowBinary: blocks counted by the engine pass without a walk; cut at k rows walks to exactly k', async () => {
  const input = await chunks('RowBinaryWithNamesAndTypes')
  for (const format of ['RowBinary', 'RowBinaryWithNames', 'RowBinaryWithNamesAndTypes'] as const) {
    const want = await whole(format)
    assert.ok(run(new RowBinaryShape(format, NO_CAPS, true), input).equals(want), format)
    for (const k of [1, 1000, 1999]) {
      const cut = new RowBinaryShape(format, { maxRows: k, maxBytes: Infinity }, true)
      assert.ok(
        run(cut, input).equals(await whole(format, QUERY.replace('SETTINGS', `LIMIT ${k} SETTINGS`))),
        `${format} at ${k}`,
      )
      assert.equal(cut.stoppedBy, 'rows')
    }
  }
})

test('Arrow: one schema, the batches as they come, the end marker (and the footer) at the end', async () => {
  const input = await chunks('ArrowStream')
  const streamed = run(new ArrowShape('ArrowStream', NO_CAPS), input)
  assert.ok(streamed.equals(await whole('ArrowStream')), 'the engine writes the same stream for the whole result')
  const file = run(new ArrowShape('Arrow', NO_CAPS), input)
  assert.equal(file.subarray(0, 6).toString(), 'ARROW1')
  assert.equal(file.subarray(-6).toString(), 'ARROW1')
  // Read back by the engine's Arrow reader: every row.
  const dir = mkdtempSync(path.join(os.tmpdir(), 'benchstream-arrow-'))
  try {
    writeFileSync(path.join(dir, 'r.arrow'), file)
    const back = await session.queryAsync(
      `SELECT count() AS n, sum(number) AS s FROM file('${path.join(dir, 'r.arrow')}', 'Arrow')`,
      { format: 'JSONEachRow' },
    )
    assert.deepEqual(JSON.parse(back.text()), { n: 2500, s: (2499 * 2500) / 2 })
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  const cut = new ArrowShape('ArrowStream', { maxRows: 1500, maxBytes: Infinity })
  run(cut, input)
  assert.equal(cut.rows, 1000, 'whole batches only')
  assert.equal(cut.stoppedBy, 'rows')
})

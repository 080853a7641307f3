/**
 * How a streamed result goes out (services/api/result-reply.ts), over a real
 * socket with a stand-in result: chunked, each piece encoded and flushed so
 * that it can be read before the body ends; a failure part-way writes
 * ClickHouse 25.11's exception block and then breaks the response (no
 * terminating chunk); a client that goes away cancels the query; a client
 * that stops reading is let go when the query stops on its own.
 */
import assert from 'node:assert/strict'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { test } from 'node:test'
import zlib from 'node:zlib'
import Fastify from 'fastify'
import { sendResult, type ResultReply } from '../../services/api/result-reply.js'
import { exceptionBlock, exceptionTag, ExceptionScanner } from '../../services/core/codec/exception-block.js'
import { BenchstreamError } from '../../services/core/errors.js'
import { bodyEncoder, decodeBody, HTTP_ENCODINGS } from '../../services/core/codec/http-encoding.js'
import { lz4FrameDecompress } from '../../services/core/codec/lz4.js'
import { decompressBlocks } from '../../services/core/codec/compressed-blocks.js'

test("the exception block is ClickHouse 25.11's: markers, tag, message, its length, tag, marker", () => {
  const tag = exceptionTag()
  assert.match(tag, /^[a-z0-9]{16}$/)
  assert.notEqual(exceptionTag(), tag)
  const msg = 'Code: 396. DB::Exception: Limit for result exceeded. (TOO_MANY_ROWS_OR_BYTES)'
  assert.equal(
    exceptionBlock('abc', msg).toString(),
    `\r\n__exception__\r\nabc\r\n${msg}\n${msg.length + 1} abc\r\n__exception__\r\n`,
  )
  // Multi-byte text: the length counts bytes; a huge message is cut to ClickHouse's 16 KiB block.
  const wide = exceptionBlock('t', 'é').toString()
  assert.match(wide, /\né\n3 t\r\n/)
  assert.ok(exceptionBlock('t', 'x'.repeat(100_000)).length <= 16 * 1024)
})

test('the scanner splits a body into the result and the block, however the body is cut', () => {
  const tag = 'abcdefghijklmnop'
  const rows = Buffer.from('1\t__exception__\n2\t\r\n3\n')
  const body = Buffer.concat([rows, exceptionBlock(tag, 'Code: 159. DB::Exception: too slow. (TIMEOUT_EXCEEDED)')])
  for (const n of [1, 2, 7, 40, body.length]) {
    const s = new ExceptionScanner(tag)
    const out: Buffer[] = []
    for (let i = 0; i < body.length; i += n) out.push(s.push(body.subarray(i, i + n)))
    out.push(s.end())
    assert.ok(Buffer.concat(out).equals(rows), `pieces of ${n}`)
    assert.equal(s.failed, true)
    assert.equal(s.message(), 'Code: 159. DB::Exception: too slow. (TIMEOUT_EXCEEDED)')
  }
  // Another tag, or none: all of it is the result.
  const other = new ExceptionScanner('zzzzzzzzzzzzzzzz')
  assert.ok(Buffer.concat([other.push(body), other.end()]).equals(body))
  assert.equal(other.failed, false)
  assert.ok(new ExceptionScanner(undefined).push(body).equals(body))
})

test('each Content-Encoding streams: every piece decodes before the body ends, the whole after', async () => {
  const piecesIn = [Buffer.from('first piece\n'), Buffer.alloc(300_000, 'y'), Buffer.from('last\n')]
  for (const encoding of HTTP_ENCODINGS) {
    const enc = bodyEncoder(encoding)
    const out: Buffer[] = []
    for (const p of piecesIn) out.push(await enc.push(p))
    const open = Buffer.concat(out)
    if (encoding === 'gzip' || encoding === 'deflate' || encoding === 'br') {
      // Without the end: what a client reads from a body that breaks off after the last piece.
      const inflate =
        encoding === 'gzip'
          ? zlib.createGunzip()
          : encoding === 'deflate'
            ? zlib.createInflate()
            : zlib.createBrotliDecompress()
      const got: Buffer[] = []
      inflate.on('data', (c: Buffer) => got.push(c))
      inflate.write(open)
      await new Promise<void>((resolve) => inflate.flush(() => resolve()))
      assert.ok(Buffer.concat(got).equals(Buffer.concat(piecesIn)), `${encoding}: readable before the end`)
    }
    const all = Buffer.concat([open, await enc.end()])
    const back = encoding === 'lz4' ? lz4FrameDecompress(all, 1 << 30) : zstdOrDecode(encoding, all)
    if (back !== undefined) assert.ok(back.equals(Buffer.concat(piecesIn)), encoding)
  }
  // No piece at all: still a valid (empty) body.
  assert.equal(lz4FrameDecompress(await bodyEncoder('lz4').end(), 10).length, 0)
})

/** decodeBody, or (zstd where node:zlib cannot read it) a check of the stored frame's blocks. */
function zstdOrDecode(encoding: string, all: Buffer): Buffer | undefined {
  try {
    return decodeBody(encoding, all, 1 << 30)
  } catch (err) {
    if (encoding !== 'zstd') throw err
    // Raw blocks after the 6-byte header: 3-byte headers (size << 3 | last), then the bytes.
    const parts: Buffer[] = []
    let at = 6
    for (;;) {
      const h = all[at]! | (all[at + 1]! << 8) | (all[at + 2]! << 16)
      const size = h >> 3
      parts.push(all.subarray(at + 3, at + 3 + size))
      at += 3 + size
      if ((h & 1) === 1) break
    }
    assert.equal(at, all.length)
    return Buffer.concat(parts)
  }
}

interface Served {
  base: string
  close: () => Promise<void>
  cancelled: () => number
}

/** A server answering every GET with sendResult over `pieces` (an Error fails the body there). */
async function serve(pieces: Array<string | Error>, extra: Partial<ResultReply> = {}): Promise<Served> {
  let cancelled = 0
  const app = Fastify()
  const tag = 'abcdefghijklmnop'
  app.get('/', async (_req, reply) => {
    async function* body(): AsyncGenerator<Buffer> {
      for (const p of pieces) {
        if (p instanceof Error) throw p
        yield Buffer.from(p)
      }
    }
    await sendResult(reply, {
      headers: { 'content-type': 'text/plain', 'x-clickhouse-exception-tag': tag },
      body: body(),
      blocks: false,
      encoding: undefined,
      failure: (err) => exceptionBlock(tag, `Code: 1. DB::Exception: ${(err as Error).message}. (X)`),
      cancel: () => cancelled++,
      ...extra,
    })
    return reply
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  return {
    base: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
    close: () => app.close(),
    cancelled: () => cancelled,
  }
}

function get(url: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; body: Buffer; complete: boolean; trailers: NodeJS.Dict<string> }>(
    (resolve, reject) => {
      http
        .get(url, { headers }, (res) => {
          const parts: Buffer[] = []
          res.on('data', (c: Buffer) => parts.push(c))
          res.on('error', () => undefined)
          res.on('close', () =>
            resolve({
              status: res.statusCode ?? 0,
              body: Buffer.concat(parts),
              complete: res.complete,
              trailers: res.trailers,
            }),
          )
        })
        .on('error', reject)
    },
  )
}

test('a body that ends is complete, with its trailers; one that fails ends in the block and breaks off', async (t) => {
  const ok = await serve(['a\n', 'b\n'], {
    trailers: { names: ['x-benchstream-rows'], values: () => ({ 'x-benchstream-rows': '2' }) },
  })
  t.after(ok.close)
  const whole = await get(ok.base)
  assert.equal(whole.body.toString(), 'a\nb\n')
  assert.equal(whole.complete, true)
  assert.equal(whole.trailers['x-benchstream-rows'], '2')
  const bad = await serve(['a\n', 'b\n', new BenchstreamError('BS_ERR_RESULT_LIMIT', 'too many rows')])
  t.after(bad.close)
  const broken = await get(bad.base)
  assert.equal(broken.status, 200)
  assert.equal(broken.complete, false, 'no terminating chunk')
  assert.equal(
    broken.body.toString(),
    `a\nb\n${exceptionBlock('abcdefghijklmnop', 'Code: 1. DB::Exception: too many rows. (X)').toString()}`,
  )
  // Through ClickHouse's compressed blocks and gzip, the block is readable all the same.
  const packed = await serve(['a\n', new Error('boom')], { blocks: true, encoding: 'gzip' })
  t.after(packed.close)
  const raw = await get(packed.base, { 'accept-encoding': 'gzip' })
  assert.equal(raw.complete, false)
  const inflated = zlib.gunzipSync(raw.body, { finishFlush: zlib.constants.Z_SYNC_FLUSH })
  assert.match(
    decompressBlocks(inflated, 1 << 20).toString(),
    /^a\n\r\n__exception__\r\nabcdefghijklmnop\r\nCode: 1\. DB::Exception: boom\. \(X\)\n/,
  )
})

test('a client that goes away cancels the query; one that stops reading is let go when the query stops', async (t) => {
  // Endless pieces: only a cancel ends them.
  const stopped = new AbortController()
  let served = 0
  // Closing the app must not wait for the client below that never reads.
  const app = Fastify({ forceCloseConnections: true })
  let cancels = 0
  let responseClosed: () => void = () => undefined
  app.get('/', async (_req, reply) => {
    reply.raw.once('close', () => responseClosed())
    async function* body(): AsyncGenerator<Buffer> {
      for (;;) {
        served++
        if (stopped.signal.aborted) throw new Error('time is up')
        yield Buffer.alloc(64 * 1024, 'z')
        await new Promise((r) => setImmediate(r))
      }
    }
    await sendResult(reply, {
      headers: {},
      body: body(),
      blocks: false,
      encoding: undefined,
      failure: () => Buffer.from('x'),
      cancel: () => cancels++,
      stopped: stopped.signal,
    })
    return reply
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.after(() => app.close())
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/`
  // Reads a little, then goes away.
  await new Promise<void>((resolve) => {
    const req = http.get(url, (res) => {
      res.once('data', () => {
        req.destroy()
        resolve()
      })
    })
  })
  for (let i = 0; i < 100 && cancels === 0; i++) await new Promise((r) => setTimeout(r, 20))
  assert.equal(cancels, 1)
  // Never reads: the server writes until the socket is full, then waits, holding a few pieces, not the result.
  served = 0
  const res = await new Promise<http.IncomingMessage>((resolve) => http.get(url, resolve))
  t.after(() => res.destroy())
  res.pause()
  // The socket's buffers fill (the kernel may grow them for a while), then nothing more is taken.
  let last = -1
  for (let i = 0; i < 40 && served !== last; i++) {
    last = served
    await new Promise((r) => setTimeout(r, 250))
  }
  assert.equal(served, last, 'backpressure: nothing more is taken while the client does not read')
  assert.ok(served < 200, `${served} pieces of 64 KiB taken`)
  // The query stops on its own (its time limit): the waiting writer is let go and the response broken off (its
  // failure text cannot reach a client that does not read: after a grace period).
  const closed = new Promise<void>((resolve) => (responseClosed = resolve))
  stopped.abort()
  await closed
  res.destroy()
})

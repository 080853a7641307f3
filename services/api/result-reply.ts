/**
 * Sends a streamed ad hoc result over HTTP (POST /api/v1/query and
 * /clickhouse): chunked, with backpressure (the next chunk is taken from the
 * engine only once the socket took the last, so the server holds a chunk or
 * two per query, whatever the result's size), encoded on the way
 * (ClickHouse's compressed blocks for compress=1, then the Content-Encoding,
 * each piece flushed).
 *
 * A failure after the status went out cannot be missed, the way ClickHouse
 * 25.11+ does it: every response carries a random tag in a header
 * (X-ClickHouse-Exception-Tag; X-Benchstream-Exception-Tag on the JSON API),
 * and a failure writes, through the same encoders, ClickHouse's exception
 * block (services/core/codec/exception-block.ts), which clickhouse-connect
 * and @clickhouse/client recognise and raise as the server's error; then the
 * connection is closed without the terminating chunk, so that every HTTP
 * client (JDBC, curl, fetch) fails the read too, whatever it makes of the
 * text.
 */
import type { ServerResponse } from 'node:http'
import type { FastifyReply } from 'fastify'
import { compressBlocks } from '../core/codec/compressed-blocks.js'
import { bodyEncoder, type HttpEncoding } from '../core/codec/http-encoding.js'

/** How long a failure's text may take to reach a client before the connection is closed anyway. */
const FAILURE_GRACE_MS = 5000

export interface ResultReply {
  status?: number
  headers: Record<string, string>
  /** The body's pieces in order (a document's head, the result's chunks, its tail). */
  body: AsyncIterable<Uint8Array>
  /** ClickHouse's compressed blocks (compress=1), inside the Content-Encoding. */
  blocks: boolean
  encoding: HttpEncoding | undefined
  /** The text written when the body fails part-way, before the connection is broken. */
  failure(err: unknown): Buffer
  /** The client went away before the end: stop the query. */
  cancel(): void
  /** Names and values of HTTP trailers sent after the last piece. */
  trailers?: { names: readonly string[]; values: () => Record<string, string> }
  /** Aborted when the query stopped on its own (a time-out): stop waiting for a client that does not read. */
  stopped?: AbortSignal
}

/** Sends a streamed result (the reply is taken over from fastify: it writes the response itself). */
export async function sendResult(reply: FastifyReply, r: ResultReply): Promise<void> {
  reply.hijack()
  const res = reply.raw
  const headers: Record<string, string | number | string[]> = {}
  for (const [k, v] of Object.entries(reply.getHeaders())) if (v !== undefined) headers[k] = v
  Object.assign(headers, r.headers)
  if (r.encoding !== undefined) headers['content-encoding'] = r.encoding
  if (r.trailers !== undefined) headers.trailer = r.trailers.names.join(', ')
  let gone = false
  const onClose = (): void => {
    if (res.writableFinished) return
    gone = true
    r.cancel()
  }
  res.on('close', onClose)
  const encoder = r.encoding === undefined ? undefined : bodyEncoder(r.encoding)
  const encode = async (piece: Buffer): Promise<Buffer> => {
    const framed = r.blocks ? compressBlocks(piece) : piece
    return encoder === undefined ? framed : encoder.push(framed)
  }
  try {
    res.writeHead(r.status ?? 200, headers)
    for await (const piece of r.body) {
      if (gone) return
      const out = await encode(Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength))
      if (out.length > 0 && !res.write(out)) await drained(res, r.stopped)
      if (gone) return
    }
    if (encoder !== undefined) {
      const tail = await encoder.end()
      if (tail.length > 0) res.write(tail)
    }
    if (r.trailers !== undefined) res.addTrailers(r.trailers.values())
    res.end()
  } catch (err) {
    if (gone) return
    let text: Buffer
    try {
      text = await encode(r.failure(err))
    } catch {
      text = Buffer.alloc(0)
    }
    // No end: the terminating chunk never comes, so every client reading the body fails.
    const grace = setTimeout(() => res.destroy(), FAILURE_GRACE_MS)
    grace.unref?.()
    res.write(text, () => {
      clearTimeout(grace)
      res.destroy()
    })
  }
}

/** Resolves when the socket takes more, the client goes away, or the query stopped on its own. */
function drained(res: ServerResponse, stopped: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done)
      res.off('close', done)
      stopped?.removeEventListener('abort', done)
      resolve()
    }
    res.once('drain', done)
    res.once('close', done)
    if (stopped?.aborted === true) return done()
    stopped?.addEventListener('abort', done)
  })
}

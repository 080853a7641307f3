/**
 * POST /api/v1/query: ad hoc SQL for people without a ClickHouse client (in
 * the embedded mode this process owns the data directory, so this is the way
 * in): one read-only SELECT over Benchstream's tables, checked and run by the
 * guard (AdHocQueries), its result streamed (result-reply.ts).
 *
 * Without a format the answer is QueryResult (schemas/sql-api.v1.ts), the rows
 * first and the counts after them; with one (`format`, or the query's FORMAT
 * clause) it is that text, with trailers X-Benchstream-Truncated and
 * X-Benchstream-Rows. Every row comes back unless the request asked for a cut
 * (maxRows); a limit passed fails the answer, before the status (an error
 * answer) or part-way (the body ends in X-Benchstream-Exception-Tag's block
 * holding the error answer's JSON, and the connection breaks).
 */
import type { FastifyInstance } from 'fastify'
import type { ErrorReply } from '../../schemas/api-common.v1.js'
import { QueryResult, SqlBody } from '../../schemas/sql-api.v1.js'
import type { AdHocQueries, AdHocStream } from '../core/ports/ad-hoc-queries.js'
import { errorBody } from './http-guards.js'
import { exceptionBlock, exceptionTag } from '../core/codec/exception-block.js'
import { sendResult } from './result-reply.js'

/** Header naming the exception tag of a streamed answer of this API. */
const EXCEPTION_TAG_HEADER = 'x-benchstream-exception-tag'

export function adHocQueryRoute(app: FastifyInstance, adHoc: AdHocQueries, onError?: (err: unknown) => void): void {
  app.post<{ Body: SqlBody }>(
    '/api/v1/query',
    { schema: { body: SqlBody, response: { 200: QueryResult } } },
    async (req, reply) => {
      const { sql, maxRows, format } = req.body
      const result = await adHoc.stream(sql, {
        ...(maxRows === undefined ? {} : { cut: { rows: maxRows } }),
        ...(format === undefined ? {} : { format }),
      })
      const tag = exceptionTag()
      // No format asked for and none in the query: the rows as a QueryResult document.
      const rows = format === undefined && result.format === 'JSONEachRow'
      await sendResult(reply, {
        headers: {
          'content-type': rows ? 'application/json; charset=utf-8' : 'text/plain; charset=utf-8',
          'x-benchstream-format': result.format,
          [EXCEPTION_TAG_HEADER]: tag,
        },
        body: rows ? document(result) : result,
        blocks: false,
        encoding: undefined,
        failure: (err) => {
          const e: ErrorReply = errorBody(err)
          if (e.statusCode >= 500) onError?.(err)
          return exceptionBlock(tag, JSON.stringify(e))
        },
        cancel: () => result.cancel(),
        stopped: result.stopped,
        trailers: {
          names: ['x-benchstream-truncated', 'x-benchstream-rows'],
          values: () => ({
            'x-benchstream-truncated': String(result.truncated),
            'x-benchstream-rows': String(result.rows),
          }),
        },
      })
      return reply
    },
  )
}

/** The rows (JSONEachRow lines) as a QueryResult document: the rows as they come, the counts at the end. */
async function* document(result: AdHocStream): AsyncGenerator<Buffer> {
  yield Buffer.from('{"rows":[')
  let first = true
  for await (const chunk of result) {
    // Whole lines, each a row: commas between them, and before the first of a chunk after another.
    const lines = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength).toString('utf8').replace(/\n$/, '')
    if (lines === '') continue
    yield Buffer.from((first ? '\n' : ',\n') + lines.replaceAll('\n', ',\n'))
    first = false
  }
  const tail: Omit<QueryResult, 'rows'> = {
    rowCount: result.rows,
    bytes: result.bytes,
    truncated: result.truncated,
    limits: result.limits,
    elapsedMs: Math.round(result.elapsedMs),
  }
  yield Buffer.from(`\n],${JSON.stringify(tail).slice(1)}\n`)
}

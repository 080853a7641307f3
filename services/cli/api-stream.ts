/**
 * A streamed answer of the Benchstream API (POST /api/v1/query) as the CLI
 * reads it: the body piece by piece, without the exception block a failure
 * part-way ends it with (services/api/result-reply.ts), whose error is thrown
 * instead; the trailers (X-Benchstream-Truncated) once the body has ended.
 * node:http rather than fetch, which does not give trailers.
 */
import http from 'node:http'
import https from 'node:https'
import { ExceptionScanner } from '../core/codec/exception-block.js'
import { BenchstreamError } from '../core/errors.js'
import { apiError } from './reader.js'

/** The header naming a streamed answer's exception tag (services/api/ad-hoc-query.ts). */
const TAG_HEADER = 'x-benchstream-exception-tag'

export interface ApiStream {
  /** The body's bytes, without an exception block; throws the API's error when the answer fails part-way. */
  body: AsyncIterable<Buffer>
  /** The trailers, once the body has been read to its end. */
  trailers(): Record<string, string>
}

/** POSTs JSON to the API; an error answer (before any byte) is thrown as the error it stands for. */
export async function postStream(url: string, token: string | undefined, payload: unknown): Promise<ApiStream> {
  const u = new URL(url)
  const data = Buffer.from(JSON.stringify(payload))
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = (u.protocol === 'https:' ? https : http).request(
      u,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': data.length,
          ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
        },
      },
      resolve,
    )
    req.on('error', (err) =>
      reject(
        new BenchstreamError('BS_ERR_TIMEOUT', `the Benchstream API at ${u.origin} did not answer: ${err.message}`, {
          cause: err,
        }),
      ),
    )
    req.end(data)
  })
  if ((res.statusCode ?? 0) >= 300) {
    const chunks: Buffer[] = []
    for await (const c of res) chunks.push(c as Buffer)
    throw apiError(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'))
  }
  const tag = res.headers[TAG_HEADER]
  return {
    body: withoutException(res, typeof tag === 'string' ? tag : undefined, u.origin),
    trailers: () => Object.fromEntries(Object.entries(res.trailers).map(([k, v]) => [k.toLowerCase(), String(v)])),
  }
}

/** The body's bytes up to an exception block, whose error is thrown (exception-block.ts). */
async function* withoutException(
  res: http.IncomingMessage,
  tag: string | undefined,
  origin: string,
): AsyncGenerator<Buffer> {
  const scanner = new ExceptionScanner(tag)
  try {
    for await (const c of res) {
      const data = scanner.push(c as Buffer)
      if (data.length > 0) yield data
    }
  } catch (err) {
    if (scanner.failed) throw fromBlock(scanner.message())
    throw new BenchstreamError(
      'BS_ERR_QUERY_FAILED',
      `the answer of the Benchstream API at ${origin} broke off before its end (${(err as Error).message}); ` +
        `what came before it is not the whole result`,
      { cause: err },
    )
  }
  // The server breaks the connection after a block; a body that ended normally with one is an error all the same.
  if (scanner.failed) throw fromBlock(scanner.message())
  const rest = scanner.end()
  if (rest.length > 0) yield rest
}

/** The API's error answer (JSON) carried by an exception block. */
function fromBlock(text: string): BenchstreamError {
  const err = apiError(500, text)
  // Not JSON (cut short): the text as it came.
  return err.code === 'BS_ERR_BAD_REQUEST' && !text.startsWith('{')
    ? new BenchstreamError('BS_ERR_QUERY_FAILED', `the query failed part-way: ${text.slice(0, 2000)}`)
    : err
}

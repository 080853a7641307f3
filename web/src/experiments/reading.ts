/**
 * Reading the experiment routes: each read is given up after READ_TIMEOUT_MS, so that a stalled request never stops
 * the polling, and an answer that is not 2xx becomes an HttpProblem with the API's code and message.
 */
import type { ErrorReply } from '../../../schemas/api-common.v1.js'

/** A read that takes longer is given up. */
const READ_TIMEOUT_MS = 10_000

/** The server answered, with an error: its code and message, or the HTTP status. */
export class HttpProblem extends Error {}

/** The answer's text (compared with the last one: the page draws only what changed). */
export async function read(url: string): Promise<string> {
  const abort = new AbortController()
  const timer = setTimeout(
    () => abort.abort(new Error('no answer within ' + READ_TIMEOUT_MS / 1000 + ' s')),
    READ_TIMEOUT_MS,
  )
  let res: Response
  let text: string
  try {
    res = await fetch(url, { headers: { accept: 'application/json' }, cache: 'no-store', signal: abort.signal })
    text = await res.text()
  } finally {
    clearTimeout(timer)
  }
  if (res.ok) return text
  let body: Partial<ErrorReply> = {}
  try {
    body = JSON.parse(text) as Partial<ErrorReply>
  } catch {
    // Not our error shape (a proxy's page): the status says enough.
  }
  throw new HttpProblem((body.code || 'HTTP ' + res.status) + ': ' + (body.message || res.statusText))
}

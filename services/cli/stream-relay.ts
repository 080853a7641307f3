/**
 * A relay on 127.0.0.1 between the CLI's own chDB and a streamed answer
 * elsewhere (the API's /clickhouse/, or a ClickHouse server): chDB's url()
 * reads one fixed request through it, which the relay makes with the
 * credentials, CA and URL, none of which enter the SQL. The answer passes
 * through with backpressure (chDB pulls, the relay reads on), and the relay
 * watches it for ClickHouse's exception block (exception-block.ts):
 * a failure part-way is kept, with the server's message, and the connection
 * to chDB is broken so that its read fails too. url() sends a HEAD first,
 * answered here without asking upstream.
 */
import http from 'node:http'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import { ExceptionScanner } from '../core/codec/exception-block.js'

export interface RelayTarget {
  /** The whole upstream URL of the answer. */
  url: string
  headers: Record<string, string>
  /** CA certificates (PEM) for an https:// upstream; undefined: the system's. */
  caPem?: string
}

export interface Relay {
  /** Where chDB reads the answer. */
  readonly url: string
  /** The upstream's failure, when there was one: its status and message (the exception block's, or the body). */
  failure(): string | undefined
  close(): Promise<void>
}

/** The most of an error answer's body kept for the message. */
const MAX_ERROR_BYTES = 16 * 1024

export async function startRelay(target: RelayTarget): Promise<Relay> {
  let failure: string | undefined
  const server = http.createServer((req, res) => {
    if (req.method === 'HEAD') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' })
      res.end()
      return
    }
    const u = new URL(target.url)
    const up = (u.protocol === 'https:' ? https : http).request(
      u,
      { method: 'GET', headers: target.headers, ...(target.caPem === undefined ? {} : { ca: target.caPem }) },
      (answer) => {
        const status = answer.statusCode ?? 0
        if (status >= 300) {
          const parts: Buffer[] = []
          let n = 0
          answer.on('data', (c: Buffer) => {
            if (n < MAX_ERROR_BYTES) parts.push(c)
            n += c.length
          })
          answer.on('end', () => {
            failure = `HTTP ${status}: ${Buffer.concat(parts).toString('utf8').trim().slice(0, MAX_ERROR_BYTES)}`
            res.destroy()
          })
          answer.on('error', () => res.destroy())
          return
        }
        const tag = answer.headers['x-clickhouse-exception-tag']
        const scanner = new ExceptionScanner(typeof tag === 'string' ? tag : undefined)
        res.writeHead(200, { 'content-type': 'application/octet-stream' })
        answer.on('data', (c: Buffer) => {
          const data = scanner.push(c)
          if (data.length > 0 && !res.write(data)) {
            answer.pause()
            res.once('drain', () => answer.resume())
          }
        })
        const broken = (why: string): void => {
          failure = scanner.failed ? scanner.message() : why
          // No end: chDB's read fails rather than taking what came as the whole answer.
          res.destroy()
        }
        answer.on('end', () => {
          if (scanner.failed) return broken('')
          res.end(scanner.end())
        })
        answer.on('aborted', () => broken('the answer broke off before its end'))
        answer.on('error', (err) => broken(`the answer broke off: ${err.message}`))
      },
    )
    up.on('error', (err) => {
      failure = `${new URL(target.url).origin} did not answer: ${err.message}`
      res.destroy()
    })
    // chDB went away (its query failed or was cancelled): stop the upstream query too.
    res.on('close', () => up.destroy())
    up.end()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}/`,
    failure: () => failure,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

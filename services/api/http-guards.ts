/**
 * What every request meets before a route: one error shape for everything
 * the API answers (its own errors and fastify's: validation, content type,
 * body size, unknown routes, oversized headers), validation with TypeBox
 * that never coerces a body, a bearer token where one is configured, and a
 * Host check that stops DNS rebinding on loopback.
 */
import { timingSafeEqual } from 'node:crypto'
import type { Socket } from 'node:net'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { TSchema } from 'typebox'
import { Compile } from 'typebox/compile'
import { Value } from 'typebox/value'
import { BenchstreamError, isBenchstreamError, type ErrorCode } from '../core/errors.js'
import { schemaProblems } from '../core/validation.js'

/** HTTP status of each error code the API answers with. */
export const HTTP_STATUS: Partial<Record<ErrorCode, number>> = {
  BS_ERR_BAD_REQUEST: 400,
  BS_ERR_QUERY_REFUSED: 400,
  BS_ERR_QUERY_FAILED: 400,
  BS_ERR_RESULT_LIMIT: 400,
  BS_ERR_UNAUTHORIZED: 401,
  BS_ERR_FORBIDDEN: 403,
  BS_ERR_NOT_FOUND: 404,
  BS_ERR_NOT_COMPARABLE: 409,
  BS_ERR_TOO_LARGE: 413,
  BS_ERR_NOTHING_TO_COMPARE: 422,
  BS_ERR_BUSY: 429,
  BS_ERR_CLICKHOUSE: 502,
  BS_ERR_LIVE_LIMIT: 503,
}

/** The one shape of every error answer. */
export interface ErrorBody {
  statusCode: number
  code: ErrorCode
  error: string
  message: string
}

function body(statusCode: number, code: ErrorCode, message: string): ErrorBody {
  return { statusCode, code, error: code, message }
}

/** Any error as the API answers it (a streamed answer that fails part-way writes this into the body). */
export function errorBody(err: unknown): ErrorBody {
  if (isBenchstreamError(err)) {
    const status = HTTP_STATUS[err.code] ?? 500
    return status >= 500 && err.code === 'BS_ERR_INTERNAL'
      ? body(status, err.code, 'the server failed to answer; the server log has the details')
      : body(status, err.code, err.message)
  }
  return fromFramework(err as { statusCode?: number; message: string })
}

/** fastify's own errors as ours: same shape, a BS_ERR_ code by what went wrong. */
function fromFramework(err: { statusCode?: number; code?: string; message: string }): ErrorBody {
  const status = err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 600 ? err.statusCode : 500
  if (status === 413) return body(413, 'BS_ERR_TOO_LARGE', `${err.message}; send a smaller body`)
  if (status === 415) return body(415, 'BS_ERR_BAD_REQUEST', `${err.message}; send application/json`)
  if (status === 404) return body(404, 'BS_ERR_NOT_FOUND', err.message)
  if (status < 500) return body(status, 'BS_ERR_BAD_REQUEST', err.message)
  return body(status, 'BS_ERR_INTERNAL', 'the server failed to answer; the server log has the details')
}

/**
 * Validators from the route schemas with TypeBox: a body must already have
 * the declared types (an array is not a string); query strings and path
 * parameters are text by nature and are converted first. An error lists
 * every wrong field with what it allows.
 */
export function typeboxValidators(app: FastifyInstance): void {
  app.setValidatorCompiler(({ schema, httpPart }) => {
    const s = schema as TSchema
    const checker = Compile(s)
    return (data: unknown) => {
      const value = httpPart === 'body' ? data : Value.Default(s, Value.Convert(s, data))
      if (checker.Check(value)) return { value }
      return {
        error: new BenchstreamError(
          'BS_ERR_BAD_REQUEST',
          `invalid ${httpPart ?? 'request'}: ` +
            schemaProblems(s, value, '', `this ${httpPart ?? 'request'}`).join('; '),
        ),
      }
    }
  })
}

export function errorShape(app: FastifyInstance, log: (err: unknown) => void): void {
  app.setErrorHandler((err, _req, reply) => {
    if (isBenchstreamError(err)) {
      const status = HTTP_STATUS[err.code] ?? 500
      if (status >= 500) log(err)
      if (err.code === 'BS_ERR_BUSY') void reply.header('retry-after', '1')
      if (err.code === 'BS_ERR_LIVE_LIMIT') void reply.header('retry-after', '10')
      return reply.status(status).send(body(status, err.code, err.message))
    }
    const e = err as { statusCode?: number; code?: string; message: string; validation?: unknown }
    const b = fromFramework(e)
    if (b.statusCode >= 500) log(err)
    return reply.status(b.statusCode).send(b)
  })
  app.setNotFoundHandler((req, reply) => {
    void reply
      .status(404)
      .send(
        body(
          404,
          'BS_ERR_NOT_FOUND',
          `no route ${req.method} ${req.url.split('?')[0]}; see GET / for the live view and /api/v1/runs, ` +
            `/api/v1/runs/:id/report, /api/v1/runs/:id/timeline, /api/v1/runs/:id/figures, /api/v1/compare, ` +
            `/api/v1/history, /api/v1/alerts, /api/v1/silences, POST /api/v1/query, and /clickhouse/ ` +
            `(ClickHouse's HTTP interface, read-only); GET /api/v1/openapi.json lists every route`,
        ),
      )
  })
}

/**
 * Errors Node's HTTP parser raises before fastify sees a request (headers
 * too large, a malformed request line): answered in the same JSON shape.
 */
export function clientErrorHandler(err: Error & { code?: string }, socket: Socket): void {
  if (!socket.writable) return
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400
  const b = JSON.stringify(
    body(
      status,
      'BS_ERR_BAD_REQUEST',
      status === 431
        ? 'the request headers are too large (at most 16 KiB)'
        : `the request could not be parsed: ${err.code ?? err.message}`,
    ),
  )
  socket.end(
    `HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}\r\ncontent-type: ` +
      `application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(b)}\r\nconnection: close\r\n\r\n${b}`,
  )
}

export interface AccessOptions {
  /** A bearer token every route but /healthz requires; undefined = none. */
  token: string | undefined
  /** Host names accepted in the Host header (lower case, no port); undefined = any (not on loopback). */
  allowedHosts: ReadonlySet<string> | undefined
}

/** Why a request is refused access: what the route answers with, in its own error form. */
export interface AccessDenied {
  code: 'BS_ERR_FORBIDDEN' | 'BS_ERR_UNAUTHORIZED'
  message: string
  /** True when no credential was sent at all (as opposed to a wrong one). */
  missing: boolean
}

/**
 * Access rules, in order: the Host header must name this server (a page on
 * another site that resolves its name to 127.0.0.1 sends its own name:
 * DNS rebinding), then the token. `given` is the credential the request
 * carried, in whatever form its route accepts. One function for every
 * route, so the ClickHouse endpoint and the JSON API cannot drift apart.
 */
export function checkAccess(
  opts: AccessOptions,
  host: string | undefined,
  given: string | undefined,
  asked: string,
): AccessDenied | undefined {
  if (opts.allowedHosts !== undefined) {
    const name = hostName(host)
    if (name === undefined || !opts.allowedHosts.has(name)) {
      return {
        code: 'BS_ERR_FORBIDDEN',
        missing: false,
        message:
          `Host ${JSON.stringify(host ?? '')} is not allowed: this API answers ` +
          `to ${[...opts.allowedHosts].join(', ')} ` +
          `(set API_ALLOWED_HOSTS to add names)`,
      }
    }
  }
  if (opts.token === undefined) return undefined
  const token = Buffer.from(opts.token)
  const g = given === undefined ? undefined : Buffer.from(given)
  if (g === undefined || g.length !== token.length || !timingSafeEqual(g, token)) {
    return {
      code: 'BS_ERR_UNAUTHORIZED',
      missing: given === undefined,
      message: given === undefined ? `this API needs ${asked}` : 'the token is not the API_TOKEN of this server',
    }
  }
  return undefined
}

/**
 * Route config of routes that check access themselves (the ClickHouse endpoint: other credential forms, other error
 * form).
 */
export const OWN_ACCESS_CHECK = 'ownAccessCheck'

/**
 * The API's access hook: Authorization: Bearer <API_TOKEN>. /healthz stays
 * open to probes; routes marked OWN_ACCESS_CHECK run checkAccess in a hook
 * of their own.
 */
export function accessControl(app: FastifyInstance, opts: AccessOptions): void {
  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    if ((req.routeOptions.config as unknown as Record<string, unknown> | undefined)?.[OWN_ACCESS_CHECK] === true) return
    const given = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1]
    const denied = checkAccess(
      req.url === '/healthz' ? { ...opts, token: undefined } : opts,
      req.headers.host,
      given,
      'Authorization: Bearer <API_TOKEN>',
    )
    if (denied === undefined) return
    const status = denied.code === 'BS_ERR_FORBIDDEN' ? 403 : 401
    if (status === 401) void reply.header('www-authenticate', 'Bearer')
    return reply.status(status).send(body(status, denied.code, denied.message))
  })
}

/** The host name of a Host header, lower case, without the port; IPv6 without brackets. */
function hostName(header: string | undefined): string | undefined {
  if (header === undefined || header === '') return undefined
  const m = /^\[([0-9a-fA-F:.]+)\](?::\d+)?$/.exec(header) ?? /^([^:]+)(?::\d+)?$/.exec(header)
  return m?.[1]?.toLowerCase()
}

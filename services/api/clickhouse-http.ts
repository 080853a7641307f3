/**
 * A ClickHouse-compatible, read-only HTTP endpoint under /clickhouse, so that
 * Grafana's ClickHouse plugin (protocol http, "HTTP path" /clickhouse) and
 * curl-style ClickHouse HTTP clients can read the embedded engine, which only
 * this process can open.
 *
 * Every query goes through the same guard as POST /api/v1/query (AdHocQueries:
 * read-only connections, one checked SELECT over benchstream.*, the result
 * streamed whole, limits that fail it, concurrency and queue) and the same
 * access check (checkAccess: Host
 * allow-list, API_TOKEN). What differs is only the dialect, taken from
 * ClickHouse's HTTP interface and from what the plugin's client
 * (clickhouse-go v2.47.0, conn_http.go) sends:
 *
 * - the query in the body (POST) and/or `?query=` (param first, then a
 *   newline, then the body, as ClickHouse's HTTPHandler joins them);
 * - `default_format` (the plugin: Native; ClickHouse's default:
 *   TabSeparated), overridden by a FORMAT clause;
 * - `client_protocol_version` framing Native blocks (native-format.ts);
 * - `database`, `max_execution_time`, `limit` (a cut), `max_result_rows`
 *   and `max_result_bytes` (limits that fail the query, or cut it with
 *   result_overflow_mode=break) and the other parameters in ACCEPTED; any
 *   other setting is refused as a read-only ClickHouse user is refused
 *   (READONLY, "Cannot modify");
 * - the token as the basic-auth password (the plugin's "password"), as
 *   `X-ClickHouse-Key`, or as `Authorization: Bearer`;
 * - errors as ClickHouse writes them: `Code: N. DB::Exception: ... (NAME)`,
 *   header X-ClickHouse-Exception-Code, the HTTP status of
 *   src/Server/HTTP/exceptionCodeToHTTPStatus.cpp (busy: 429, not 500, so
 *   that clients back off as with /api/v1/query); after the first MiB of an
 *   answer, ClickHouse 25.11's exception block and a broken response
 *   (result-reply.ts).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { CompressedBlockError, decompressBlocks } from '../core/codec/compressed-blocks.js'
import { chooseEncoding, decodeBody, HttpEncodingError } from '../core/codec/http-encoding.js'
import { Lz4Error } from '../core/codec/lz4.js'
import { isBenchstreamError } from '../core/errors.js'
import type { AdHocQueries, ResultLimits } from '../core/ports/ad-hoc-queries.js'
import { checkAccess, OWN_ACCESS_CHECK, type AccessOptions } from './http-guards.js'
import { exceptionBlock, exceptionTag } from '../core/codec/exception-block.js'
import { sendResult } from './result-reply.js'

/** URL path prefix of the endpoint (the plugin's "HTTP path" setting). */
export const CLICKHOUSE_PATH = '/clickhouse'

/** ClickHouse error codes this endpoint answers with (src/Common/ErrorCodes.cpp). */
const CODES = {
  BAD_ARGUMENTS: 36,
  NOT_IMPLEMENTED: 48,
  SYNTAX_ERROR: 62,
  UNKNOWN_FORMAT: 73,
  UNKNOWN_DATABASE: 81,
  TIMEOUT_EXCEEDED: 159,
  READONLY: 164,
  REQUIRED_PASSWORD: 194,
  TOO_MANY_SIMULTANEOUS_QUERIES: 202,
  TOO_MANY_ROWS_OR_BYTES: 396,
  QUERY_IS_TOO_LARGE: 229,
  CANNOT_DECOMPRESS: 271,
  UNKNOWN_COMPRESSION_METHOD: 432,
  ACCESS_DENIED: 497,
  AUTHENTICATION_FAILED: 516,
  UNKNOWN_EXCEPTION: 1002,
} as const
type CodeName = keyof typeof CODES

/** HTTP status by ClickHouse error name: exceptionCodeToHTTPStatus.cpp (ClickHouse 26.x); anything else is 500. */
const STATUS_BY_NAME: Array<[number, readonly string[]]> = [
  [401, ['REQUIRED_PASSWORD']],
  [403, ['UNKNOWN_USER', 'WRONG_PASSWORD', 'AUTHENTICATION_FAILED', 'SET_NON_GRANTED_ROLE', 'ACCESS_DENIED']],
  [
    400,
    [
      'BAD_ARGUMENTS',
      'CANNOT_COMPILE_REGEXP',
      'CANNOT_PARSE_TEXT',
      'CANNOT_PARSE_ESCAPE_SEQUENCE',
      'CANNOT_PARSE_QUOTED_STRING',
      'CANNOT_PARSE_DATE',
      'CANNOT_PARSE_DATETIME',
      'CANNOT_PARSE_NUMBER',
      'CANNOT_PARSE_DOMAIN_VALUE_FROM_STRING',
      'CANNOT_PARSE_IPV4',
      'CANNOT_PARSE_IPV6',
      'CANNOT_PARSE_INPUT_ASSERTION_FAILED',
      'CANNOT_PARSE_UUID',
      'DUPLICATE_COLUMN',
      'ILLEGAL_COLUMN',
      'UNKNOWN_ELEMENT_IN_AST',
      'UNKNOWN_TYPE_OF_AST_NODE',
      'THERE_IS_NO_COLUMN',
      'TOO_DEEP_AST',
      'TOO_BIG_AST',
      'UNEXPECTED_AST_STRUCTURE',
      'SYNTAX_ERROR',
      'INCORRECT_DATA',
      'TYPE_MISMATCH',
      'VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE',
    ],
  ],
  [
    404,
    [
      'UNKNOWN_TABLE',
      'UNKNOWN_FUNCTION',
      'UNKNOWN_IDENTIFIER',
      'UNKNOWN_TYPE',
      'UNKNOWN_STORAGE',
      'UNKNOWN_DATABASE',
      'UNKNOWN_SETTING',
      'UNKNOWN_DIRECTION_OF_SORTING',
      'UNKNOWN_AGGREGATE_FUNCTION',
      'UNKNOWN_FORMAT',
      'UNKNOWN_DATABASE_ENGINE',
      'UNKNOWN_TYPE_OF_QUERY',
      'UNKNOWN_ROLE',
    ],
  ],
  [413, ['QUERY_IS_TOO_LARGE']],
  [501, ['NOT_IMPLEMENTED']],
  [503, ['SOCKET_TIMEOUT', 'CANNOT_OPEN_FILE', 'CANNOT_SCHEDULE_TASK']],
  [411, ['HTTP_LENGTH_REQUIRED']],
  [408, ['TIMEOUT_EXCEEDED']],
  [415, ['UNSUPPORTED_MEDIA_TYPE']],
]

/**
 * URL parameters accepted. Those that change nothing here are accepted so
 * that clients which always send them work: the plugin sends database,
 * default_format, client_protocol_version and max_execution_time on every
 * request (the server's API_QUERY_TIMEOUT_S still applies).
 */
const ACCEPTED = new Set([
  'query',
  'database',
  'default_format',
  'client_protocol_version',
  'max_execution_time',
  'limit',
  'max_result_rows',
  'max_result_bytes',
  'result_overflow_mode',
  'query_id',
  'session_id',
  'session_timeout',
  'session_check',
  'quota_key',
  'user',
  'readonly',
  'wait_end_of_query',
  'send_progress_in_http_headers',
  'http_headers_progress_interval_ms',
  'enable_http_compression',
  'output_format_json_quote_64bit_integers',
  'add_http_cors_header',
  'buffer_size',
  'compress',
  'decompress',
  'cancel_http_readonly_queries_on_client_close',
  'http_zlib_compression_level',
])

/** Most bytes a request body may decompress to (the guard takes queries of up to 256 KiB). */
const MAX_DECODED_BODY = 1 << 20

/** An error as ClickHouse's HTTP interface writes it. */
export interface ClickHouseHttpError {
  status: number
  code: number
  name: string
  message: string
}

function chError(name: CodeName, message: string): ClickHouseHttpError {
  return { status: statusOf(name), code: CODES[name], name, message }
}

function statusOf(name: string): number {
  return STATUS_BY_NAME.find(([, names]) => names.includes(name))?.[0] ?? 500
}

/** Raised inside the handler; rendered by the endpoint's error handler. */
class EndpointError extends Error {
  constructor(readonly ch: ClickHouseHttpError) {
    super(ch.message)
  }
}

/**
 * The engine's code and name carried by a guard error's cause (chDB: clickhouseCode; server: code and type; or the
 * text).
 */
function engineCode(cause: unknown): { code: number; name: string } | undefined {
  const e = cause as
    | { clickhouseCode?: unknown; code?: unknown; type?: unknown; message?: unknown; name?: unknown }
    | undefined
  if (e === undefined || e === null) return undefined
  if (e.name === 'NativeFormatError') return { code: CODES.NOT_IMPLEMENTED, name: 'NOT_IMPLEMENTED' }
  const message = typeof e.message === 'string' ? e.message : ''
  const code =
    typeof e.clickhouseCode === 'number'
      ? e.clickhouseCode
      : typeof e.code === 'string' && /^\d+$/.test(e.code)
        ? Number(e.code)
        : Number(/\bCode: (\d+)\b/.exec(message)?.[1] ?? NaN)
  if (Number.isNaN(code)) return undefined
  const name =
    typeof e.type === 'string' ? e.type : (/\(([A-Z][A-Z0-9_]{2,})\)\s*$/m.exec(message)?.[1] ?? 'UNKNOWN_EXCEPTION')
  return { code, name }
}

/** Any error of a request as ClickHouse would name it. */
export function toClickHouseError(err: unknown): ClickHouseHttpError {
  if (err instanceof EndpointError) return err.ch
  if (isBenchstreamError(err)) {
    switch (err.code) {
      case 'BS_ERR_QUERY_REFUSED': {
        const rule = /\(rule: ([\w-]+)\)$/.exec(err.message)?.[1]
        if (rule === 'size') return chError('QUERY_IS_TOO_LARGE', err.message)
        if (rule === 'format') return chError('UNKNOWN_FORMAT', err.message)
        if (rule === 'database' || rule === 'function') return chError('ACCESS_DENIED', err.message)
        // One SELECT only, writes, settings changes: what ClickHouse answers a read-only user.
        return chError('READONLY', err.message)
      }
      case 'BS_ERR_QUERY_FAILED': {
        if (/ran longer than/.test(err.message)) return chError('TIMEOUT_EXCEEDED', err.message)
        const engine = engineCode(err.cause)
        return engine === undefined
          ? chError('BAD_ARGUMENTS', err.message)
          : { status: statusOf(engine.name), code: engine.code, name: engine.name, message: err.message }
      }
      case 'BS_ERR_RESULT_LIMIT':
        return chError('TOO_MANY_ROWS_OR_BYTES', err.message)
      case 'BS_ERR_BUSY':
        return { ...chError('TOO_MANY_SIMULTANEOUS_QUERIES', err.message), status: 429 }
      case 'BS_ERR_TOO_LARGE':
        return chError('QUERY_IS_TOO_LARGE', err.message)
      case 'BS_ERR_BAD_REQUEST':
        return chError('BAD_ARGUMENTS', err.message)
      default:
        return chError('UNKNOWN_EXCEPTION', 'the server failed to answer; the server log has the details')
    }
  }
  if (err instanceof CompressedBlockError || err instanceof Lz4Error || err instanceof HttpEncodingError) {
    const unknown = /not supported/.test(err.message)
    return chError(unknown ? 'UNKNOWN_COMPRESSION_METHOD' : 'CANNOT_DECOMPRESS', err.message)
  }
  // fastify's own: body too large, unreadable body.
  const e = err as { statusCode?: number; message?: string }
  if (e.statusCode === 413)
    return chError('QUERY_IS_TOO_LARGE', `${e.message ?? 'body too large'}; send a smaller query`)
  if (e.statusCode !== undefined && e.statusCode >= 400 && e.statusCode < 500)
    return chError('BAD_ARGUMENTS', e.message ?? 'bad request')
  return chError('UNKNOWN_EXCEPTION', 'the server failed to answer; the server log has the details')
}

/** An error as ClickHouse writes it: one line, `Code: N. DB::Exception: ... (NAME)`. */
function exceptionText(e: ClickHouseHttpError): string {
  return `Code: ${e.code}. DB::Exception: ${e.message
    .replace(/\s+/g, ' ')
    .replace(new RegExp(`\\s*\\(${e.name}\\)\\.?\\s*$`), '')
    .replace(/[.:]$/, '')}. (${e.name})`
}

function sendError(reply: FastifyReply, e: ClickHouseHttpError): FastifyReply {
  // The line and a newline; the code also in a header for clients that read it there.
  return reply
    .status(e.status)
    .header('x-clickhouse-exception-code', String(e.code))
    .type('text/plain; charset=UTF-8')
    .send(`${exceptionText(e)}\n`)
}

/** The token in any form the plugin or a curl user can send: basic-auth password, X-ClickHouse-Key, bearer. */
function credential(req: FastifyRequest): string | undefined {
  const auth = req.headers.authorization ?? ''
  const basic = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(auth)?.[1]
  if (basic !== undefined) {
    const decoded = Buffer.from(basic, 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    return colon < 0 ? undefined : decoded.slice(colon + 1)
  }
  const bearer = /^Bearer (\S+)$/.exec(auth)?.[1]
  if (bearer !== undefined) return bearer
  const key = req.headers['x-clickhouse-key']
  return typeof key === 'string' ? key : undefined
}

/** Content types ClickHouse sends for the formats the guard allows. */
function contentType(format: string): string {
  const f = format.toLowerCase()
  if (f === 'native' || f.startsWith('rowbinary') || f.startsWith('arrow')) return 'application/octet-stream'
  if (f.startsWith('json')) return 'application/json; charset=UTF-8'
  if (f.startsWith('csv')) return 'text/csv; charset=UTF-8; header=absent'
  if (f.startsWith('tsv') || f.startsWith('tabseparated')) return 'text/tab-separated-values; charset=UTF-8'
  if (f === 'xml') return 'application/xml; charset=UTF-8'
  return 'text/plain; charset=UTF-8'
}

function single(v: unknown): string | undefined {
  if (Array.isArray(v)) return single(v[v.length - 1])
  return typeof v === 'string' ? v : undefined
}

function integer(name: string, raw: string | undefined, max: number): number | undefined {
  if (raw === undefined || raw === '') return undefined
  const n = Number(raw)
  if (!Number.isInteger(n) || n < 0 || n > max)
    throw new EndpointError(
      chError(
        'BAD_ARGUMENTS',
        `${name}=${JSON.stringify(raw.slice(0, 40))} is not allowed: an integer from 0 to ${max}`,
      ),
    )
  return n
}

export interface ClickHouseHttpOptions {
  adHoc: AdHocQueries
  access: AccessOptions
  /** The one database the endpoint reads (CLICKHOUSE_DATABASE). */
  database: string
  /** Where unexpected errors are reported. */
  onError?: (err: unknown) => void
}

/** Registers the endpoint on an app (its own content parsing, access hook and error form, encapsulated). */
export function clickhouseHttp(app: FastifyInstance, opts: ClickHouseHttpOptions): void {
  void app.register(
    async (ch) => {
      // The query is the raw body, whatever the client calls its type (curl: form-urlencoded; Go: none).
      ch.removeAllContentTypeParsers()
      ch.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body))
      ch.addHook('onRequest', async (req, reply) => {
        const denied = checkAccess(
          opts.access,
          req.headers.host,
          credential(req),
          'the API_TOKEN as the basic-auth password (any user name), as X-ClickHouse-Key, or as Authorization: Bearer',
        )
        if (denied === undefined) return
        if (denied.code === 'BS_ERR_FORBIDDEN') return sendError(reply, chError('ACCESS_DENIED', denied.message))
        return sendError(reply, chError(denied.missing ? 'REQUIRED_PASSWORD' : 'AUTHENTICATION_FAILED', denied.message))
      })
      ch.setErrorHandler((err, _req, reply) => {
        const e = toClickHouseError(err)
        if (e.status >= 500 && e.code === CODES.UNKNOWN_EXCEPTION) opts.onError?.(err)
        return sendError(reply, e)
      })
      ch.setNotFoundHandler((req, reply) => {
        void reply
          .status(404)
          .type('text/plain; charset=UTF-8')
          .send(
            `There is no handle ${req.url.split('?')[0]}\n\nUse ${CLICKHOUSE_PATH}/ (GET or POST, the query ` +
              `in ?query= or the body) or ${CLICKHOUSE_PATH}/ping.\n`,
          )
      })
      const config = { [OWN_ACCESS_CHECK]: true }
      ch.get('/ping', { config }, async (_req, reply) => reply.type('text/plain; charset=UTF-8').send('Ok.\n'))
      ch.route({
        method: ['GET', 'POST', 'HEAD'],
        url: '/',
        config,
        handler: async (req, reply) => query(req, reply, opts),
      })
    },
    { prefix: CLICKHOUSE_PATH },
  )
}

async function query(req: FastifyRequest, reply: FastifyReply, opts: ClickHouseHttpOptions): Promise<FastifyReply> {
  const params = (req.query ?? {}) as Record<string, unknown>
  // Before the settings check: a token in a URL ends up in logs.
  if ('password' in params)
    throw new EndpointError(chError('BAD_ARGUMENTS', 'send the token as the basic-auth password, not in the URL'))
  for (const key of Object.keys(params)) {
    if (key.startsWith('param_'))
      throw new EndpointError(
        chError(
          'NOT_IMPLEMENTED',
          `query parameters (${key}) are not supported by this endpoint; write the values into the query`,
        ),
      )
    if (!ACCEPTED.has(key))
      throw new EndpointError(
        chError(
          'READONLY',
          `Cannot modify '${key.slice(0, 80)}' setting in readonly mode: this endpoint is read-only and ` +
            `its limits are the server's (accepted parameters: ${[...ACCEPTED].join(', ')})`,
        ),
      )
  }
  const p = (name: string): string | undefined => single(params[name])
  const database = p('database') ?? single(req.headers['x-clickhouse-database'])
  if (database !== undefined && database !== '' && database !== opts.database) {
    throw new EndpointError(
      chError(
        'UNKNOWN_DATABASE',
        `Database ${database.slice(0, 80)} is not readable here: this ` +
          `endpoint reads the ${opts.database} database only`,
      ),
    )
  }
  const revision = integer('client_protocol_version', p('client_protocol_version'), 2 ** 31 - 1) ?? 0
  const { cut, fail } = resultLimits(p)
  const format = p('default_format') ?? single(req.headers['x-clickhouse-format']) ?? 'TabSeparated'
  // A HEAD (ClickHouse's url() asks one before its GET) runs nothing: the answer's headers are all it wants.
  if (req.method === 'HEAD') return reply.type(contentType(format)).send()
  // ClickHouse's HTTPHandler: the query parameter, a newline, then the body, which may be compressed twice:
  // HTTP Content-Encoding outside, ClickHouse's compressed blocks (decompress=1) inside.
  let raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0)
  const contentEncoding = single(req.headers['content-encoding'])
  if (contentEncoding !== undefined && contentEncoding !== '' && raw.length > 0)
    raw = decodeBody(contentEncoding, raw, MAX_DECODED_BODY)
  if (p('decompress') === '1' && raw.length > 0) raw = decompressBlocks(raw, MAX_DECODED_BODY)
  const body = raw.toString('utf8')
  const param = p('query')
  const sql = param === undefined ? body : body === '' ? param : `${param}\n${body}`
  if (sql.trim() === '')
    throw new EndpointError(chError('SYNTAX_ERROR', 'Empty query: send it in the body (POST) or as ?query='))

  // Resolves once the first bytes are ready: refusals and early failures are answered above with their status.
  const result = await opts.adHoc.stream(sql, { format, nativeRevision: revision, cut, fail })
  const tag = exceptionTag()
  const queryId = p('query_id') ?? single(req.headers['x-clickhouse-query-id'])
  const asked = cut.rows !== undefined || cut.bytes !== undefined
  const headers: Record<string, string> = {
    'content-type': contentType(result.format),
    'x-clickhouse-format': result.format,
    'x-clickhouse-exception-tag': tag,
    // What ClickHouse reports when the answer starts; the result's size where it is known already (it all came
    // before the first bytes went out), as ClickHouse does for a result it held back (clickhouse-connect:
    // QueryResult.summary).
    'x-clickhouse-summary': JSON.stringify({
      ...(result.complete && result.rows >= 0 ? { result_rows: String(result.rows) } : {}),
      ...(result.complete ? { result_bytes: String(result.bytes) } : {}),
      ...(result.complete && asked ? { benchstream_truncated: String(result.truncated) } : {}),
      elapsed_ns: String(Math.round(result.elapsedMs * 1e6)),
    }),
  }
  if (queryId !== undefined) headers['x-clickhouse-query-id'] = queryId.slice(0, 200)
  await sendResult(reply, {
    headers,
    body: result,
    // ClickHouse's compressed blocks (compress=1) inside, HTTP Content-Encoding outside, as the server layers them.
    blocks: p('compress') === '1',
    // enable_http_compression is 1 by default in ClickHouse 26 (system.settings says so, and clickhouse-connect then
    // sends only Accept-Encoding); 0 turns it off.
    encoding: p('enable_http_compression') === '0' ? undefined : chooseEncoding(single(req.headers['accept-encoding'])),
    failure: (err) => {
      const e = toClickHouseError(err)
      if (e.status >= 500 && e.code === CODES.UNKNOWN_EXCEPTION) opts.onError?.(err)
      return exceptionBlock(tag, exceptionText(e))
    },
    cancel: () => result.cancel(),
    stopped: result.stopped,
    // A cut the client asked for (limit, result_overflow_mode=break) is said after the last row.
    ...(asked
      ? {
          trailers: {
            names: ['x-benchstream-truncated', 'x-benchstream-rows'],
            values: () => ({
              'x-benchstream-truncated': String(result.truncated),
              'x-benchstream-rows': String(result.rows),
            }),
          },
        }
      : {}),
  })
  return reply
}

/**
 * The cut and the limits a request sets, as ClickHouse reads them: `limit` is
 * a LIMIT on the result; max_result_rows and max_result_bytes fail the query
 * when passed (result_overflow_mode=throw, ClickHouse's default) or cut it
 * there (result_overflow_mode=break).
 */
function resultLimits(p: (name: string) => string | undefined): { cut: ResultLimits; fail: ResultLimits } {
  const mode = p('result_overflow_mode') ?? 'throw'
  if (mode !== 'throw' && mode !== 'break')
    throw new EndpointError(
      chError(
        'BAD_ARGUMENTS',
        `result_overflow_mode=${JSON.stringify(mode.slice(0, 40))} is not allowed: throw (fail the query when a ` +
          `max_result_* is passed, the default) or break (cut the result there)`,
      ),
    )
  const positive = (name: string): number | undefined => integer(name, p(name), Number.MAX_SAFE_INTEGER) || undefined
  const limit = positive('limit')
  const rows = positive('max_result_rows')
  const bytes = positive('max_result_bytes')
  const over: ResultLimits = {
    ...(rows === undefined ? {} : { rows }),
    ...(bytes === undefined ? {} : { bytes }),
  }
  const cutRows = Math.min(limit ?? Infinity, mode === 'break' ? (rows ?? Infinity) : Infinity)
  return {
    cut: {
      ...(Number.isFinite(cutRows) ? { rows: cutRows } : {}),
      ...(mode === 'break' && bytes !== undefined ? { bytes } : {}),
    },
    fail: mode === 'throw' ? over : {},
  }
}

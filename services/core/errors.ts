/**
 * Benchstream's coded errors. Every error a user can see has a stable code
 * (`BS_ERR_*`), a message that says what was wrong and what is allowed, an
 * optional cause, and whether retrying the same thing can help.
 */
export const ERROR_CODES = {
  BS_ERR_CONFIG: { retryable: false, summary: 'invalid configuration' },
  BS_ERR_USAGE: { retryable: false, summary: 'invalid command line' },
  BS_ERR_WORKLOAD: { retryable: false, summary: 'invalid workload property' },
  BS_ERR_DECODE: { retryable: false, summary: 'malformed record batch' },
  BS_ERR_CLICKHOUSE: { retryable: true, summary: 'ClickHouse request failed' },
  BS_ERR_KAFKA: { retryable: true, summary: 'Kafka request failed' },
  BS_ERR_KAFKAJS_INTERNALS: {
    retryable: false,
    summary: 'kafkajs is not the version its idle-loop fix was written for',
  },
  BS_ERR_MIGRATION: { retryable: false, summary: 'schema migration failed' },
  BS_ERR_NOT_FOUND: { retryable: false, summary: 'not found' },
  BS_ERR_BAD_REQUEST: { retryable: false, summary: 'bad request' },
  BS_ERR_BINDING: { retryable: false, summary: 'datastore binding failed' },
  BS_ERR_TIMEOUT: { retryable: true, summary: 'timed out' },
  BS_ERR_QUERY_REFUSED: { retryable: false, summary: 'ad hoc query not allowed' },
  BS_ERR_QUERY_FAILED: { retryable: false, summary: 'ad hoc query failed' },
  BS_ERR_RESULT_LIMIT: { retryable: false, summary: 'ad hoc result passed a limit' },
  BS_ERR_BUSY: { retryable: true, summary: 'too many requests at once' },
  BS_ERR_LIVE_LIMIT: { retryable: true, summary: 'too many live views open' },
  BS_ERR_UNAUTHORIZED: { retryable: false, summary: 'missing or wrong API token' },
  BS_ERR_FORBIDDEN: { retryable: false, summary: 'request refused' },
  BS_ERR_TOO_LARGE: { retryable: false, summary: 'request too large' },
  BS_ERR_NOT_COMPARABLE: { retryable: false, summary: 'runs with different setups compared without --force' },
  BS_ERR_NOTHING_TO_COMPARE: {
    retryable: false,
    summary: 'no figure both sides have: no common workload, operation or figure',
  },
  BS_ERR_PLAN: { retryable: false, summary: 'invalid experiment plan' },
  BS_ERR_AGENT: { retryable: true, summary: 'no agent can run it' },
  BS_ERR_VERSIONS: { retryable: false, summary: "a bisection's versions cannot be read (Maven metadata)" },
  BS_ERR_AGENT_NAME_TAKEN: { retryable: false, summary: 'another agent heartbeats under this agent name' },
  BS_ERR_INTERNAL: { retryable: false, summary: 'internal error' },
} as const
export type ErrorCode = keyof typeof ERROR_CODES

export class BenchstreamError extends Error {
  readonly code: ErrorCode
  readonly retryable: boolean
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown; retryable?: boolean }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'BenchstreamError'
    this.code = code
    this.retryable = options?.retryable ?? ERROR_CODES[code].retryable
  }
}

export function isBenchstreamError(err: unknown, code?: ErrorCode): err is BenchstreamError {
  return err instanceof BenchstreamError && (code === undefined || err.code === code)
}

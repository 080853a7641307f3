/**
 * Kafka adapter: client construction and topic set-up over kafkajs. The rest
 * of the code sees producers and consumers only through the driver's sink and
 * the processor's source.
 */
import net from 'node:net'
import tls from 'node:tls'
import {
  Kafka,
  logLevel,
  Partitioners,
  type Admin,
  type ISocketFactory,
  type ITopicConfig,
  type KafkaConfig as KafkaJsConfig,
} from 'kafkajs'
import type { KafkaConfig, TopicsConfig } from '../../common/infra-config.js'
import { BenchstreamError } from '../../core/errors.js'
import { fixKafkajsIdleLoop } from './kafkajs-idle-fix.js'

export function createKafka(cfg: KafkaConfig, clientIdSuffix: string): Kafka {
  // Every kafkajs client of the process is made here: the fix is in place before its first connection.
  fixKafkajsIdleLoop()
  const debug = process.env.KAFKAJS_LOG_LEVEL === 'debug'
  const seen: { problem: KafkaProblemSeen | undefined } = { problem: undefined }
  const open = new Set<net.Socket>()
  const kafka = new Kafka({
    socketFactory: recordingSocketFactory(open),
    clientId: `${cfg.clientId}-${clientIdSuffix}`,
    brokers: cfg.brokers,
    // Errors are kept (not printed): what kafkajs retried internally is the cause an outage report names
    // (lastKafkaProblem). KAFKAJS_LOG_LEVEL=debug prints everything.
    logLevel: debug ? logLevel.DEBUG : logLevel.WARN,
    logCreator: () => (entry) => {
      // Errors only: kafkajs' warnings are advice given at start-up (partitioner, retries), not incidents.
      if (entry.level === logLevel.ERROR) {
        const error = (entry.log as { error?: unknown }).error
        const detail = typeof error === 'string' ? error : error instanceof Error ? error.message : undefined
        const message = String(entry.log.message)
        seen.problem = {
          message: detail === undefined || message.includes(detail) ? message : `${message}: ${detail}`,
          atMs: Date.now(),
        }
      }
      if (debug) process.stderr.write(`${JSON.stringify({ level: entry.label, ns: entry.namespace, ...entry.log })}\n`)
    },
    // A short connect timeout makes a missing broker visible quickly; retries cover real hiccups.
    connectionTimeout: 3000,
    retry: { initialRetryTime: 100, retries: 8, maxRetryTime: 5000 },
    ...securityOptions(cfg),
  })
  problems.set(kafka, seen)
  connections.set(kafka, open)
  return kafka
}

/** kafkajs' own keep-alive delay for its sockets (src/network/socketFactory.js). */
const KEEP_ALIVE_DELAY_MS = 60_000

/**
 * kafkajs' socket factory, the same connections, plus a record of the ones still open: kafkajs can leave a
 * connection open after every client of an instance disconnected. Seen after a broker restart: a consumer that
 * crashed and was stopped had opened new connections to its group coordinator (a heartbeat, the leave-group
 * request) through a broker object the metadata refresh had already replaced, which its disconnect no longer
 * reaches; the process then never exited. closeLeftoverConnections closes them.
 */
function recordingSocketFactory(open: Set<net.Socket>): ISocketFactory {
  return ({ host, port, ssl, onConnect }) => {
    const socket = ssl
      ? tls.connect({ host, port, ...(net.isIP(host) ? {} : { servername: host }), ...(ssl as object) }, onConnect)
      : net.connect({ host, port }, onConnect)
    socket.setKeepAlive(true, KEEP_ALIVE_DELAY_MS)
    open.add(socket)
    socket.once('close', () => open.delete(socket))
    return socket
  }
}

const connections = new WeakMap<Kafka, Set<net.Socket>>()

/**
 * Closes the connections of `kafka` (a createKafka instance) still open once every one of its clients has
 * disconnected, and says how many there were. Call it only then: it cuts whatever still uses them.
 */
export function closeLeftoverConnections(kafka: Kafka): number {
  const open = connections.get(kafka)
  if (open === undefined) return 0
  const n = open.size
  // With an error, not plainly: kafkajs cleans a connection up (its request-timeout interval included) on the
  // socket's 'error' or 'end', and a socket destroyed without an error emits neither.
  for (const socket of open)
    socket.destroy(new Error('closed by Benchstream: left open after its clients disconnected'))
  open.clear()
  return n
}

/** An error kafkajs logged (a connection refused, a leader that moved), and when. */
export interface KafkaProblemSeen {
  message: string
  atMs: number
}

const problems = new WeakMap<Kafka, { problem: KafkaProblemSeen | undefined }>()

/** The last error the clients of `kafka` logged (createKafka's instances only). */
export function lastKafkaProblem(kafka: Kafka): KafkaProblemSeen | undefined {
  return problems.get(kafka)?.problem
}

/** kafkajs' ssl and sasl options from KafkaConfig.security (none for PLAINTEXT). */
export function securityOptions(cfg: KafkaConfig): Pick<KafkaJsConfig, 'ssl' | 'sasl'> {
  const s = cfg.security
  if (s === undefined || s.protocol === 'PLAINTEXT') return {}
  const tls = s.protocol === 'SSL' || s.protocol === 'SASL_SSL'
  const sasl = s.sasl
  return {
    // Certificates are verified, host names included (Node's defaults); a CA of our own only adds trust.
    ...(tls ? { ssl: s.caPem === undefined ? true : { ca: [s.caPem] } } : {}),
    ...(sasl === undefined
      ? {}
      : {
          sasl:
            sasl.mechanism === 'PLAIN'
              ? { mechanism: 'plain' as const, username: sasl.username, password: sasl.password }
              : sasl.mechanism === 'SCRAM-SHA-256'
                ? { mechanism: 'scram-sha-256' as const, username: sasl.username, password: sasl.password }
                : { mechanism: 'scram-sha-512' as const, username: sasl.username, password: sasl.password },
        }),
  }
}

/**
 * What went wrong talking to Kafka, in words that name the setting to check: refused credentials and failed TLS
 * handshakes are said as such (kafkajs' own messages do not name our variables). Never contains the password.
 */
export function kafkaProblem(err: unknown, cfg: KafkaConfig): string {
  const message = err instanceof Error ? err.message : String(err)
  const s = cfg.security
  if (isAuthenticationFailure(err))
    return (
      `Kafka refused the credentials: authentication failed for user ${JSON.stringify(s?.sasl?.username ?? '')} ` +
      `with ${s?.sasl?.mechanism ?? 'SASL'} (${message}); check KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD and ` +
      `KAFKA_SASL_MECHANISM`
    )
  if (isTlsFailure(err))
    return (
      `the TLS handshake with Kafka failed (${message}); check KAFKA_SSL_CA_FILE` +
      `${s?.caFile === undefined ? ' (unset: only the system CAs are trusted)' : ` (${s.caFile})`} and that the ` +
      `brokers' certificates name the addresses in KAFKA_BROKERS`
    )
  if (
    (s === undefined || s.protocol === 'PLAINTEXT' || s.protocol === 'SASL_PLAINTEXT') &&
    /Closed connection/i.test(message)
  )
    return (
      `${message} (the broker closed the connection: if it expects TLS, set KAFKA_SECURITY_PROTOCOL to SSL or ` +
      `SASL_SSL)`
    )
  return message
}

/** kafkajs' SASL failure, anywhere in the cause chain. */
export function isAuthenticationFailure(err: unknown): boolean {
  return someCause(
    err,
    (e) =>
      e.name === 'KafkaJSSASLAuthenticationError' ||
      e.type === 'SASL_AUTHENTICATION_FAILED' ||
      e.type === 'ILLEGAL_SASL_STATE' ||
      e.type === 'UNSUPPORTED_SASL_MECHANISM',
  )
}

/** A certificate that does not verify, or a handshake that did not complete. */
function isTlsFailure(err: unknown): boolean {
  return someCause(
    err,
    (e) =>
      (typeof e.code === 'string' && /CERT|SELF_SIGNED|TLS|SSL|HOSTNAME|ERR_TLS/i.test(e.code)) ||
      /certificate|SSL routines|TLS connection/i.test(typeof e.message === 'string' ? e.message : ''),
  )
}

type ErrorLike = { name?: unknown; type?: unknown; code?: unknown; message?: unknown; cause?: unknown }

function someCause(err: unknown, test: (e: ErrorLike) => boolean): boolean {
  for (let e: unknown = err, depth = 0; typeof e === 'object' && e !== null && depth < 6; depth++) {
    const x = e as ErrorLike & { originalError?: unknown }
    if (test(x)) return true
    e = x.cause ?? x.originalError
  }
  return false
}

/** kafkajs' current default partitioner, chosen explicitly (this also silences its start-up notice). */
export const partitioner = Partitioners.DefaultPartitioner

/** How long topic set-up keeps trying after errors the broker calls retriable (a new topic not yet in its metadata). */
const TOPIC_SETUP_DEADLINE_MS = 60_000
const TOPIC_SETUP_MAX_WAIT_MS = 2000

/**
 * Creates Benchstream's topics if they are missing. Existing topics are left as they are. A broker that has just
 * created a topic can answer "does not host this topic-partition" while the topic reaches its metadata (seen on a
 * loaded machine): such retriable answers are retried until TOPIC_SETUP_DEADLINE_MS, anything else fails at once.
 */
export async function ensureTopics(kafka: Kafka, cfg: KafkaConfig, topics: TopicsConfig): Promise<void> {
  await retryingTopicSetup(cfg, () => createMissingTopics(kafka, topics))
}

/** Runs a topic set-up, again after retriable answers until TOPIC_SETUP_DEADLINE_MS; BS_ERR_KAFKA otherwise. */
export async function retryingTopicSetup(cfg: KafkaConfig, setup: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + TOPIC_SETUP_DEADLINE_MS
  for (let wait = 100; ; wait = Math.min(TOPIC_SETUP_MAX_WAIT_MS, wait * 2)) {
    try {
      await setup()
      return
    } catch (err) {
      if (!isRetriable(err) || Date.now() + wait > deadline) {
        if (err instanceof BenchstreamError) throw err
        const problem = kafkaProblem(err, cfg)
        throw new BenchstreamError(
          'BS_ERR_KAFKA',
          `cannot set up topics on Kafka at ${cfg.brokers.join(',')}: ${problem}` +
            (problem === (err as Error).message
              ? '. Is the broker running? Start one with deploy/local/kafka.sh start, or set KAFKA_BROKERS.'
              : ''),
          { cause: err },
        )
      }
      await new Promise((r) => setTimeout(r, wait))
    }
  }
}

async function createMissingTopics(kafka: Kafka, topics: TopicsConfig): Promise<void> {
  const admin: Admin = kafka.admin()
  try {
    await admin.connect()
    const all = [topics.events, topics.deadLetter, topics.alerts, topics.leader]
    const existing = new Set(await admin.listTopics())
    const wanted = all.filter((t) => !existing.has(t))
    if (wanted.length > 0) {
      const durability = await topicDurability(admin, topics)
      await admin.createTopics({
        waitForLeaders: true,
        topics: wanted.map((topic) =>
          withDurability({ topic, numPartitions: topic === topics.events ? topics.partitions : 1 }, durability),
        ),
      })
    }
    // Every partition has a leader before anyone produces or consumes (throws a retriable error until then).
    await admin.fetchTopicMetadata({ topics: all })
  } finally {
    await admin.disconnect().catch(() => undefined)
  }
}

/** Replicas and min.insync.replicas of a topic Benchstream creates. */
export interface TopicDurability {
  replicationFactor: number
  minInsyncReplicas: number
}

/** Most replicas Benchstream gives a topic on its own (BENCHSTREAM_TOPIC_REPLICATION=0). */
const DEFAULT_MAX_REPLICAS = 3

/**
 * The durability of new topics: BENCHSTREAM_TOPIC_REPLICATION, else min(3, brokers in the cluster's metadata);
 * BENCHSTREAM_TOPIC_MIN_ISR, else 2 when replicated (one broker may be lost without losing an acknowledged write,
 * and a write is refused rather than kept by one broker alone), else 1.
 */
export function chooseDurability(
  topics: Pick<TopicsConfig, 'replication' | 'minInsyncReplicas'>,
  brokers: number,
): TopicDurability {
  const replicationFactor =
    topics.replication > 0 ? topics.replication : Math.max(1, Math.min(DEFAULT_MAX_REPLICAS, brokers))
  const minInsyncReplicas = topics.minInsyncReplicas > 0 ? topics.minInsyncReplicas : replicationFactor > 1 ? 2 : 1
  if (replicationFactor > brokers)
    throw new BenchstreamError(
      'BS_ERR_CONFIG',
      `BENCHSTREAM_TOPIC_REPLICATION=${replicationFactor} but the Kafka cluster has ${brokers} broker` +
        `${brokers === 1 ? '' : 's'}: a topic cannot have more replicas than brokers`,
    )
  if (minInsyncReplicas > replicationFactor)
    throw new BenchstreamError(
      'BS_ERR_CONFIG',
      `BENCHSTREAM_TOPIC_MIN_ISR=${minInsyncReplicas} is more than the ${replicationFactor} replicas of the topics: ` +
        `no write could ever be acknowledged`,
    )
  return { replicationFactor, minInsyncReplicas }
}

/** chooseDurability for the cluster the admin client is connected to. */
export async function topicDurability(
  admin: Admin,
  topics: Pick<TopicsConfig, 'replication' | 'minInsyncReplicas'>,
): Promise<TopicDurability> {
  const { brokers } = await admin.describeCluster()
  return chooseDurability(topics, brokers.length)
}

/** A topic to create, with its replicas and min.insync.replicas. */
export function withDurability(t: ITopicConfig, d: TopicDurability): ITopicConfig {
  return {
    ...t,
    replicationFactor: d.replicationFactor,
    configEntries: [...(t.configEntries ?? []), { name: 'min.insync.replicas', value: String(d.minInsyncReplicas) }],
  }
}

/** kafkajs marks errors a retry can help with; a connection refused is not one of them here (no broker). */
function isRetriable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 5; depth++) {
    const x = e as { retriable?: unknown; type?: unknown; name?: unknown; cause?: unknown; errors?: unknown }
    if (x.name === 'KafkaJSConnectionError' || x.name === 'KafkaJSNumberOfRetriesExceeded') return false
    if (x.name === 'KafkaJSSASLAuthenticationError') return false
    if (x.retriable === true) return true
    const transient = [
      'UNKNOWN_TOPIC_OR_PARTITION',
      'LEADER_NOT_AVAILABLE',
      'NOT_LEADER_FOR_PARTITION',
      'TOPIC_ALREADY_EXISTS',
    ]
    if (typeof x.type === 'string' && transient.includes(x.type)) return true
    if (Array.isArray(x.errors) && x.errors.length > 0) return x.errors.every((y) => isRetriable(y))
    e = x.cause
  }
  return false
}

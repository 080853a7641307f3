/**
 * Protocol versions: what the broker accepts (an ApiVersions v0 request over a
 * raw socket, independent of any client) and which version kafkajs sends for
 * each API. kafkajs sends min(its newest implemented version, the broker's
 * newest) and never looks at the broker's oldest, so a broker that dropped old
 * versions (Kafka 4, KIP-896) breaks exactly the APIs where that number is below
 * the broker's minimum.
 */
import { createRequire } from 'node:module'
import net from 'node:net'

export interface VersionRange {
  min: number
  max: number
}

/** The broker's supported version range per API key. */
export function brokerApiVersions(broker: string, timeoutMs = 10_000): Promise<Map<number, VersionRange>> {
  const at = broker.lastIndexOf(':')
  const host = broker.slice(0, at)
  const port = Number(broker.slice(at + 1))
  const clientId = Buffer.from('benchstream-api-versions')
  // Header v1: api_key, api_version, correlation_id, client_id (nullable string); v0 has no body.
  const body = Buffer.alloc(2 + 2 + 4 + 2 + clientId.length)
  body.writeInt16BE(18, 0) // ApiVersions
  body.writeInt16BE(0, 2)
  body.writeInt32BE(1, 4)
  body.writeInt16BE(clientId.length, 8)
  clientId.copy(body, 10)
  const size = Buffer.alloc(4)
  size.writeInt32BE(body.length)
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port })
    let buf = Buffer.alloc(0)
    const timer = setTimeout(
      () => socket.destroy(new Error(`no ApiVersions response from ${broker} within ${timeoutMs} ms`)),
      timeoutMs,
    )
    socket.on('connect', () => socket.write(Buffer.concat([size, body])))
    socket.on('error', (err) => {
      clearTimeout(timer)
      reject(err)
    })
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d])
      if (buf.length < 4 || buf.length < 4 + buf.readInt32BE(0)) return
      clearTimeout(timer)
      socket.end()
      // Response v0: correlation_id, error_code, [api_key, min_version, max_version].
      const error = buf.readInt16BE(8)
      if (error !== 0) return reject(new Error(`ApiVersions error code ${error} from ${broker}`))
      const n = buf.readInt32BE(10)
      const out = new Map<number, VersionRange>()
      for (let i = 0, o = 14; i < n; i++, o += 6)
        out.set(buf.readInt16BE(o), { min: buf.readInt16BE(o + 2), max: buf.readInt16BE(o + 4) })
      resolve(out)
    })
  })
}

/**
 * The request names kafkajs uses for the calls Benchstream and its tests make (admin, idempotent producer, group
 * consumer).
 */
export const KAFKAJS_APIS_USED = [
  'ApiVersions',
  'Metadata',
  'CreateTopics',
  'ListOffsets',
  'InitProducerId',
  'Produce',
  'GroupCoordinator',
  'JoinGroup',
  'SyncGroup',
  'Heartbeat',
  'LeaveGroup',
  'Fetch',
  'OffsetCommit',
  'OffsetFetch',
  'DescribeGroups',
] as const

/** For each API name: its key and the newest version this kafkajs implements (from kafkajs' own request table). */
export function kafkajsVersions(): Map<string, { key: number; max: number }> {
  const require = createRequire(import.meta.url)
  const apiKeys = require('kafkajs/src/protocol/requests/apiKeys') as Record<string, number>
  const { requests } = require('kafkajs/src/protocol/requests') as { requests: Record<string, { versions: string[] }> }
  const out = new Map<string, { key: number; max: number }>()
  for (const [name, key] of Object.entries(apiKeys)) {
    const versions = (requests[name]?.versions ?? []).map(Number)
    if (versions.length > 0) out.set(name, { key, max: Math.max(...versions) })
  }
  return out
}

/** The APIs of `names` kafkajs would send at a version the broker rejects (or that the broker lacks), described. */
export function unsupportedByBroker(broker: Map<number, VersionRange>, names: readonly string[]): string[] {
  const kjs = kafkajsVersions()
  const bad: string[] = []
  for (const name of names) {
    const k = kjs.get(name)
    if (k === undefined) {
      bad.push(`${name}: not implemented by kafkajs`)
      continue
    }
    const b = broker.get(k.key)
    if (b === undefined) {
      bad.push(`${name} (key ${k.key}): not offered by the broker`)
      continue
    }
    const sent = Math.min(k.max, b.max)
    if (sent < b.min) bad.push(`${name} (key ${k.key}): kafkajs sends v${sent}, the broker accepts v${b.min}-${b.max}`)
  }
  return bad
}

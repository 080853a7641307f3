/**
 * Waiting for a broker to accept connections: a command started beside the one that starts it (`benchstream server &
 * benchstream agent &`: the server starts the local broker first) waits, saying so, instead of failing on a refused
 * connection. TCP only: whether it speaks Kafka (or TLS) is for the client that connects next.
 */
import net from 'node:net'

/** Whether host:port accepts a TCP connection within timeoutMs. */
function answers(address: string, timeoutMs: number): Promise<boolean> {
  const at = address.lastIndexOf(':')
  const host = address.slice(0, at).replace(/^\[|\]$/g, '')
  const port = Number(address.slice(at + 1))
  return new Promise((resolve) => {
    const s = net.connect({ host, port })
    const done = (ok: boolean): void => {
      s.destroy()
      resolve(ok)
    }
    s.setTimeout(timeoutMs, () => done(false))
    s.once('connect', () => done(true))
    s.once('error', () => done(false))
  })
}

/**
 * Resolves true once any of brokers (host:port) accepts a connection, false after timeoutMs. onWait is told once,
 * when the first try fails.
 */
export async function waitForBrokers(
  brokers: readonly string[],
  timeoutMs: number,
  onWait: () => void,
  pollMs = 500,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  for (let first = true; ; first = false) {
    const up = await Promise.all(brokers.map((b) => answers(b, 1000)))
    if (up.some((x) => x)) return true
    if (Date.now() >= deadline) return false
    if (first) onWait()
    await new Promise((r) => setTimeout(r, pollMs))
  }
}

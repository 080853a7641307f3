/**
 * A lean Redis connection (RESP2 over one TCP socket) for the redis binding.
 *
 * Why not a general client: a benchmark driver should spend as little as
 * possible of its own time per operation, so that what it measures is the
 * datastore. Measured on the same server and machine (8 connections, HGETALL
 * of 10 x 100-byte fields), ioredis 6 cost about 19 µs of JS per operation
 * and this connection about 8: it writes each command with one socket write
 * and, for replies the binding only counts (HGETALL, HMGET), walks the bytes
 * without building strings or objects (`sizes`).
 *
 * Semantics the binding relies on:
 * - commands on one connection are answered in order (FIFO), so several
 *   client threads may share a connection, and a transaction written in one
 *   write (MULTI ... EXEC) is never interleaved with another thread's command;
 * - a command unanswered after `timeoutMs` fails with "Command timed out"
 *   and the connection is dropped (its replies would be out of step);
 * - a lost connection fails every command in flight with a message naming the
 *   connection; the next command reconnects, at most once per backoff step,
 *   so a server that is down yields failed operations at a bounded rate.
 */
import { createHash } from 'node:crypto'
import net from 'node:net'

/** An error reply of the server (`-ERR ...`). */
export class RedisReplyError extends Error {
  override readonly name = 'RedisReplyError'
}

/** What the binding learns from an array of bulk strings without decoding it. */
export interface ReplySizes {
  /** Elements of the array (0 for an empty or nil array). */
  count: number
  /** Nil elements. */
  nils: number
  /** Bytes of all non-nil elements. */
  bytes: number
  /** Bytes of the elements at odd positions (the values of a HGETALL reply). */
  oddBytes: number
}

export interface RespOptions {
  host: string
  port: number
  password: string | undefined
  db: number
  /** Connect and per-command timeout, ms. */
  timeoutMs: number
}

type Reply = string | number | null | RedisReplyError | ReplySizes | Reply[]

interface Pending {
  resolve: (v: Reply) => void
  reject: (e: Error) => void
  /** Answer an array of bulk strings as ReplySizes. */
  sizes: boolean
  sentAt: number
}

/** Reconnect backoff after a failed connect: first and longest wait, ms. */
const BACKOFF_FIRST_MS = 50
const BACKOFF_MAX_MS = 2000
const CR = 13

/** Encodes one command in RESP (an array of bulk strings). */
function encode(args: readonly string[]): string {
  let s = `*${args.length}\r\n`
  for (const a of args) s += `$${Buffer.byteLength(a)}\r\n${a}\r\n`
  return s
}

/** A decimal integer between start and end (exclusive), with an optional minus sign. */
function readInt(buf: Buffer, start: number, end: number): number {
  let i = start
  let neg = false
  if (buf[i] === 45) {
    neg = true
    i++
  }
  let n = 0
  for (; i < end; i++) n = n * 10 + (buf[i]! - 48)
  return neg ? -n : n
}

export class RespConnection {
  /** The connection commands go to: set once its handshake is done. */
  private socket: net.Socket | undefined
  /** The socket being read (also during the handshake). */
  private current: net.Socket | undefined
  private connecting: Promise<net.Socket> | undefined
  private readonly pending: Pending[] = []
  /** Bytes received and not parsed yet (a reply split over packets). */
  private rest: Buffer | undefined
  private value: Reply = null
  private watchdog: NodeJS.Timeout | undefined
  private backoffMs = 0
  private retryAt = 0
  private closed = false
  private readonly name: string

  constructor(private readonly opts: Readonly<RespOptions>) {
    this.name = `${opts.host}:${opts.port}`
  }

  /** Connects (AUTH, SELECT, PING); rejects with what went wrong. */
  async connect(): Promise<void> {
    await this.ensure()
  }

  /** Sends one command; resolves with its reply, rejects with a RedisReplyError or a connection error. */
  command(args: readonly string[], sizes = false): Promise<Reply> {
    const socket = this.socket
    if (socket !== undefined) return this.send(socket, encode(args), sizes)
    return this.ensure().then((s) => this.send(s, encode(args), sizes))
  }

  /** Sends several commands in one write; resolves with every reply (error replies included as RedisReplyError). */
  commands(list: ReadonlyArray<readonly string[]>, sizes = false): Promise<Reply[]> {
    let text = ''
    for (const args of list) text += encode(args)
    const run = (s: net.Socket): Promise<Reply[]> =>
      new Promise<Reply[]>((resolve, reject) => {
        const replies: Reply[] = []
        let left = list.length
        let failed = false
        const now = performance.now()
        for (let i = 0; i < list.length; i++) {
          const done = (v: Reply): void => {
            replies[i] = v
            if (--left === 0 && !failed) resolve(replies)
          }
          // Error replies are values here; a lost connection fails the whole batch.
          const fail = (e: Error): void => {
            if (e instanceof RedisReplyError) done(e)
            else if (!failed) {
              failed = true
              reject(e)
            }
          }
          this.pending.push({ resolve: done, reject: fail, sizes, sentAt: now })
        }
        s.write(text)
      })
    const socket = this.socket
    return socket !== undefined ? run(socket) : this.ensure().then(run)
  }

  /** Sends QUIT and closes; commands in flight fail. */
  async close(): Promise<void> {
    this.closed = true
    const s = this.socket
    if (s === undefined) return
    await Promise.race([
      this.send(s, encode(['QUIT']), false).catch(() => undefined),
      new Promise((r) => setTimeout(r, 1000).unref()),
    ])
    s.destroy()
  }

  private send(socket: net.Socket, text: string, sizes: boolean): Promise<Reply> {
    return new Promise<Reply>((resolve, reject) => {
      this.pending.push({ resolve, reject, sizes, sentAt: performance.now() })
      socket.write(text)
    })
  }

  private ensure(): Promise<net.Socket> {
    if (this.socket !== undefined) return Promise.resolve(this.socket)
    if (this.closed) return Promise.reject(new Error(`connection to redis at ${this.name} is closed`))
    this.connecting ??= this.open().finally(() => {
      this.connecting = undefined
    })
    return this.connecting
  }

  private async open(): Promise<net.Socket> {
    const wait = this.retryAt - performance.now()
    if (wait > 0) await new Promise((r) => setTimeout(r, wait))
    let socket: net.Socket
    try {
      socket = await new Promise<net.Socket>((resolve, reject) => {
        const s = net.connect({ host: this.opts.host, port: this.opts.port, noDelay: true })
        s.setTimeout(this.opts.timeoutMs, () =>
          s.destroy(new Error(`connect to ${this.name} timed out after ${this.opts.timeoutMs} ms`)),
        )
        s.once('error', reject)
        s.once('connect', () => {
          s.setTimeout(0)
          s.off('error', reject)
          resolve(s)
        })
      })
      this.attach(socket)
      // The connection is handed out only after the handshake, so that no
      // command can run before AUTH and SELECT.
      const handshake: Array<Promise<Reply>> = []
      if (this.opts.password !== undefined)
        handshake.push(this.send(socket, encode(['AUTH', this.opts.password]), false))
      if (this.opts.db !== 0) handshake.push(this.send(socket, encode(['SELECT', String(this.opts.db)]), false))
      handshake.push(this.send(socket, encode(['PING']), false))
      const results = await Promise.allSettled(handshake)
      const bad = results.find((r) => r.status === 'rejected')
      if (bad !== undefined) {
        socket.destroy()
        throw bad.reason
      }
    } catch (err) {
      this.backoffMs = Math.min(BACKOFF_MAX_MS, Math.max(BACKOFF_FIRST_MS, this.backoffMs * 2))
      this.retryAt = performance.now() + this.backoffMs
      throw err
    }
    this.backoffMs = 0
    this.socket = socket
    return socket
  }

  /** Wires a connected socket: replies, loss, and the timeout watchdog. */
  private attach(socket: net.Socket): void {
    this.rest = undefined
    let why: Error | undefined
    this.current = socket
    socket.on('data', (chunk: Buffer) => this.onData(chunk))
    socket.on('error', (err) => {
      why = err
    })
    socket.on('close', () => {
      if (this.socket === socket) this.socket = undefined
      if (this.current === socket) this.current = undefined
      if (this.watchdog !== undefined) clearInterval(this.watchdog)
      this.watchdog = undefined
      this.rest = undefined
      const err = new Error(
        why?.message.includes('timed out') === true
          ? why.message
          : `connection to redis at ${this.name} lost${why === undefined ? '' : `: ${why.message}`}`,
      )
      for (const p of this.pending.splice(0)) p.reject(err)
    })
    const t = this.opts.timeoutMs
    this.watchdog = setInterval(
      () => {
        const head = this.pending[0]
        if (head !== undefined && performance.now() - head.sentAt > t)
          socket.destroy(new Error(`Command timed out after ${t} ms (redis at ${this.name})`))
      },
      Math.max(10, Math.min(250, t / 4)),
    )
    this.watchdog.unref()
  }

  private onData(chunk: Buffer): void {
    let buf = chunk
    if (this.rest !== undefined) {
      buf = Buffer.concat([this.rest, chunk])
      this.rest = undefined
    }
    let pos = 0
    const n = buf.length
    while (pos < n) {
      const p = this.pending[0]
      if (p === undefined) {
        this.current?.destroy(new Error(`unexpected data from redis at ${this.name}`))
        return
      }
      let next: number
      try {
        next = this.parse(buf, pos, p.sizes)
      } catch (err) {
        this.current?.destroy(err as Error)
        return
      }
      if (next < 0) break
      pos = next
      this.pending.shift()
      const v = this.value
      this.value = null
      if (v instanceof RedisReplyError) p.reject(v)
      else p.resolve(v)
    }
    if (pos < n) this.rest = buf.subarray(pos)
  }

  /**
   * Parses one reply at pos into this.value; returns the position after it,
   * or -1 when the buffer ends before the reply does.
   */
  private parse(buf: Buffer, pos: number, sizes: boolean): number {
    const n = buf.length
    if (pos >= n) return -1
    const eol = buf.indexOf(CR, pos + 1)
    if (eol < 0 || eol + 1 >= n) return -1
    switch (buf[pos]) {
      case 43: // + simple string
        this.value = buf.toString('utf8', pos + 1, eol)
        return eol + 2
      case 45: // - error
        this.value = new RedisReplyError(buf.toString('utf8', pos + 1, eol))
        return eol + 2
      case 58: // : integer
        this.value = readInt(buf, pos + 1, eol)
        return eol + 2
      case 36: {
        // $ bulk string
        const len = readInt(buf, pos + 1, eol)
        if (len < 0) {
          this.value = null
          return eol + 2
        }
        const end = eol + 2 + len
        if (end + 2 > n) return -1
        this.value = buf.toString('utf8', eol + 2, end)
        return end + 2
      }
      case 42: {
        // * array
        const count = readInt(buf, pos + 1, eol)
        let p = eol + 2
        if (sizes) {
          const s: ReplySizes = { count: Math.max(0, count), nils: 0, bytes: 0, oddBytes: 0 }
          for (let i = 0; i < count; i++) {
            if (p >= n) return -1
            const e = buf.indexOf(CR, p + 1)
            if (e < 0 || e + 1 >= n) return -1
            if (buf[p] !== 36) {
              // Not a bulk string (never for HGETALL/HMGET): parse it and ignore it.
              const q = this.parse(buf, p, false)
              if (q < 0) return -1
              p = q
              continue
            }
            const len = readInt(buf, p + 1, e)
            if (len < 0) {
              s.nils++
              p = e + 2
              continue
            }
            if (e + 2 + len + 2 > n) return -1
            s.bytes += len
            if ((i & 1) === 1) s.oddBytes += len
            p = e + 2 + len + 2
          }
          this.value = s
          return p
        }
        if (count < 0) {
          this.value = null
          return p
        }
        const items: Reply[] = []
        for (let i = 0; i < count; i++) {
          const q = this.parse(buf, p, false)
          if (q < 0) return -1
          items.push(this.value)
          p = q
        }
        this.value = items
        return p
      }
      default:
        throw new Error(
          `redis at ${this.name} sent a reply of unknown type ${JSON.stringify(String.fromCharCode(buf[pos]!))}`,
        )
    }
  }
}

/** SHA-1 of a Lua script, as EVALSHA names it. */
export function scriptSha(lua: string): string {
  return createHash('sha1').update(lua).digest('hex')
}

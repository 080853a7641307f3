/**
 * The live view: the page at `/`, its static files, and the Server-Sent
 * Events streams it reads.
 *
 *   GET /                          the page (web/live-view/index.html)
 *   GET /experiments               the experiment page (web/live-view/experiments.html): an experiment's matrix,
 *                                  read from /api/v1/experiments, with the live view of its current run in a frame
 *   GET /live/<file>               their styles, their scripts (ES modules compiled from web/src/), and uPlot's own
 *                                  files from node_modules
 *   GET /api/v1/live               a stream of the run list only (a page before any run exists)
 *   GET /api/v1/runs/:id/live      a stream of one run: `snapshot`, then `update` as windows become
 *                                  complete; with ?baseline=B also `baseline-snapshot`/`baseline-update`;
 *                                  `runs` whenever the run list changes; `problem` when a read fails
 *
 * Streams are bounded (API_LIVE_MAX_STREAMS): one more is answered 503
 * BS_ERR_LIVE_LIMIT with Retry-After, and the page says so and retries. A
 * comment line every HEARTBEAT_MS keeps proxies from closing an idle stream;
 * a page that stops reading is cut off when MAX_BUFFERED_BYTES wait for it.
 * When a page goes away its stream stops, and a run's feed stops reading once
 * no page watches it.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import type { ServerResponse } from 'node:http'
import type { FastifyInstance, FastifyReply } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { RunIdParams } from '../../../schemas/api-common.v1.js'
import { LiveQuery, type LiveEvent, type LiveRunItem } from '../../../schemas/live-api.v1.js'
import { repoRoot } from '../../common/repo-root.js'
import { BenchstreamError } from '../../core/errors.js'
import type { ReadModel } from '../../core/ports/read-model.js'
import type { WindowCompleteness } from '../../core/stats/window-completeness.js'
import { RunFeed, type FeedEvent } from './feed.js'

/** A comment line this often keeps idle streams open through proxies. */
const HEARTBEAT_MS = 15_000
/**
 * Bytes that may wait for a slow page before its stream is closed (a snapshot of MAX_LIVE_WINDOWS windows is a few MB).
 */
const MAX_BUFFERED_BYTES = 32 * 1024 * 1024
/** Runs in the page's picker. */
const RUN_LIST_LIMIT = 200
/** How often a stream looks for new runs (the picker need not be as fresh as the windows). */
const RUN_LIST_INTERVAL_MS = 2000
/** How long EventSource waits before reconnecting (the SSE `retry` field). */
const RECONNECT_MS = 2000

export interface LiveViewOptions {
  maxStreams: number
  intervalMs: number
  completeness: WindowCompleteness
  onError?: (err: unknown) => void
}

/** What the live view is doing (shown on /healthz). */
export interface LiveViewStats {
  streamsOpen: number
  streamsRefused: number
  streamsCutSlow: number
  feeds: number
}

/** A file the pages load: its content type and bytes; `hidden` leaves it out of the OpenAPI document. */
interface StaticFile {
  type: string
  body: Buffer
  hidden?: boolean
}

/**
 * The pages' scripts: ES modules that tsc compiled from web/src/ (web/tsconfig.json, `npm run build`), served as
 * they are, /live/<path> for web/src/<path>, so that a module's relative imports resolve to the modules beside it.
 * The modules the pages name (ENTRY_MODULES) are in the OpenAPI document; those they import are not, since they
 * follow the source tree.
 */
const MODULES_DIR = path.join('dist', 'browser', 'web', 'src')
const ENTRY_MODULES = ['live-view/main.js', 'experiments/main.js']

function modules(root: string): Map<string, StaticFile> {
  const dir = path.join(root, MODULES_DIR)
  if (!existsSync(dir))
    throw new Error(
      `the pages' scripts are not built: ${dir} is missing; \`npm run build\` compiles them from web/src/`,
    )
  const out = new Map<string, StaticFile>()
  for (const rel of readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort()) {
    if (!rel.endsWith('.js')) continue
    const url = rel.split(path.sep).join('/')
    out.set(`/live/${url}`, {
      type: 'text/javascript; charset=utf-8',
      body: readFileSync(path.join(dir, rel)),
      hidden: !ENTRY_MODULES.includes(url),
    })
  }
  for (const e of ENTRY_MODULES)
    if (!out.has(`/live/${e}`)) throw new Error(`the pages' script ${e} is not among the modules built in ${dir}`)
  return out
}

/**
 * The pages and their files. Everything is served from this machine: the page
 * must work where nothing outside can be reached, so no CDN.
 *
 * uPlot draws the charts: it is made for live time series (tens of
 * thousands of points redrawn in a few ms on a canvas, setData() for updates,
 * time axes built in), about 50 KB minified with no dependencies, and ships a
 * plain browser build (uPlot.iife.min.js) that a page without a bundler can
 * load with a script tag, ahead of the page's modules.
 */
function staticFiles(): Map<string, StaticFile> {
  const root = repoRoot()
  const web = path.join(root, 'web', 'live-view')
  const require = createRequire(import.meta.url)
  const uplot = path.dirname(require.resolve('uplot/package.json'))
  const html = (file: string) => ({ type: 'text/html; charset=utf-8', body: readFileSync(path.join(web, file)) })
  const css = (file: string) => ({ type: 'text/css; charset=utf-8', body: readFileSync(path.join(web, file)) })
  return new Map<string, StaticFile>([
    ['/', html('index.html')],
    ['/live/live-view.css', css('live-view.css')],
    // The experiment page: it reads the experiment routes (services/api/experiments.ts) and embeds the page above.
    ['/experiments', html('experiments.html')],
    ['/live/experiments.css', css('experiments.css')],
    [
      '/live/uPlot.iife.min.js',
      { type: 'text/javascript; charset=utf-8', body: readFileSync(path.join(uplot, 'dist', 'uPlot.iife.min.js')) },
    ],
    [
      '/live/uPlot.min.css',
      { type: 'text/css; charset=utf-8', body: readFileSync(path.join(uplot, 'dist', 'uPlot.min.css')) },
    ],
    ...modules(root),
  ])
}

/** A baseline run's event, as its stream names it: `baseline-snapshot`, ...; a problem is the stream's. */
function asBaseline(e: FeedEvent): LiveEvent {
  switch (e.type) {
    case 'snapshot':
      return { type: 'baseline-snapshot', data: e.data }
    case 'update':
      return { type: 'baseline-update', data: e.data }
    case 'alerts':
      return { type: 'baseline-alerts', data: e.data }
    case 'problem':
      return e
  }
}

/** One open event stream. */
class Stream {
  private readonly unsubscribe: Array<() => void> = []
  private readonly timers: NodeJS.Timeout[] = []
  private closed = false

  constructor(
    private readonly res: ServerResponse,
    private readonly onClose: (cutSlow: boolean) => void,
  ) {}

  open(): void {
    this.res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      // Proxies (nginx) must not buffer the stream.
      'x-accel-buffering': 'no',
    })
    // A write to a connection that just broke must not throw; 'close' follows and ends the stream.
    this.res.on('error', () => this.close())
    this.write(`retry: ${RECONNECT_MS}\n\n`)
    this.every(HEARTBEAT_MS, () => this.write(': keep-alive\n\n'))
  }

  send(e: LiveEvent): void {
    this.write(`event: ${e.type}\ndata: ${JSON.stringify(e.data)}\n\n`)
  }

  every(ms: number, fn: () => void): void {
    this.timers.push(setInterval(fn, ms))
  }

  onEnd(fn: () => void): void {
    this.unsubscribe.push(fn)
  }

  close(cutSlow = false): void {
    if (this.closed) return
    this.closed = true
    for (const t of this.timers) clearInterval(t)
    for (const fn of this.unsubscribe) fn()
    this.res.end()
    this.onClose(cutSlow)
  }

  private write(text: string): void {
    if (this.closed) return
    this.res.write(text)
    if (this.res.writableLength > MAX_BUFFERED_BYTES) this.close(true)
  }
}

export interface LiveView {
  plugin: (app: FastifyInstance) => Promise<void>
  stats: LiveViewStats
}

/** The live view's routes over a read model; register `plugin`, read `stats`. */
export function liveView(rm: ReadModel, opts: LiveViewOptions): LiveView {
  const files = staticFiles()
  const streams = new Set<Stream>()
  const feeds = new Map<string, RunFeed>()
  const stats: LiveViewStats = { streamsOpen: 0, streamsRefused: 0, streamsCutSlow: 0, feeds: 0 }
  let reserved = 0

  const reserve = (): void => {
    if (reserved >= opts.maxStreams) {
      stats.streamsRefused++
      throw new BenchstreamError(
        'BS_ERR_LIVE_LIMIT',
        `${opts.maxStreams} live views are open, the most this server serves at once (API_LIVE_MAX_STREAMS); ` +
          `close one or raise the limit; retry after a few seconds`,
      )
    }
    reserved++
  }

  const watch = (runId: string, fn: (e: FeedEvent) => void): (() => void) => {
    let feed = feeds.get(runId)
    if (feed === undefined) {
      feed = new RunFeed(runId, rm, {
        intervalMs: opts.intervalMs,
        completeness: opts.completeness,
        ...(opts.onError === undefined ? {} : { onError: opts.onError }),
      })
      feeds.set(runId, feed)
      stats.feeds = feeds.size
    }
    const f = feed
    const off = f.subscribe(fn)
    return () => {
      off()
      if (f.listening === 0) {
        f.close()
        feeds.delete(runId)
        stats.feeds = feeds.size
      }
    }
  }

  /** Pushes the run list when it changes (the list is cached for a second by the read model). */
  const runList = (s: Stream): void => {
    let last = ''
    const push = async (): Promise<void> => {
      const runs = await rm.listRuns(RUN_LIST_LIMIT)
      const items: LiveRunItem[] = runs.map((r) => ({
        run_id: r.run_id,
        started_at: r.started_at,
        ended_at: r.ended_at,
        operations: Number(r.operations),
        origin: r.origin ?? 'events',
      }))
      const key = JSON.stringify(items.map((r) => [r.run_id, r.ended_at, r.origin]))
      if (key === last) return
      last = key
      s.send({ type: 'runs', data: { runs: items } })
    }
    const tick = (): void => void push().catch((err: unknown) => opts.onError?.(err))
    tick()
    s.every(Math.max(opts.intervalMs, RUN_LIST_INTERVAL_MS), tick)
  }

  const start = (reply: FastifyReply): Stream => {
    void reply.hijack()
    const s = new Stream(reply.raw, (cutSlow) => {
      streams.delete(s)
      reserved--
      stats.streamsOpen = streams.size
      if (cutSlow) stats.streamsCutSlow++
    })
    streams.add(s)
    stats.streamsOpen = streams.size
    s.open()
    // The page went away (or the connection broke): stop its work.
    reply.raw.on('close', () => s.close())
    return s
  }

  const plugin = async (app: FastifyInstance): Promise<void> => {
    const typed = app.withTypeProvider<TypeBoxTypeProvider>()
    for (const [url, f] of files) {
      typed.get(url, { schema: { hide: f.hidden === true } }, async (_req, reply) =>
        reply
          .type(f.type)
          .header('cache-control', 'no-cache')
          .header('x-content-type-options', 'nosniff')
          // Scripts and styles from this server only; uPlot sets element styles from script, which 'unsafe-inline' for
          // styles allows. Framed by this server's own pages only (the experiment page embeds the live view).
          .header(
            'content-security-policy',
            "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; " +
              "frame-ancestors 'self'",
          )
          .send(f.body),
      )
    }

    typed.get('/api/v1/live', async (_req, reply) => {
      reserve()
      runList(start(reply))
      return reply
    })

    typed.get(
      '/api/v1/runs/:runId/live',
      { schema: { params: RunIdParams, querystring: LiveQuery } },
      async (req, reply) => {
        const runId = req.params.runId
        const baseline = req.query.baseline
        reserve()
        try {
          for (const id of baseline === undefined ? [runId] : [runId, baseline]) {
            if ((await rm.getRun(id)) === undefined)
              throw new BenchstreamError(
                'BS_ERR_NOT_FOUND',
                `run ${JSON.stringify(id)} is not known (yet): GET /api/v1/runs lists the runs`,
              )
          }
        } catch (err) {
          reserved--
          throw err
        }
        const s = start(reply)
        runList(s)
        s.onEnd(watch(runId, (e) => s.send(e)))
        if (baseline !== undefined) s.onEnd(watch(baseline, (e) => s.send(asBaseline(e))))
        return reply
      },
    )

    // Streams never end by themselves: end them before the server closes, or close() would wait for them.
    app.addHook('preClose', async () => {
      // close() removes the stream from the set; a Set iterator skips what is deleted meanwhile.
      for (const s of streams) s.close()
      for (const f of feeds.values()) f.close()
      feeds.clear()
      stats.feeds = 0
    })
  }

  return { plugin, stats }
}

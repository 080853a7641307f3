/**
 * `benchstream processor`: the processor, and (unless --no-api) the API in
 * the same process. In the embedded ClickHouse mode that is required: chDB
 * binds its data directory to one process, so the process that writes the
 * windows also serves them.
 */
import type { FastifyInstance } from 'fastify'
import { ClickHouseWindowStore } from '../adapters/clickhouse-window-store.js'
import { migrate, openClickHouse, type ClickHouse } from '../adapters/clickhouse.js'
import { createKafka, ensureTopics } from '../adapters/kafka.js'
import { build } from '../api/app.js'
import { readApiConfig } from '../api/config.js'
import type { Env } from '../common/env.js'
import { readProcessorConfig } from './config.js'
import { Processor, type ProcessorHooks } from './processor.js'

export interface ProcessorService {
  processor: Processor
  ch: ClickHouse
  api: FastifyInstance | undefined
  /** http://host:port of the API, when it runs. */
  apiUrl: string | undefined
  stop(): Promise<void>
}

export async function startProcessorService(env: Env, opts: { api: boolean; hooks?: ProcessorHooks }): Promise<ProcessorService> {
  const cfg = readProcessorConfig(env)
  const apiCfg = readApiConfig(env)
  const ch = openClickHouse(cfg.infra.clickhouse)
  await migrate(ch, { opsTtlDays: cfg.infra.clickhouse.opsTtlDays })
  const kafka = createKafka(cfg.infra.kafka, 'processor')
  await ensureTopics(kafka, cfg.infra.kafka, cfg.infra.topics)
  const processor = new Processor(cfg, kafka, new ClickHouseWindowStore(ch), opts.hooks)
  await processor.start()
  let api: FastifyInstance | undefined
  let apiUrl: string | undefined
  if (opts.api) {
    api = build(apiCfg, { ch, status: () => ({ processor: processor.stats }) })
    await api.listen({ host: apiCfg.host, port: apiCfg.port })
    const addr = api.server.address()
    apiUrl = typeof addr === 'object' && addr !== null ? `http://${apiCfg.host}:${addr.port}` : undefined
  }
  let stopped = false
  return {
    processor,
    ch,
    api,
    apiUrl,
    async stop() {
      if (stopped) return
      stopped = true
      await processor.stop()
      await api?.close()
      await ch.close()
    },
  }
}

export async function processorMain(argv: readonly string[]): Promise<number> {
  const unknown = argv.filter((a) => a !== '--no-api')
  if (unknown.length > 0) throw new Error(`unknown option ${unknown[0]}; benchstream processor accepts --no-api`)
  const svc = await startProcessorService(process.env, { api: !argv.includes('--no-api') })
  process.stderr.write(`processor running: ClickHouse ${svc.ch.mode} at ${svc.ch.location}${svc.apiUrl === undefined ? '' : `, API ${svc.apiUrl}`}\n`)
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve)
    process.once('SIGTERM', resolve)
  })
  process.stderr.write('processor stopping: flushing and committing\n')
  await svc.stop()
  return 0
}

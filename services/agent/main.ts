/**
 * `benchstream agent`: reads its configuration, wires the control topic, the
 * process launcher and the probes into the agent, and runs until SIGINT or
 * SIGTERM (its clients are stopped with it).
 */
import { readFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { waitForBrokers } from '../adapters/kafka/broker-wait.js'
import { KafkaControlBus } from '../adapters/kafka/control-bus.js'
import { ChildProcessLauncher, netProbes } from '../adapters/process/launcher.js'
import { createLogger } from '../common/logger.js'
import { repoRoot } from '../common/repo-root.js'
import { BenchstreamError } from '../core/errors.js'
import { build } from './app.js'
import { AGENT_USAGE, listWorkloads, readAgentConfig, resolveWorkload } from './config.js'

/** How long an agent waits for its broker at start (the local one's first start fetches its jars with Maven). */
const AGENT_KAFKA_WAIT_MS = 600_000

export async function agentMain(argv: readonly string[]): Promise<number> {
  const cfg = readAgentConfig(argv, process.env)
  if (cfg === 'help') {
    process.stdout.write(AGENT_USAGE + '\n')
    return 0
  }
  const log = createLogger(`benchstream-agent-${cfg.name}`, process.env)
  // Started beside the broker's starter (a unit file, `benchstream server & benchstream agent &`): wait for it.
  const brokers = cfg.infra.kafka.brokers
  if (
    !(await waitForBrokers(brokers, AGENT_KAFKA_WAIT_MS, () =>
      log.info({ kafka: brokers.join(',') }, `waiting for Kafka, up to ${AGENT_KAFKA_WAIT_MS / 60_000} minutes`),
    ))
  )
    throw new BenchstreamError(
      'BS_ERR_KAFKA',
      `no Kafka broker answered at ${brokers.join(',')} in ${AGENT_KAFKA_WAIT_MS / 60_000} minutes: start one ` +
        '(`benchstream server` starts the local one when KAFKA_BROKERS is unset), or set KAFKA_BROKERS',
    )
  const version = (JSON.parse(readFileSync(path.join(repoRoot(), 'package.json'), 'utf8')) as { version: string })
    .version
  const agent = build(cfg, {
    bus: KafkaControlBus.create(cfg.infra.kafka, cfg.infra.topics.control, `agent-${cfg.name}`, cfg.infra.topics),
    launcher: new ChildProcessLauncher(),
    probes: netProbes,
    now: () => Date.now() + cfg.clockSkewMs,
    log,
    host: { hostname: os.hostname(), pid: process.pid, cores: os.availableParallelism(), version },
    benchstream: { command: process.execPath, args: [path.join(repoRoot(), 'bin', 'benchstream.js')] },
    env: Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[1] !== undefined)),
    listWorkloads: () => listWorkloads(cfg.workloadDirs),
    resolveWorkload: (name) => resolveWorkload(cfg.workloadDirs, name),
    readFile: (p) => readFileSync(p, 'utf8').slice(0, 64),
  })
  const stopped = new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve())
    process.once('SIGTERM', () => resolve())
  })
  await agent.start()
  await stopped
  log.info('stopping: the clients of this agent are stopped with it')
  await agent.stop()
  return 0
}

/**
 * Commands started beside `benchstream server &` (the guides' first lines, a
 * script) wait for it instead of failing. The server writes its marker into
 * the data folder as it starts (common/server-file.ts), then starts the local
 * broker (KAFKA_BROKERS unset), the engine and the API: a command that needs
 * the broker, or the data folder the server is about to hold, waits until the
 * server is up, and says so on stderr.
 *
 * Only for the local setup (KAFKA_BROKERS unset, the embedded engine, no
 * BENCHSTREAM_API_URL): elsewhere the cluster is not this machine's to wait for.
 */
import { portAnswers } from '../kafka/local-broker.js'
import { readCliEnv } from '../../common/cli-env.js'
import type { Env } from '../../common/config.js'
import { readInfraConfig } from '../../common/infra-config.js'
import { awaitServer, findServer, findStartingServer, markServerStarting } from '../../common/server-file.js'

/**
 * How long a command that needs the broker looks for a server starting beside it when neither answers yet: `npx
 * benchstream server & npx benchstream run ...` starts both at once, and the server's marker follows its own start-up
 * (seconds on a busy machine).
 */
const APPEAR_MS = 10_000
/** Longest wait for a starting server (its first start fetches the Kafka jars with Maven). */
const STARTING_MS = 600_000

/**
 * Waits, when this is the local setup, for a server starting on the data folder. `needsKafka`: the command sends to
 * or reads from the broker (run, load, import-ycsb, ...): when neither a server nor the local broker answers yet, it
 * also looks for one starting beside it for APPEAR_MS. Read commands wait only for a server already starting (it is
 * about to hold the data folder).
 */
export async function waitBesideStartingServer(env: Env, needsKafka: boolean): Promise<void> {
  if (readCliEnv(env).apiUrl !== undefined) return
  const infra = readInfraConfig(env)
  const local = infra.kafka.local
  if (local === undefined || infra.clickhouse.url !== undefined) return
  if (findServer(infra.dataDir) !== undefined) return
  const starting = findStartingServer(infra.dataDir) !== undefined
  if (!starting && (!needsKafka || (await portAnswers(local.port)))) return
  const say = (pid: number | undefined): void =>
    void process.stderr.write(
      pid === undefined
        ? `benchstream: no Kafka broker answers on ${infra.kafka.brokers[0]} and no server runs on ` +
            `${infra.dataDir}: looking for one starting, up to ${APPEAR_MS / 1000} s\n`
        : `benchstream: waiting for the server starting on ${infra.dataDir} (pid ${pid}; it starts the local ` +
            `Kafka broker first), up to ${STARTING_MS / 60_000} minutes\n`,
    )
  const up = await awaitServer(infra.dataDir, {
    appearMs: APPEAR_MS,
    startingMs: STARTING_MS,
    onWait: say,
    // The local broker alone, started by other means, is enough for a command that needs only Kafka.
    ...(needsKafka ? { alsoDone: () => portAnswers(local.port) } : {}),
  })
  if (up === undefined && starting)
    process.stderr.write(`benchstream: the server starting on ${infra.dataDir} did not come up; going on\n`)
}

/**
 * `benchstream server` says at once that it is starting (before it loads its modules), so that a command started on
 * the next line finds the marker as early as possible. The server rewrites and removes it (server/main.ts).
 */
export function markStarting(env: Env): void {
  markServerStarting(readInfraConfig(env).dataDir)
}

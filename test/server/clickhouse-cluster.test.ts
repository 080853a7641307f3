/**
 * A ClickHouse cluster as far as the stand-in goes (npm run test:server): Apache ZooKeeper (deploy/local/zookeeper.sh)
 * and two stand-ins (deploy/local/clickhouse.sh) configured as one shard of two replicas through config.d
 * (remote_servers,
 * macros, zookeeper, distributed_ddl, interserver_http_port), which is how the Helm chart configures real servers.
 *
 * What it shows, each asserted and each refusal quoted (docs/guides/deploy.md#a-local-clickhouse-server):
 *  - the configuration is taken: both servers list the cluster and their own macros;
 *  - the cluster form of the migrations (CLICKHOUSE_CLUSTER) is refused at its first ON CLUSTER statement;
 *  - its replicated table, created on each replica directly, registers in ZooKeeper but never leaves read-only
 *    mode: clickhouse-local starts no interserver listener, and a replica cannot activate without one.
 * So the cluster is not executed here: its statements stay checked by ClickHouse's parser
 * (test/integration/clickhouse-cluster-sql.test.ts), and a real cluster is needed for the rest.
 */
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { loadMigrations, migrate, openClickHouse } from '../../services/adapters/clickhouse/client.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { BenchstreamError } from '../../services/core/errors.js'
import { testEnv, waitFor } from '../helpers/env.js'
import { freePort, rawClient, rows, startStandIn, tierServer, type StandIn } from '../helpers/clickhouse-server.js'

const ZOOKEEPER_SH = path.join(repoRoot(), 'deploy', 'local', 'zookeeper.sh')
const CLUSTER = 'bs_cluster'
const server = tierServer()

function zookeeper(port: number, dataDir: string, command: 'start' | 'stop'): string {
  const r = spawnSync('bash', [ZOOKEEPER_SH, command], {
    env: { ...process.env, ZOOKEEPER_PORT: String(port), ZOOKEEPER_DATA_DIR: dataDir },
    encoding: 'utf8',
  })
  if (r.status !== 0) throw new Error(`zookeeper.sh ${command} failed (${r.status}): ${r.stderr}${r.stdout}`)
  return r.stdout
}

/** ZooKeeper's own count of its znodes (the `srvr` four-letter command). */
async function znodes(port: number): Promise<number> {
  const r = spawnSync('bash', ['-c', `exec 3<>/dev/tcp/127.0.0.1/${port} && printf srvr >&3 && timeout 5 cat <&3`], {
    encoding: 'utf8',
  })
  const m = /^Node count: (\d+)$/m.exec(r.stdout)
  if (m === null) throw new Error(`no node count from ZooKeeper's srvr: ${r.stdout}${r.stderr}`)
  return Number(m[1])
}

const quote = (err: unknown): string => String((err as Error).message).replace(/\s+/g, ' ')

test(
  'a cluster of two stand-ins and ZooKeeper: the configuration is taken; ON CLUSTER and replication are refused, ' +
    'quoted',
  { skip: typeof server === 'string' ? server : false, timeout: 300_000 },
  async (t) => {
    const zkPort = await freePort()
    const zkDir = mkdtempSync(path.join(os.tmpdir(), 'benchstream-test-zookeeper-'))
    t.after(() => {
      try {
        zookeeper(zkPort, zkDir, 'stop')
      } finally {
        rmSync(zkDir, { recursive: true, force: true })
      }
    })
    zookeeper(zkPort, zkDir, 'start')

    const ports = [] as Array<{ httpPort: number; tcpPort: number; interserver: number }>
    for (let i = 0; i < 2; i++)
      ports.push({ httpPort: await freePort(), tcpPort: await freePort(), interserver: await freePort() })
    const config = (i: number): string => `<clickhouse>
  <remote_servers><${CLUSTER}><shard><internal_replication>true</internal_replication>
${ports.map((p) => `    <replica><host>127.0.0.1</host><port>${p.tcpPort}</port></replica>`).join('\n')}
  </shard></${CLUSTER}></remote_servers>
  <macros><shard>01</shard><replica>r${i + 1}</replica></macros>
  <zookeeper><node><host>127.0.0.1</host><port>${zkPort}</port></node>
    <session_timeout_ms>10000</session_timeout_ms></zookeeper>
  <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>
  <interserver_http_host>127.0.0.1</interserver_http_host>
  <interserver_http_port>${ports[i]!.interserver}</interserver_http_port>
</clickhouse>
`
    const replicas: StandIn[] = []
    for (let i = 0; i < 2; i++)
      replicas.push(
        await startStandIn(t, {
          httpPort: ports[i]!.httpPort,
          tcpPort: ports[i]!.tcpPort,
          configD: { 'cluster.xml': config(i) },
        }),
      )
    const clients = replicas.map((r) => rawClient(t, r))
    const quotes: string[] = []

    // The configuration is taken.
    for (const [i, c] of clients.entries()) {
      const listed = await rows<{ port: number; replica_num: number }>(
        c,
        'SELECT port, replica_num FROM system.clusters WHERE cluster = {c:String} ORDER BY replica_num',
        { c: CLUSTER },
      )
      assert.deepEqual(
        listed.map((r) => Number(r.port)),
        ports.map((p) => p.tcpPort),
      )
      const macros = await rows<{ macro: string; substitution: string }>(
        c,
        'SELECT macro, substitution FROM system.macros',
      )
      assert.deepEqual(Object.fromEntries(macros.map((m) => [m.macro, m.substitution])), {
        shard: '01',
        replica: `r${i + 1}`,
      })
    }

    // The cluster form of the migrations: refused at its first statement, CREATE DATABASE ... ON CLUSTER.
    const database = `bs_cluster_${process.pid}`
    const te = testEnv({ CLICKHOUSE_URL: replicas[0]!.url, CLICKHOUSE_DATABASE: database, CLICKHOUSE_CLUSTER: CLUSTER })
    t.after(te.cleanup)
    const ch = openClickHouse(readInfraConfig(te.env).clickhouse)
    t.after(() => ch.close())
    await assert.rejects(migrate(ch, { opsTtlDays: 0 }), (err: unknown) => {
      assert.ok(err instanceof BenchstreamError && err.code === 'BS_ERR_MIGRATION', quote(err))
      assert.match(quote(err), /failed: Replicated DDL queries are disabled\.\s*$/)
      // The HTTP client keeps the engine's code apart from its message: 392, QUERY_IS_PROHIBITED.
      assert.equal((err.cause as { code?: unknown } | undefined)?.code, '392')
      quotes.push(`migrate() with CLICKHOUSE_CLUSTER: ${quote(err)} (code 392)`)
      return true
    })

    // The cluster form's replicated table, created on each replica without ON CLUSTER: ZooKeeper gets its metadata...
    const create = loadMigrations(database, { cluster: CLUSTER })
      .flatMap((m) => m.statements)
      .find((st) => st.startsWith(`CREATE TABLE IF NOT EXISTS ${database}.ops_local `))
    assert.ok(create !== undefined && / ENGINE = ReplicatedMergeTree\(/.test(create), create)
    const before = await znodes(zkPort)
    for (const c of clients) {
      await c.command({ query: `CREATE DATABASE IF NOT EXISTS ${database}` })
      await c.command({ query: create.replace(` ON CLUSTER ${CLUSTER}`, '') })
    }
    const after = await znodes(zkPort)
    assert.ok(after > before + 10, `the replicas registered the table in ZooKeeper: ${before} -> ${after} znodes`)
    quotes.push(`ZooKeeper's znodes before and after the two CREATE TABLE: ${before} -> ${after}`)
    // ...but no replica becomes writable: each stays read-only, retrying to activate.
    await waitFor(
      'both replicas tried to activate and stayed read-only',
      async () => {
        for (const r of replicas)
          if (
            !readFileSync(path.join(r.dataDir, 'clickhouse-server.log'), 'utf8').includes('Failed to restart the table')
          )
            return undefined
        return true
      },
      60_000,
      500,
    )
    for (const c of clients) {
      const [replica] = await rows<{ is_readonly: number }>(
        c,
        `SELECT is_readonly FROM system.replicas WHERE database = {d:String} AND table = 'ops_local'`,
        { d: database },
      )
      assert.equal(Number(replica!.is_readonly), 1)
      await assert.rejects(
        c.command({
          // Without this the insert keeps retrying for the replica to become writable, past the client's timeout.
          query: `INSERT INTO ${database}.ops_local (run_id) SETTINGS insert_keeper_max_retries = 0 VALUES ('r')`,
        }),
        (err) => {
          assert.match(quote(err), /Table is in readonly mode: replica_path=\/clickhouse\/bs_cluster\/tables\/01\//)
          quotes.push(`INSERT into the replicated table: ${quote(err)}`)
          return true
        },
      )
    }
    const log = readFileSync(path.join(replicas[0]!.dataDir, 'clickhouse-server.log'), 'utf8')
    const restart = /Failed to restart the table\. Will try again: /
    const why = new RegExp(`${restart.source}(Code: \\d+\\. DB::Exception: [^\\n]*?\\(NO_ELEMENTS_IN_CONFIG\\))`).exec(
      log,
    )
    assert.ok(why !== null, 'the server log says why the replica stays read-only')
    assert.match(why[1]!, /Parameter 'interserver_http\(s\)_port' required for replication is not specified/)
    quotes.push(`the replica's restarting thread (server log): ${why[1]}`)
    // interserver_http_port is in the configuration: clickhouse-local does not serve it, and will not be asked to.
    await assert.rejects(clients[0]!.command({ query: 'SYSTEM START LISTEN INTERSERVER HTTP' }), (err) => {
      assert.match(quote(err), /SYSTEM START\/STOP LISTEN in clickhouse-local supports only TCP and HTTP listeners/)
      quotes.push(`SYSTEM START LISTEN INTERSERVER HTTP: ${quote(err)}`)
      return true
    })
    for (const q of quotes) process.stdout.write(`# ${q.slice(0, 600)}\n`)
  },
)

/**
 * TLS material made in the test (openssl: a CA of its own, a certificate for
 * 127.0.0.1 signed by it) and a Kafka broker that speaks only SASL_SSL with
 * SCRAM-SHA-512 (deploy/local/kafka.sh, KAFKA_LISTENER_PROTOCOL=SASL_SSL: no
 * plaintext listener, the controller's listener is TLS too), on free ports in
 * a temporary directory, removed on stop().
 */
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { repoRoot } from '../../services/common/repo-root.js'

export interface TestCa {
  dir: string
  /** The CA's certificate (what clients trust). */
  caFile: string
  /** 127.0.0.1's private key (PKCS#8, unencrypted) and certificate, signed by the CA. */
  keyFile: string
  certFile: string
  /** Key and certificate in one file: Kafka's PEM keystore. */
  keystoreFile: string
}

function openssl(args: string[], cwd: string): void {
  const r = spawnSync('openssl', args, { cwd, encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')} failed: ${r.stderr}`)
}

/** A CA and a server certificate for 127.0.0.1 and localhost, valid for a day, in `dir`. */
export function makeTestCa(dir: string, name = 'benchstream-test-ca'): TestCa {
  const days = ['-days', '1']
  openssl(
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.pem',
      ...days,
      '-subj',
      `/CN=${name}`,
    ],
    dir,
  )
  const csr = ['-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1']
  openssl(['req', '-newkey', 'rsa:2048', '-nodes', ...csr], dir)
  writeFileSync(path.join(dir, 'san.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n')
  const sign = ['-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-extfile', 'san.cnf']
  openssl(['x509', '-req', '-in', 'server.csr', '-out', 'server.pem', ...days, ...sign], dir)
  const keystoreFile = path.join(dir, 'keystore.pem')
  writeFileSync(
    keystoreFile,
    readFileSync(path.join(dir, 'server.key'), 'utf8') + readFileSync(path.join(dir, 'server.pem'), 'utf8'),
    { mode: 0o600 },
  )
  return {
    dir,
    caFile: path.join(dir, 'ca.pem'),
    keyFile: path.join(dir, 'server.key'),
    certFile: path.join(dir, 'server.pem'),
    keystoreFile,
  }
}

export interface SecureBroker {
  /** host:port of the SASL_SSL listener. */
  brokers: string
  port: number
  ca: TestCa
  /** The broker's server.properties as written. */
  config(): string
  stop(): void
}

/** Users created on the broker (user -> password); the first is the brokers' own. */
export const SCRAM_USERS = { admin: 'admin-Secret-1', bench: 'bench-Secret-2' } as const

export async function startSecureBroker(): Promise<SecureBroker> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'benchstream-secure-kafka-'))
  const ca = makeTestCa(dir)
  const [port, controller] = [await freePort(), await freePort()]
  const env = {
    ...process.env,
    KAFKA_PORT: String(port),
    KAFKA_CONTROLLER_PORT: String(controller),
    KAFKA_DATA_DIR: path.join(dir, 'kafka'),
    KAFKA_BROKERS_COUNT: '1',
    KAFKA_LISTENER_PROTOCOL: 'SASL_SSL',
    KAFKA_SSL_KEYSTORE_PEM: ca.keystoreFile,
    KAFKA_SSL_TRUSTSTORE_PEM: ca.caFile,
    KAFKA_SCRAM_USERS: Object.entries(SCRAM_USERS)
      .map(([u, p]) => `${u}:${p}`)
      .join(','),
    KAFKA_STOP_TIMEOUT: '10',
  }
  const script = path.join(repoRoot(), 'deploy', 'local', 'kafka.sh')
  const stop = (): void => {
    spawnSync('bash', [script, 'stop'], { env, stdio: 'ignore' })
    rmSync(dir, { recursive: true, force: true })
  }
  const r = spawnSync('bash', [script, 'start'], { env, encoding: 'utf8' })
  if (r.status !== 0) {
    stop()
    throw new Error(`the SASL_SSL broker did not start: ${r.stderr}${r.stdout}`)
  }
  return {
    brokers: `127.0.0.1:${port}`,
    port,
    ca,
    config: () => readFileSync(path.join(dir, 'kafka', 'server.properties'), 'utf8'),
    stop,
  }
}

async function freePort(): Promise<number> {
  const srv = net.createServer()
  await new Promise<void>((resolve, reject) => {
    srv.once('error', reject)
    srv.listen(0, '127.0.0.1', resolve)
  })
  const addr = srv.address()
  await new Promise((r) => srv.close(r))
  if (addr === null || typeof addr === 'string') throw new Error('could not find a free port')
  return addr.port
}

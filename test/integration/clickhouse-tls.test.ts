/**
 * The ClickHouse client in server mode over TLS with a user and password
 * (CLICKHOUSE_URL=https://..., CLICKHOUSE_CA_FILE, CLICKHOUSE_USER,
 * CLICKHOUSE_PASSWORD), against an HTTPS endpoint of this test's own with a
 * certificate from a CA made here: no ClickHouse server can be installed on
 * the machine these tests run on, so what is checked is our side of it (the
 * CA trusted, the server verified, the credentials sent inside TLS, the URL
 * shown without secrets), not ClickHouse's.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import https from 'node:https'
import os from 'node:os'
import path from 'node:path'
import { test } from 'node:test'
import { openClickHouse } from '../../services/adapters/clickhouse/client.js'
import { readInfraConfig } from '../../services/common/infra-config.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import { makeTestCa } from '../helpers/secure-kafka.js'

test('https with our CA: the server verified, user and password inside TLS; without the CA, refused', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'benchstream-ch-tls-'))
  t.after(() => rmSync(dir, { recursive: true, force: true }))
  const ca = makeTestCa(dir)
  const seen: Array<{ url: string; authorization: string | undefined; user: string | undefined }> = []
  const server = https.createServer({ key: readFileSync(ca.keyFile), cert: readFileSync(ca.certFile) }, (req, res) => {
    seen.push({
      url: req.url ?? '',
      authorization: req.headers.authorization,
      user: req.headers['x-clickhouse-user'] as string | undefined,
    })
    req.resume()
    req.on('end', () => {
      res.writeHead(200, { 'Content-Type': 'text/plain' })
      res.end('Ok.\n')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => new Promise((r) => server.close(r)))
  const port = (server.address() as { port: number }).port
  const env = {
    CLICKHOUSE_URL: `https://127.0.0.1:${port}`,
    CLICKHOUSE_USER: 'bench',
    CLICKHOUSE_PASSWORD: 'ch-Secret-3',
    CLICKHOUSE_CA_FILE: ca.caFile,
    BENCHSTREAM_DATA_DIR: dir,
  }

  const ch = openClickHouse(readInfraConfig(env).clickhouse)
  t.after(() => ch.close())
  assert.equal(ch.mode, 'server')
  await ch.client.command({ query: 'SELECT 1' })
  assert.ok(seen.length > 0)
  const basic = `Basic ${Buffer.from('bench:ch-Secret-3').toString('base64')}`
  assert.ok(
    seen.every((s) => s.authorization === basic || s.user === 'bench'),
    `credentials on every request: ${JSON.stringify(seen)}`,
  )

  // Without the CA the server's certificate does not verify: nothing is sent.
  const before = seen.length
  const untrusted = openClickHouse(readInfraConfig({ ...env, CLICKHOUSE_CA_FILE: '' }).clickhouse)
  t.after(() => untrusted.close())
  await assert.rejects(untrusted.client.command({ query: 'SELECT 1' }), /certificate/i)
  assert.equal(seen.length, before, 'no request reached the server')

  // Credentials in the URL are never shown.
  const inUrl = openClickHouse(
    readInfraConfig({ ...env, CLICKHOUSE_URL: `https://bench:ch-Secret-3@127.0.0.1:${port}` }).clickhouse,
  )
  t.after(() => inUrl.close())
  assert.equal(inUrl.location, `https://127.0.0.1:${port}/`)

  // A CA for a plain http:// URL would not be used: refused at start-up.
  assert.throws(
    () => readInfraConfig({ ...env, CLICKHOUSE_URL: `http://127.0.0.1:${port}` }),
    (e: unknown) => isBenchstreamError(e, 'BS_ERR_CONFIG'),
  )
})

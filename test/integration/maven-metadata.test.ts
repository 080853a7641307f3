/**
 * A bisection's versions from a Maven repository over real HTTP: a local
 * server stands for Maven Central (`--maven-repo`), serving the metadata
 * Maven Central wrote for org.apache.hbase:hbase-server
 * (test/fixtures/maven/), and what a hostile or broken repository sends
 * instead: a 404, a page that is no metadata, a body larger than any metadata
 * (with and without its length announced), an answer that never ends. Read
 * through `benchstream experiment bisect` as a user runs it: the versions it
 * would bisect are printed before anything else is needed, every refusal is
 * one line with its code.
 */
import assert from 'node:assert/strict'
import { readFileSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import path from 'node:path'
import { after, before, test } from 'node:test'
import { fetchMavenMetadata } from '../../services/adapters/http/maven-metadata.js'
import { repoRoot } from '../../services/common/repo-root.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import { cli } from '../helpers/cli.js'
import { testEnv, type TestEnv } from '../helpers/env.js'

const FIXTURE = readFileSync(path.join(repoRoot(), 'test/fixtures/maven/hbase-server-maven-metadata.xml'))
const META = '/org/apache/hbase/hbase-server/maven-metadata.xml'
let server: Server
let repo: string
let te: TestEnv
const served: string[] = []

before(async () => {
  te = testEnv()
  server = createServer((req, res) => {
    served.push(req.url ?? '')
    const [, kind] = /^\/(\w+)\//.exec(req.url ?? '') ?? []
    if (req.url === `/central${META}`) res.end(FIXTURE)
    else if (kind === 'html') res.end('<html><body>Welcome to our repository</body></html>')
    else if (kind === 'huge') {
      // No length announced: the reader has to count.
      res.writeHead(200, { 'content-type': 'application/xml' })
      const chunk = Buffer.alloc(64 * 1024, 0x20)
      let sent = 0
      const more = (): void => {
        while (sent < 8 * 1024 * 1024) {
          sent += chunk.length
          if (!res.write(chunk)) return void res.once('drain', more)
        }
        res.end()
      }
      more()
    } else if (kind === 'long') {
      res.writeHead(200, { 'content-length': String(64 * 1024 * 1024) })
      res.write('<metadata>')
    } else {
      res.statusCode = 404
      res.end('not found')
    }
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  repo = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

after(async () => {
  server.closeAllConnections()
  await new Promise((r) => server.close(r))
  te.cleanup()
})

function planFile(): string {
  const f = path.join(te.dataDir, 'maven-plan.yaml')
  writeFileSync(
    f,
    [
      'version: 1',
      'name: mvn',
      'binding: memory',
      'clients: 1',
      'seconds: 1',
      'repetitions: 3',
      'workloads: [{ file: workloada }]',
      'setups: [{ name: release }]',
      'versions: { maven: "org.apache.hbase:hbase-server", from: { 2.5.10-hadoop3: { properties: { x: 1 } } } }',
    ].join('\n'),
  )
  return f
}

test('the versions between good and bad, as Maven Central lists them, before anything else is needed', async () => {
  const env = { BENCHSTREAM_DATA_DIR: te.dataDir }
  const args = ['experiment', 'bisect', planFile(), '--maven-repo', `${repo}/central`]
  const r = await cli(env, [...args, '--good', '2.5.6-hadoop3', '--bad', '2.5.11-hadoop3'])
  const listed = ['2.5.6', '2.5.7', '2.5.8', '2.5.10', '2.5.11'].map((v) => `${v}-hadoop3`).join(', ')
  assert.ok(r.stderr.includes(`bisecting 5 versions (maven:org.apache.hbase:hbase-server): ${listed}`), r.stderr)
  // Then it needs a server, and says so (a usage error: exit 2).
  assert.equal(r.code, 2)
  assert.match(r.stderr, /BS_ERR_USAGE: an experiment needs a running server/)
  const missing = await cli(env, [...args, '--good', '2.5.9-hadoop3', '--bad', '2.5.11-hadoop3'])
  assert.equal(missing.code, 2)
  assert.match(
    missing.stderr,
    /BS_ERR_USAGE: --good 2\.5\.9-hadoop3 is not among .*; the nearest: 2\.5\.8-hadoop3 and 2\.5\.10-hadoop3/,
  )
  const mixed = await cli(env, [...args, '--good', '2.5.6', '--bad', '2.5.11-hadoop3'])
  assert.match(mixed.stderr, /BS_ERR_USAGE: --good 2\.5\.6 and --bad 2\.5\.11-hadoop3 are different builds/)
  const run = await cli(env, ['experiment', 'run', planFile()])
  assert.match(run.stderr, /BS_ERR_USAGE: .* is a bisection's plan \(it has versions\): benchstream experiment bisect/)
})

test('a repository that answers something else is refused, saying what it sent', async () => {
  const env = { BENCHSTREAM_DATA_DIR: te.dataDir }
  const bisect = (where: string) =>
    cli(env, [
      'experiment',
      'bisect',
      planFile(),
      '--maven-repo',
      `${repo}/${where}`,
      '--good',
      '2.5.6-hadoop3',
      '--bad',
      '2.5.11-hadoop3',
    ])
  const gone = await bisect('nothing')
  assert.equal(gone.code, 1)
  assert.match(
    gone.stderr,
    /BS_ERR_VERSIONS: .*\/nothing\/org\/apache\/hbase\/hbase-server\/maven-metadata\.xml: no such artifact \(HTTP 404/,
  )
  const html = await bisect('html')
  assert.match(
    html.stderr,
    /BS_ERR_VERSIONS: .* is not the Maven metadata of org\.apache\.hbase:hbase-server: no <groupId> and <artifactId>/,
  )
  const huge = await bisect('huge')
  assert.match(huge.stderr, /BS_ERR_VERSIONS: .* sent more than the 4194304 bytes a metadata file may have/)
  const long = await bisect('long')
  assert.match(long.stderr, /BS_ERR_VERSIONS: .* is 67108864 bytes, more than the 4194304 a metadata file may have/)
  const bad = await cli(env, [
    'experiment',
    'bisect',
    planFile(),
    '--maven-repo',
    'file:///etc',
    '--good',
    'a',
    '--bad',
    'b',
  ])
  assert.match(bad.stderr, /BS_ERR_USAGE: --maven-repo "file:\/\/\/etc": an http\(s\) URL/)
  assert.ok(
    served.every((u) => u.endsWith(META)),
    served.join(' '),
  )
})

test('the fetcher reads within its bound and gives up on a small one', async () => {
  assert.equal((await fetchMavenMetadata(`${repo}/central${META}`)).length, FIXTURE.length)
  await assert.rejects(fetchMavenMetadata(`${repo}/central${META}`, 1000), (e: unknown) =>
    isBenchstreamError(e, 'BS_ERR_VERSIONS'),
  )
})

/**
 * A bisection's versions (services/core/experiments/versions.ts): Maven
 * Central's real maven-metadata.xml of org.apache.hbase:hbase-server
 * (test/fixtures/maven/), natural order, builds (-hadoop3) and pre-releases,
 * the range from good to bad, and metadata that is not what it should be.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { test } from 'node:test'
import { repoRoot } from '../../services/common/repo-root.js'
import { isBenchstreamError } from '../../services/core/errors.js'
import {
  compareVersions,
  listRange,
  MAX_VERSIONS,
  mavenMetadataUrl,
  mavenRange,
  parseMavenMetadata,
  parseVersion,
} from '../../services/core/experiments/versions.js'

const HBASE = readFileSync(path.join(repoRoot(), 'test/fixtures/maven/hbase-server-maven-metadata.xml'), 'utf8')
const ARTIFACT = 'org.apache.hbase:hbase-server'
const parsed = parseMavenMetadata(HBASE, ARTIFACT, 'the fixture')

test('the real metadata: every one of its 200 versions, in natural order', () => {
  assert.equal(parsed.versions.length, 200)
  assert.equal(parsed.rejectedCount, 0)
  const v = parsed.versions
  const before = (a: string, b: string): void => assert.ok(v.indexOf(a) < v.indexOf(b), `${a} before ${b}`)
  before('0.98.9-hadoop1', '0.98.10-hadoop2')
  before('0.98.10-hadoop2', '0.98.10.1-hadoop1')
  before('1.2.9', '1.2.10')
  before('2.0.0-alpha-1', '2.0.0-alpha3')
  before('2.0.0-alpha4', '2.0.0-beta-1')
  before('2.0.0-beta-2', '2.0.0')
  before('2.5.9', '2.5.10')
  before('3.0.0-beta-1', '3.0.0')
  assert.equal(v[0], '0.95.2-hadoop2')
  assert.equal(v.at(-1), '3.0.0')
  for (let i = 1; i < v.length; i++) assert.ok(compareVersions(v[i - 1]!, v[i]!) < 0, `${v[i - 1]} < ${v[i]}`)
})

test('version parts: numbers, pre-releases and builds', () => {
  assert.deepEqual(parseVersion('2.5.10-hadoop3'), {
    text: '2.5.10-hadoop3',
    numbers: [2, 5, 10],
    pre: null,
    flavor: 'hadoop3',
  })
  assert.deepEqual(parseVersion('2.0.0-alpha-1').pre, [1, 1])
  assert.deepEqual(parseVersion('1.0rc2').pre, [4, 2])
  assert.deepEqual(parseVersion('1.2.3-SNAPSHOT').pre, [5, 0])
  assert.deepEqual(parseVersion('1.0.0.Final'), { text: '1.0.0.Final', numbers: [1, 0, 0], pre: null, flavor: '' })
  assert.deepEqual(parseVersion('1.0.0-1').numbers, [1, 0, 0, 1])
  for (const [a, b] of [
    ['1.0', '1.0.1'],
    ['1.0.9', '1.0.10'],
    ['1.0-alpha', '1.0-beta'],
    ['1.0-beta', '1.0-m1'],
    ['1.0-m2', '1.0-rc1'],
    ['1.0-rc1', '1.0-SNAPSHOT'],
    ['1.0-SNAPSHOT', '1.0'],
    ['1.0', '1.0-1'],
    ['1.0.0-dev', '1.0.0-alpha'],
  ] as const)
    assert.ok(compareVersions(a, b) < 0 && compareVersions(b, a) > 0, `${a} < ${b}`)
  assert.equal(compareVersions('1.0', '1.0.0.Final') < 0, true, 'equal releases: ordered by text, never 0')
})

test('good to bad of a Maven artifact: the builds of the ends only, releases only unless asked', () => {
  const all = parsed.versions
  const o = { prereleases: false, source: 'the fixture' }
  assert.deepEqual(mavenRange(all, '2.5.6-hadoop3', '2.5.11-hadoop3', o), [
    '2.5.6-hadoop3',
    '2.5.7-hadoop3',
    '2.5.8-hadoop3',
    '2.5.10-hadoop3', // 2.5.9 has no -hadoop3 build
    '2.5.11-hadoop3',
  ])
  assert.deepEqual(mavenRange(all, '2.5.8', '2.5.11', o), ['2.5.8', '2.5.9', '2.5.10', '2.5.11'])
  assert.deepEqual(mavenRange(all, '1.7.2', '2.0.1', o), ['1.7.2', '2.0.0', '2.0.1'])
  assert.deepEqual(mavenRange(all, '1.7.2', '2.0.1', { ...o, prereleases: true }), [
    '1.7.2',
    '2.0.0-alpha-1',
    '2.0.0-alpha3',
    '2.0.0-alpha4',
    '2.0.0-beta-1',
    '2.0.0-beta-2',
    '2.0.0',
    '2.0.1',
  ])
  // A pre-release end is kept even when pre-releases are not.
  assert.deepEqual(mavenRange(all, '3.0.0-beta-1', '3.0.0', o), ['3.0.0-beta-1', '3.0.0'])
  const usage = (f: () => unknown, re: RegExp): void =>
    assert.throws(f, (e: unknown) => isBenchstreamError(e, 'BS_ERR_USAGE') && re.test((e as Error).message))
  usage(() => mavenRange(all, '2.5.8', '2.5.11-hadoop3', o), /different builds \(plain and hadoop3\)/)
  usage(() => mavenRange(all, '2.5.11', '2.5.8', o), /--good 2\.5\.11 is not older than --bad 2\.5\.8/)
  usage(
    () => mavenRange(all, '2.5.9-hadoop3', '2.5.11-hadoop3', o),
    /--good 2\.5\.9-hadoop3 is not among the fixture; the nearest: 2\.5\.8-hadoop3 and 2\.5\.10-hadoop3/,
  )
})

test('good to bad of a list: as the plan orders it', () => {
  const list = ['a1b2c3', 'd4e5f6', 'f00ba4', '0c0ffee']
  assert.deepEqual(listRange(list, 'd4e5f6', '0c0ffee'), ['d4e5f6', 'f00ba4', '0c0ffee'])
  assert.throws(() => listRange(list, 'f00ba4', 'd4e5f6'), /does not come before --bad d4e5f6/)
  assert.throws(
    () => listRange(list, 'a1b2c4', 'f00ba4'),
    /--good a1b2c4 is not among the plan's versions\.list; did you mean a1b2c3\?/,
  )
})

test('metadata that is not what it should be is refused, saying why', () => {
  const refused = (xml: string, re: RegExp): void =>
    assert.throws(
      () => parseMavenMetadata(xml, ARTIFACT, 'https://repo.example/m.xml'),
      (e: unknown) => isBenchstreamError(e, 'BS_ERR_VERSIONS') && re.test((e as Error).message),
    )
  refused(HBASE.replace('hbase-server', 'hbase-client'), /it is the metadata of org\.apache\.hbase:hbase-client/)
  refused('<html><body>Not Found</body></html>', /no <groupId> and <artifactId>/)
  refused(`<!DOCTYPE m [<!ENTITY x "y">]>${HBASE}`, /declares a DTD or entities/)
  refused(HBASE.replace(/<versions>[\s\S]*<\/versions>/, '<versions></versions>'), /its <versions> list is empty/)
  refused(HBASE.replace(/<versions>/, '<versionz>'), /no <versions> list/)
  const many = Array.from({ length: MAX_VERSIONS + 1 }, (_, i) => `<version>1.${i}</version>`).join('')
  refused(HBASE.replace(/<versions>[\s\S]*<\/versions>/, `<versions>${many}</versions>`), /more than 10000/)
  refused(`${HBASE}${' '.repeat(4 * 1024 * 1024)}`, /over 4194304 bytes/)
  // Versions that cannot name a setup or a run are left out and counted, never silently.
  const junk = parseMavenMetadata(
    HBASE.replace('<version>3.0.0</version>', '<version>3.0.0 beta</version><version>$(rm -rf)</version>'),
    ARTIFACT,
    'x',
  )
  assert.equal(junk.versions.length, 199)
  assert.equal(junk.rejectedCount, 2)
  assert.deepEqual(junk.rejected, ['"3.0.0 beta"', '"$(rm -rf)"'])
  assert.throws(() => mavenMetadataUrl('https://r', 'org/../x:y'), /not groupId:artifactId/)
  assert.equal(
    mavenMetadataUrl('https://repo1.maven.org/maven2/', ARTIFACT),
    'https://repo1.maven.org/maven2/org/apache/hbase/hbase-server/maven-metadata.xml',
  )
})

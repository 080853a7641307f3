/**
 * The versions a bisection goes through (`versions` of a plan): the plan's
 * own list, as ordered, or a Maven artifact's released versions from its
 * maven-metadata.xml (read by services/adapters/http/maven-metadata.ts), in
 * natural order. Pure.
 *
 * Natural order, as Maven orders versions (ComparableVersion) where it
 * matters here: the dotted numbers compared as numbers (1.0.10 after 1.0.9,
 * a missing part is 0), a pre-release before its release (dev < alpha <
 * beta < milestone < rc < SNAPSHOT < the release; alpha-1 < alpha3), and a
 * number after a dash a further part (1.0.0-1 after 1.0.0). Any other word in
 * the qualifier is a flavor, a build of the same release (HBase's
 * 2.5.10-hadoop3 beside 2.5.10): a bisection goes through the versions of
 * good's and bad's flavor only, and pre-releases only when asked.
 *
 * The metadata is input from the network: bounded in size and in versions,
 * refused with DTD or entity declarations, its groupId and artifactId checked
 * against the ones asked for, and every version checked against the rule a
 * version must meet here (ID_PATTERN: it names setups and runs); one that does
 * not is left out and counted, never silently.
 */
import { ID_PATTERN, ID_RULE } from '../../../schemas/events.v1.js'
import { BenchstreamError } from '../errors.js'
import { closest } from '../suggest.js'

/** A maven-metadata.xml larger than this is refused (HBase's, with 200 versions, is 7 kB). */
export const MAX_METADATA_BYTES = 4 * 1024 * 1024
/** Versions in one metadata file at most. */
export const MAX_VERSIONS = 10_000

/** Pre-release words and their order; a release ranks above them all. */
const PRERELEASE: Record<string, number> = {
  dev: 0,
  alpha: 1,
  a: 1,
  ea: 1,
  beta: 2,
  b: 2,
  milestone: 3,
  m: 3,
  rc: 4,
  cr: 4,
  pre: 4,
  preview: 4,
  snapshot: 5,
}
const RELEASE_RANK = 6
/** Words Maven reads as the release itself (1.0.0.Final is 1.0.0). */
const RELEASE_WORDS = new Set(['ga', 'final', 'release'])

export interface ParsedVersion {
  text: string
  numbers: number[]
  /** Pre-release rank and number; null for a release. */
  pre: [number, number] | null
  /** The other words of the qualifier, lower case, joined by '-' ('' for none): which build of a release. */
  flavor: string
}

export function parseVersion(text: string): ParsedVersion {
  const lead = /^\d+(?:\.\d+)*/.exec(text)
  const numbers = lead === null ? [] : lead[0].split('.').map(Number)
  const segments = text
    .slice(lead === null ? 0 : lead[0].length)
    .split(/[-._]/)
    .filter((s) => s !== '')
  let pre: [number, number] | null = null
  const flavor: string[] = []
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i]!.toLowerCase()
    const m = /^([a-z]+)(\d*)$/.exec(seg)
    const rank = m === null ? undefined : PRERELEASE[m[1]!]
    if (RELEASE_WORDS.has(seg)) continue
    if (m !== null && rank !== undefined && pre === null) {
      let n = m[2] === '' ? 0 : Number(m[2])
      // alpha-1: the number is the next segment.
      if (m[2] === '' && /^\d+$/.test(segments[i + 1] ?? '')) n = Number(segments[++i])
      pre = [rank, n]
    } else if (/^\d+$/.test(seg) && flavor.length === 0 && pre === null) numbers.push(Number(seg))
    else flavor.push(seg)
  }
  return { text, numbers, pre, flavor: flavor.join('-') }
}

/** Natural order (see the file comment); a total order, ties broken by the text. */
export function compareVersions(a: string, b: string): number {
  const x = parseVersion(a)
  const y = parseVersion(b)
  for (let i = 0; i < Math.max(x.numbers.length, y.numbers.length); i++) {
    const d = (x.numbers[i] ?? 0) - (y.numbers[i] ?? 0)
    if (d !== 0) return d
  }
  const [xr, xn] = x.pre ?? [RELEASE_RANK, 0]
  const [yr, yn] = y.pre ?? [RELEASE_RANK, 0]
  if (xr !== yr) return xr - yr
  if (xn !== yn) return xn - yn
  if (x.flavor !== y.flavor) return x.flavor < y.flavor ? -1 : 1
  return a < b ? -1 : a > b ? 1 : 0
}

/** The URL of an artifact's maven-metadata.xml under a repository (https://repo1.maven.org/maven2). */
export function mavenMetadataUrl(repository: string, artifact: string): string {
  const [group, name] = splitArtifact(artifact)
  return `${repository.replace(/\/+$/, '')}/${group.replace(/\./g, '/')}/${name}/maven-metadata.xml`
}

function splitArtifact(artifact: string): [string, string] {
  const m = /^([A-Za-z0-9_][A-Za-z0-9_.-]{0,199}):([A-Za-z0-9_][A-Za-z0-9_.-]{0,199})$/.exec(artifact)
  if (m === null || m[1]!.includes('..') || m[2]!.includes('..'))
    throw new BenchstreamError(
      'BS_ERR_PLAN',
      `versions.maven: ${JSON.stringify(artifact.slice(0, 100))} is not groupId:artifactId ` +
        '(letters, digits, _ . -; e.g. org.apache.hbase:hbase-server)',
    )
  return [m[1]!, m[2]!]
}

export interface MavenVersions {
  versions: string[]
  /** Versions the file lists that are not usable as versions here (not ID_PATTERN), at most 20 of them shown. */
  rejected: string[]
  rejectedCount: number
}

/** The versions a maven-metadata.xml lists, in natural order; BS_ERR_VERSIONS when it is not one for `artifact`. */
export function parseMavenMetadata(xml: string, artifact: string, source: string): MavenVersions {
  const [group, name] = splitArtifact(artifact)
  const bad = (why: string): BenchstreamError =>
    new BenchstreamError('BS_ERR_VERSIONS', `${source} is not the Maven metadata of ${artifact}: ${why}`)
  if (xml.length > MAX_METADATA_BYTES) throw bad(`it is over ${MAX_METADATA_BYTES} bytes`)
  if (/<!(?:DOCTYPE|ENTITY)/i.test(xml)) throw bad('it declares a DTD or entities, which metadata never does')
  const field = (tag: string): string | undefined =>
    new RegExp(`<${tag}>\\s*([^<]{0,400}?)\\s*</${tag}>`).exec(xml)?.[1]
  const g = field('groupId')
  const a = field('artifactId')
  if (g === undefined || a === undefined) throw bad('no <groupId> and <artifactId>')
  if (g !== group || a !== name) throw bad(`it is the metadata of ${g.slice(0, 200)}:${a.slice(0, 200)}`)
  const block = /<versions>([\s\S]*?)<\/versions>/.exec(xml)?.[1]
  if (block === undefined) throw bad('no <versions> list')
  const listed = [...block.matchAll(/<version>\s*([^<]{0,400}?)\s*<\/version>/g)].map((m) => m[1]!)
  if (listed.length > MAX_VERSIONS) throw bad(`it lists ${listed.length} versions, more than ${MAX_VERSIONS}`)
  const ok = [...new Set(listed.filter((v) => ID_PATTERN.test(v)))].sort(compareVersions)
  const rejected = listed.filter((v) => !ID_PATTERN.test(v))
  if (ok.length === 0)
    throw bad(
      listed.length === 0 ? 'its <versions> list is empty' : `none of its ${listed.length} versions is ${ID_RULE}`,
    )
  return {
    versions: ok,
    rejected: rejected.slice(0, 20).map((v) => JSON.stringify(v.slice(0, 80))),
    rejectedCount: rejected.length,
  }
}

function notAmong(flag: string, v: string, all: readonly string[], where: string, natural: boolean): BenchstreamError {
  let hint: string
  if (natural) {
    // In version order, the released ones of its build on either side of it: closer than a spelling.
    const flavor = parseVersion(v).flavor
    const same = all.filter((x) => parseVersion(x).flavor === flavor)
    const below = same.filter((x) => compareVersions(x, v) < 0).at(-1)
    const above = same.find((x) => compareVersions(x, v) > 0)
    const near = [below, above].filter((x) => x !== undefined)
    hint = near.length === 0 ? '' : `; the nearest: ${near.join(' and ')}`
  } else {
    const c = closest(v, all)
    hint = c === undefined ? '' : `; did you mean ${c}?`
  }
  return new BenchstreamError(
    'BS_ERR_USAGE',
    `${flag} ${v} is not among ${where}${hint}` +
      ` (${all.length} versions: ${all.slice(0, 3).join(', ')}${all.length > 3 ? ` ... ${all.at(-1)}` : ''})`,
  )
}

/**
 * Good to bad of a Maven artifact's versions (natural order, both included): the versions of their flavor, without
 * pre-releases unless asked for (or one of the ends is one). BS_ERR_USAGE when good or bad is not released, their
 * flavors differ, or good is not older than bad.
 */
export function mavenRange(
  all: readonly string[],
  good: string,
  bad: string,
  o: { prereleases: boolean; source: string },
): string[] {
  if (!all.includes(good)) throw notAmong('--good', good, all, o.source, true)
  if (!all.includes(bad)) throw notAmong('--bad', bad, all, o.source, true)
  const pg = parseVersion(good)
  const pb = parseVersion(bad)
  if (pg.flavor !== pb.flavor)
    throw new BenchstreamError(
      'BS_ERR_USAGE',
      `--good ${good} and --bad ${bad} are different builds (${pg.flavor || 'plain'} and ${pb.flavor || 'plain'}): ` +
        'give two of one build, e.g. both -hadoop3',
    )
  if (compareVersions(good, bad) >= 0)
    throw new BenchstreamError('BS_ERR_USAGE', `--good ${good} is not older than --bad ${bad}`)
  return all
    .filter((v) => {
      const p = parseVersion(v)
      return (
        p.flavor === pg.flavor &&
        (o.prereleases || p.pre === null || v === good || v === bad) &&
        compareVersions(v, good) >= 0 &&
        compareVersions(v, bad) <= 0
      )
    })
    .sort(compareVersions)
}

/** Good to bad of the plan's list, as ordered there (both included). */
export function listRange(list: readonly string[], good: string, bad: string): string[] {
  const g = list.indexOf(good)
  const b = list.indexOf(bad)
  if (g < 0) throw notAmong('--good', good, list, "the plan's versions.list", false)
  if (b < 0) throw notAmong('--bad', bad, list, "the plan's versions.list", false)
  if (g >= b)
    throw new BenchstreamError(
      'BS_ERR_USAGE',
      `--good ${good} does not come before --bad ${bad} in the plan's versions.list (oldest first)`,
    )
  return list.slice(g, b + 1)
}

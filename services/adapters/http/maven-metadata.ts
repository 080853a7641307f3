/**
 * An artifact's maven-metadata.xml from a Maven repository (Maven Central by
 * default), for a bisection's versions. The answer is read within a size
 * bound and a time limit: a repository (or whatever answers at its address)
 * that sends more, or sends it slower, is refused, saying so. The text is
 * parsed by services/core/experiments/versions.ts.
 */
import { BenchstreamError } from '../../core/errors.js'
import { MAX_METADATA_BYTES } from '../../core/experiments/versions.js'

export const MAVEN_CENTRAL = 'https://repo1.maven.org/maven2'
/** The whole request, answer included. */
const TIMEOUT_MS = 30_000

export async function fetchMavenMetadata(url: string, maxBytes = MAX_METADATA_BYTES): Promise<string> {
  let res: Response
  const signal = AbortSignal.timeout(TIMEOUT_MS)
  try {
    res = await fetch(url, { headers: { accept: 'application/xml, text/xml' }, signal, redirect: 'follow' })
  } catch (err) {
    throw new BenchstreamError('BS_ERR_TIMEOUT', `${url} did not answer: ${(err as Error).message}`, { cause: err })
  }
  if (res.status === 404)
    throw new BenchstreamError(
      'BS_ERR_VERSIONS',
      `${url}: no such artifact (HTTP 404); check versions.maven (groupId:artifactId) and --maven-repo`,
    )
  if (!res.ok) {
    await res.body?.cancel().catch(() => undefined)
    throw new BenchstreamError('BS_ERR_VERSIONS', `${url} answered HTTP ${res.status}`, {
      retryable: res.status >= 500,
    })
  }
  const declared = Number(res.headers.get('content-length') ?? NaN)
  if (declared > maxBytes) {
    await res.body?.cancel().catch(() => undefined)
    throw new BenchstreamError(
      'BS_ERR_VERSIONS',
      `${url} is ${declared} bytes, more than the ${maxBytes} a metadata file may have`,
    )
  }
  const chunks: Uint8Array[] = []
  let size = 0
  try {
    for await (const chunk of res.body ?? []) {
      size += chunk.byteLength
      if (size > maxBytes) {
        await res.body?.cancel().catch(() => undefined)
        throw new BenchstreamError(
          'BS_ERR_VERSIONS',
          `${url} sent more than the ${maxBytes} bytes a metadata file may have`,
        )
      }
      chunks.push(chunk)
    }
  } catch (err) {
    if (err instanceof BenchstreamError) throw err
    throw new BenchstreamError('BS_ERR_TIMEOUT', `reading ${url} failed: ${(err as Error).message}`, { cause: err })
  }
  return Buffer.concat(chunks).toString('utf8')
}

/**
 * The ES modules a page loads, followed as the browser follows them, over app.inject(): the pages' scripts are
 * served as tsc emits them from web/src/ (services/api/live/plugin.ts), without a bundler.
 */
import assert from 'node:assert/strict'
import type { FastifyInstance } from 'fastify'

/**
 * The ES modules a page loads from `entry`, following their static imports as the browser does: every one is served
 * as JavaScript, and imports only modules served beside it by relative address (no bare name: nothing resolves one
 * without a bundler; no schemas/ or services/ file: only types come from there, and tsc drops those imports).
 */
export async function servedModules(app: FastifyInstance, entry: string): Promise<Set<string>> {
  const seen = new Set<string>()
  const next = [entry]
  for (let url = next.pop(); url !== undefined; url = next.pop()) {
    if (seen.has(url)) continue
    seen.add(url)
    const r = await app.inject({ method: 'GET', url })
    assert.equal(r.statusCode, 200, `${url} is served`)
    assert.match(r.headers['content-type'] as string, /^text\/javascript/, url)
    for (const m of r.body.matchAll(
      /\b(?:import|export)\b[^'";]*?\bfrom\s*['"]([^'"]+)['"]|\bimport\s*\(?\s*['"]([^'"]+)['"]/g,
    )) {
      const spec = (m[1] ?? m[2])!
      assert.match(spec, /^\.\.?\//, `${url} imports ${spec}: only modules beside it, by relative address`)
      const target = new URL(spec, `http://page${url}`).pathname
      assert.ok(target.startsWith('/live/'), `${url} imports ${spec}, outside the pages' modules`)
      next.push(target)
    }
  }
  return seen
}

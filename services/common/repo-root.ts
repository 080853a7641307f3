import { existsSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

/**
 * The project root (the folder with package.json), found by walking up from
 * this file, so the same code works from services/ (tsx) and dist/ (tsc).
 */
export function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url))
  for (;;) {
    if (existsSync(path.join(dir, 'package.json')) && existsSync(path.join(dir, 'schemas'))) return dir
    const up = path.dirname(dir)
    if (up === dir) throw new Error('cannot find the Benchstream project root above ' + fileURLToPath(import.meta.url))
    dir = up
  }
}

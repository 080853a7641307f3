// Removes dist/ before a build: tsc never deletes the output of a source file
// that is gone, and test/run.mjs would run such a stale compiled test.
import { rmSync } from 'node:fs'
rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true })

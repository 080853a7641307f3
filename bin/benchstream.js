#!/usr/bin/env node
// Entry point of the `benchstream` command: runs the compiled CLI (npm run build).
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
const entry = new URL('../dist/services/cli/main.js', import.meta.url)
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write('benchstream is not built yet: run `npm run build` in ' + fileURLToPath(new URL('..', import.meta.url)) + '\n')
  process.exit(1)
}
const { main } = await import(entry.href)
// Exit explicitly once the command is done: a client library's idle socket or
// retry timer must not keep a finished command alive. (stdout/stderr are
// synchronous for files and pipes on Linux, so nothing written is lost.)
process.exit(await main(process.argv.slice(2)))

#!/usr/bin/env node
// Entry point of the `benchstream` command: runs the compiled CLI. `npm install`
// builds it (the `prepare` script); a checkout without dist/ says how to build.
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
const entry = new URL('../dist/services/cli/main.js', import.meta.url)
if (!existsSync(fileURLToPath(entry))) {
  process.stderr.write(
    'benchstream is not built: run `npm install` (or `npm run build`) in ' +
      fileURLToPath(new URL('..', import.meta.url)) +
      '\n',
  )
  process.exit(1)
}
// A reader that goes away (`benchstream sql ... | head`) is not an error.
for (const s of [process.stdout, process.stderr])
  s.on('error', (err) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0)
    throw err
  })
const { main } = await import(entry.href)
const code = await main(process.argv.slice(2))
// Exit explicitly once the command is done (a client library's idle socket or
// retry timer must not keep a finished command alive), but only after stdout
// and stderr have drained: into a pipe, writes are asynchronous and
// process.exit would cut the output at the pipe's 64 KiB buffer.
await Promise.all(
  [process.stdout, process.stderr].map(
    (s) => new Promise((resolve) => (s.writableLength === 0 ? resolve() : s.write('', resolve))),
  ),
)
process.exit(code)

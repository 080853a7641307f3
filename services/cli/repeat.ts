/**
 * `benchstream run ... --repeat N`: the same run N times back to back, each
 * a run of its own (run id <run-id>-k or <group>-k, repetition k) in one
 * group, so that `benchstream compare` has repetitions for samples. Each
 * repetition goes through the ordinary driver path (services/driver/main.ts) with its own
 * command line (services/driver/config.ts repetitionArgv); nothing here opens a socket.
 */
import { BINDING_NAMES } from '../adapters/datastores/names.js'
import { driverMain } from '../driver/main.js'
import { parseDriverArgs, repetitionArgv } from '../driver/config.js'

export async function runMain(argv: readonly string[]): Promise<number> {
  if (!argv.includes('--repeat')) return driverMain('run', argv)
  // Parsed once here for the group and run ids (and to fail before the first run); each repetition parses its own line
  // again.
  const cfg = parseDriverArgs('run', argv, process.env, { bindings: BINDING_NAMES })
  let stop = false
  const onSignal = (): void => void (stop = true)
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  let worst = 0
  try {
    for (let k = 1; k <= cfg.repeat && !stop; k++) {
      process.stderr.write(
        `benchstream: repetition ${k} of ${cfg.repeat}: run ${cfg.repeatRunIds[k - 1]} in group ${cfg.group}\n`,
      )
      const code = await driverMain('run', repetitionArgv(argv, cfg, k))
      // The first failure decides the exit code; a failed threshold (99) does not stop the others.
      if (code !== 0 && worst === 0) worst = code
      if (code !== 0 && code !== 99) break
    }
  } finally {
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
  if (stop) process.stderr.write('benchstream: interrupted: the remaining repetitions were not run\n')
  return worst
}

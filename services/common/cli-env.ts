/**
 * Variables the command-line tools read (beyond the services' own).
 */
import { Type } from 'typebox'
import { EnvVar, readEnv, type Env } from './config.js'

export const CliEnv = Type.Object({
  BENCHSTREAM_API_URL: EnvVar.optional({
    pattern: '^https?://\\S+$',
    allowed: 'an http:// or https:// URL',
    description: 'read commands (report, sql, runs) ask this API instead of opening ClickHouse',
  }),
  BENCHSTREAM_API_TOKEN: EnvVar.optional({
    pattern: '^[\\x21-\\x7e]{16,256}$',
    allowed: '16-256 printable characters without spaces',
    description: 'the API_TOKEN of that API, sent as a bearer token',
  }),
  YCSB_JAVA_OPTS: EnvVar.string({
    default: '-Xmx1g',
    description: 'JVM flags of the YCSB that `benchstream ycsb` (and deploy/local/ycsb.sh run) starts',
    allowed: 'JVM flags separated by spaces',
  }),
})

export function readCliEnv(env: Env): {
  apiUrl: string | undefined
  apiToken: string | undefined
  ycsbJavaOpts: string[]
} {
  const e = readEnv(CliEnv, env)
  return {
    apiUrl: e.BENCHSTREAM_API_URL?.replace(/\/+$/, ''),
    apiToken: e.BENCHSTREAM_API_TOKEN,
    ycsbJavaOpts: e.YCSB_JAVA_OPTS.split(/\s+/).filter((x) => x !== ''),
  }
}

/**
 * Exit code of `compare` when the sides have no figure in common (BS_ERR_NOTHING_TO_COMPARE: no common workload,
 * operation or figure): nothing was compared, which must not pass for "nothing changed".
 */
export const NOTHING_TO_COMPARE_EXIT = 4

/** Exit code of a command whose --threshold failed (k6's value, so CI scripts can tell it from a crash). */
export const THRESHOLD_FAILED_EXIT = 99

/**
 * Exit code of `compare` and `experiment run|resume --fail-on-regression` that found a regression: a failed threshold's
 * (THRESHOLD_FAILED_EXIT), for the CI step that fails on either.
 */
export const REGRESSION_EXIT = 99

/**
 * Exit code of `compare` and `experiment run|resume` whose answer is undecided: runs failed, a figure could not be
 * tested, a workload was not compared. Never 0, so that no script takes it for "no regression".
 */
export const UNDECIDED_EXIT = 5

/** The exit code of a comparison's outcome: a regression with --fail-on-regression, else undecided, else 0. */
export function outcomeExit(o: { regressed: boolean; undecided: boolean }, failOnRegression: boolean): number {
  if (failOnRegression && o.regressed) return REGRESSION_EXIT
  return o.undecided ? UNDECIDED_EXIT : 0
}

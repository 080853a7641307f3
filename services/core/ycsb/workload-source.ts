/**
 * Which workload an imported YCSB run ran. A YCSB report does not name its
 * workload, and compare pairs runs by workload (runs of different workloads
 * are never pooled), so import-ycsb records it from what the user has:
 *
 * 1. `--workload NAME` (`e` is `workloade`, as YCSB's stock files are named);
 * 2. `-P FILE` as YCSB takes it: the file's name (`workloads/workloade` is
 *    `workloade`; several are joined by `+`, as the driver names its runs),
 *    and its properties, recorded with the run;
 * 3. a workload file next to the report: `<report name>.properties`, else
 *    the one file named `workload*` in its folder that holds YCSB workload
 *    properties (`workloade`, `workloade.properties`); named by its
 *    `benchstream.workload` property, else by a stock file's
 *    `# Workload E:` header line, else by its own name when that starts
 *    with `workload`;
 * 4. the `Command line: ... -P workloads/workloade ...` line YCSB writes to
 *    stderr, when the report holds it (YCSB's output saved with `2>&1`).
 *
 * Pure: texts in, names out; the CLI reads the files.
 */
import { parseProperties, type Properties } from '../workload/properties.js'

/** A workload named by one letter (`e`, YCSB's stock workloads) is `workloade`; other names stay as given. */
export function normalizeWorkload(name: string): string {
  const n = name.trim()
  return /^[a-z]$/i.test(n) ? `workload${n.toLowerCase()}` : n
}

/** What `-P` names: the file names (without a `.properties` ending), joined by `+`. */
export function workloadNameOfFiles(paths: readonly string[]): string {
  return paths
    .map((p) =>
      p
        .split(/[\\/]/)
        .pop()!
        .replace(/\.properties$/, ''),
    )
    .join('+')
}

/** The properties of a file, when it is a YCSB workload file; undefined for anything else (a report, a log). */
export function workloadProperties(text: string, source: string): Properties | undefined {
  // A report or a log is not a property file, however its lines parse.
  if (/^\s*\[[A-Za-z]/m.test(text)) return undefined
  let props: Properties
  try {
    props = parseProperties(text, source)
  } catch {
    return undefined
  }
  const keys = Object.keys(props)
  if (keys.length === 0 || !keys.every((k) => /^[A-Za-z0-9._-]+$/.test(k))) return undefined
  const workloadish = keys.some(
    (k) => k === 'workload' || k === 'recordcount' || k === 'operationcount' || k.endsWith('proportion'),
  )
  return workloadish ? props : undefined
}

/**
 * The name a workload file gives its workload: `benchstream.workload`, else a stock file's `# Workload E: ...`
 * header (`workloade`), else the file's own name when it starts with `workload`; undefined when none says.
 */
export function workloadNameOfFile(text: string, fileName: string, props: Properties): string | undefined {
  const own = props['benchstream.workload']?.trim()
  if (own !== undefined && own !== '') return own
  const header = /^\s*#\s*Workload\s+([A-Za-z0-9]+)\s*:/im.exec(text)
  if (header !== null) return `workload${header[1]!.toLowerCase()}`
  const base = fileName
    .split(/[\\/]/)
    .pop()!
    .replace(/\.properties$/, '')
  return /^workload/i.test(base) ? base : undefined
}

/**
 * The names `<report>.properties` may have for a report file: its name with each of its endings cut
 * (`a-1.stdout.txt`: `a-1.stdout.properties`, `a-1.properties`).
 */
export function propertiesNamesFor(reportFileName: string): string[] {
  const base = reportFileName.split(/[\\/]/).pop()!
  const out: string[] = []
  for (let i = base.lastIndexOf('.'); i > 0; i = base.lastIndexOf('.', i - 1))
    out.push(`${base.slice(0, i)}.properties`)
  return out
}

/** Whether a file in a report's folder may be its workload file by name (`workloade`, `workload-e.properties`). */
export function isWorkloadFileName(fileName: string): boolean {
  return /^workload[A-Za-z0-9._+-]*$/i.test(fileName) && !/\.(txt|json|log|hdr|out|csv)$/i.test(fileName)
}

/** The `-P` files YCSB's `Command line:` line names, as written; undefined when the text has no such line. */
export function commandLineWorkloadFiles(text: string): string[] | undefined {
  const line = /^\s*Command line:(.*)$/m.exec(text)
  if (line === null) return undefined
  const args = line[1]!.trim().split(/\s+/)
  const files: string[] = []
  for (let i = 0; i < args.length; i++) if (args[i] === '-P' && args[i + 1] !== undefined) files.push(args[++i]!)
  return files
}

/**
 * The workload an imported run ran, found from what the user has (services/core/ycsb/workload-source.ts): --workload,
 * -P FILE, a workload file next to a report, or the `Command line:` YCSB wrote into a report saved with its stderr.
 */
import { existsSync, openSync, readdirSync, readFileSync, readSync, closeSync, statSync } from 'node:fs'
import path from 'node:path'
import { BenchstreamError } from '../core/errors.js'
import type { YcsbFile } from '../core/ycsb/report-types.js'
import { parseProperties, type Properties } from '../core/workload/properties.js'
import {
  commandLineWorkloadFiles,
  isWorkloadFileName,
  propertiesNamesFor,
  workloadNameOfFile,
  workloadNameOfFiles,
  workloadProperties,
} from '../core/ycsb/workload-source.js'
import type { ImportYcsbArgs } from './import-ycsb-args.js'

/** Largest workload file read (YCSB's are a few KB). */
const MAX_WORKLOAD_FILE_BYTES = 1024 * 1024

/** The workload of an import, and where it was found (workload-source.ts). */
export interface FoundWorkload {
  /** undefined: not recorded. */
  name: string | undefined
  properties: Properties | undefined
  /** Where it came from, or why nothing was found: for the import's summary. */
  from: string
}

function readSmall(file: string, what: string): string {
  let size: number
  try {
    size = statSync(file).size
  } catch (err) {
    throw new BenchstreamError(
      'BS_ERR_USAGE',
      `cannot read ${what} ${JSON.stringify(file)}: ${(err as Error).message}`,
      {
        cause: err,
      },
    )
  }
  if (size > MAX_WORKLOAD_FILE_BYTES)
    throw new BenchstreamError(
      'BS_ERR_TOO_LARGE',
      `${what} ${file} is ${size} bytes; a workload file has at most ${MAX_WORKLOAD_FILE_BYTES}`,
    )
  return readFileSync(file, 'utf8')
}

/**
 * The workload the imported run ran (services/core/ycsb/workload-source.ts): --workload, -P FILE, a workload file
 * next to a report, or the `Command line:` YCSB wrote into a report saved with its stderr.
 */
export function findWorkload(
  args: Pick<ImportYcsbArgs, 'workload' | 'workloadFiles' | 'files'>,
  files: readonly YcsbFile[],
): FoundWorkload {
  if (args.workloadFiles.length > 0) {
    const properties: Properties = {}
    for (const f of args.workloadFiles) Object.assign(properties, parseProperties(readSmall(f, '-P'), f))
    return {
      name: args.workload ?? workloadNameOfFiles(args.workloadFiles),
      properties,
      from: `-P ${args.workloadFiles.join(' -P ')}${args.workload === undefined ? '' : ', named by --workload'}`,
    }
  }
  if (args.workload !== undefined) return { name: args.workload, properties: undefined, from: '--workload' }
  const notes: string[] = []
  for (const dir of new Set(args.files.map((f) => path.dirname(f.path)))) {
    const near = args.files.filter((f) => path.dirname(f.path) === dir)
    for (const candidate of near.flatMap((f) => propertiesNamesFor(f.path)).map((n) => path.join(dir, n))) {
      if (!existsSync(candidate)) continue
      const text = readSmall(candidate, 'workload file')
      const props = workloadProperties(text, candidate)
      if (props === undefined) continue
      const name = workloadNameOfFile(text, candidate, props)
      if (name !== undefined) return { name, properties: props, from: candidate }
      notes.push(`${candidate} names no workload (no benchstream.workload property, no "# Workload X:" line)`)
    }
    let names: string[] = []
    try {
      names = readdirSync(dir).filter(isWorkloadFileName).sort()
    } catch {
      // an unreadable folder holds no workload file
    }
    const found = names.flatMap((n) => {
      const file = path.join(dir, n)
      try {
        if (!statSync(file).isFile() || statSync(file).size > MAX_WORKLOAD_FILE_BYTES) return []
      } catch {
        return []
      }
      const text = readFileSync(file, 'utf8')
      const props = workloadProperties(text, file)
      return props === undefined ? [] : [{ file, text, props }]
    })
    if (found.length === 1) {
      const f = found[0]!
      const name = workloadNameOfFile(f.text, f.file, f.props)
      if (name !== undefined) return { name, properties: f.props, from: f.file }
    } else if (found.length > 1)
      notes.push(
        `several workload files in ${dir} (${found.map((f) => path.basename(f.file)).join(', ')}): ` +
          'say which with -P FILE',
      )
  }
  // YCSB's stderr starts with its command line; a report saved with 2>&1 holds it.
  for (const f of files) {
    if (f.kind !== 'summary' || f.format !== 'text') continue
    const named = commandLineWorkloadFiles(readSmallReport(f.source))
    if (named !== undefined && named.length > 0)
      return {
        name: workloadNameOfFiles(named),
        properties: undefined,
        from: `${f.source}'s Command line: -P ${named.join(' -P ')}`,
      }
  }
  return {
    name: undefined,
    properties: undefined,
    from:
      `not recorded${notes.length === 0 ? '' : ` (${notes.join('; ')})`}: give --workload NAME or -P FILE, ` +
      `since compare pairs runs by workload and never pools runs whose workload is unknown`,
  }
}

function readSmallReport(file: string): string {
  // Already read once and bounded by MAX_YCSB_FILE_BYTES; only its first lines can hold the command line.
  const fd = openSync(file, 'r')
  try {
    const buf = Buffer.alloc(64 * 1024)
    const n = readSync(fd, buf, 0, buf.length, 0)
    return buf.toString('utf8', 0, n)
  } finally {
    closeSync(fd)
  }
}

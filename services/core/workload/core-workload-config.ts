/**
 * CoreWorkload's properties read and validated once into a frozen
 * CoreWorkloadConfig (YCSB's names and defaults; BS_ERR_WORKLOAD with what is
 * allowed). The workload itself is core-workload.ts.
 */

import { BenchstreamError } from '../errors.js'
import type { Properties } from './properties.js'
import type { Operation } from './workload-types.js'
import { ZipfianGenerator } from './zipfian-generators.js'

export const REQUEST_DISTRIBUTIONS = ['uniform', 'zipfian', 'latest', 'hotspot', 'sequential', 'exponential'] as const
export type RequestDistribution = (typeof REQUEST_DISTRIBUTIONS)[number]
export const FIELD_LENGTH_DISTRIBUTIONS = ['constant', 'uniform', 'zipfian'] as const
export type FieldLengthDistribution = (typeof FIELD_LENGTH_DISTRIBUTIONS)[number]
export const SCAN_LENGTH_DISTRIBUTIONS = ['uniform', 'zipfian'] as const
export type ScanLengthDistribution = (typeof SCAN_LENGTH_DISTRIBUTIONS)[number]
export const INSERT_ORDERS = ['hashed', 'ordered'] as const
export type InsertOrder = (typeof INSERT_ORDERS)[number]

/** Operation proportion properties, in the order they are reported. */
export const PROPORTION_PROPERTIES = [
  ['readproportion', 'READ'],
  ['updateproportion', 'UPDATE'],
  ['insertproportion', 'INSERT'],
  ['scanproportion', 'SCAN'],
  ['readmodifywriteproportion', 'READ-MODIFY-WRITE'],
  ['deleteproportion', 'DELETE'],
] as const satisfies ReadonlyArray<readonly [string, Operation]>

/** Key numbers stay below 2^37 so hashed keys can be reduced without BigInt (generators.ts). */
export const MAX_RECORD_COUNT = 2 ** 37
/** Largest field length accepted (16 MiB); the value pool is twice the largest field. */
export const MAX_FIELD_LENGTH = 16 * 1024 * 1024
/** Largest field count accepted; each field is a separate value per insert. */
export const MAX_FIELD_COUNT = 10_000
/** Largest zero padding accepted (YCSB's hashed keys have at most 19 digits). */
export const MAX_ZERO_PADDING = 64
/** Sum of the proportions must be within this of 1. */
export const PROPORTION_TOLERANCE = 1e-9

/** CoreWorkload's validated settings, one per property (names in camelCase). */
export interface CoreWorkloadConfig {
  /** @default 0 (required to be >= 1) */
  recordCount: number
  /** Run-phase transactions across all threads. @default 0 (no limit) */
  operationCount: number
  /** Seconds. @default 0 (no limit) */
  maxExecutionTimeS: number
  /** @default 'usertable' */
  table: string
  /** @default 10 */
  fieldCount: number
  /** Maximum (or constant) field length, characters. @default 100 */
  fieldLength: number
  /** @default 1 */
  minFieldLength: number
  /** @default 'constant' */
  fieldLengthDistribution: FieldLengthDistribution
  /** @default 'field' */
  fieldNamePrefix: string
  /** @default true */
  readAllFields: boolean
  /** Read all fields by listing their names instead of "all". @default false */
  readAllFieldsByName: boolean
  /** @default false */
  writeAllFields: boolean
  /** @default READ 0.95, UPDATE 0.05, the rest 0 */
  proportions: Readonly<Record<Operation, number>>
  /** @default 'uniform' */
  requestDistribution: RequestDistribution
  /** Theta of the 'zipfian' and 'latest' request distributions. @default 0.99 */
  zipfianConstant: number
  /** @default 1 */
  minScanLength: number
  /** @default 1000 */
  maxScanLength: number
  /** @default 'uniform' */
  scanLengthDistribution: ScanLengthDistribution
  /** @default 'hashed' */
  insertOrder: InsertOrder
  /** First key number this client loads. @default 0 */
  insertStart: number
  /** Key numbers this client loads. @default recordCount - insertStart */
  insertCount: number
  /** @default 0.2 */
  hotspotDataFraction: number
  /** @default 0.8 */
  hotspotOpnFraction: number
  /** @default 95 */
  exponentialPercentile: number
  /** @default 0.8571428571 (1/7 of the records hold `exponentialPercentile` per cent of the requests) */
  exponentialFrac: number
  /** @default 'user' */
  keyPrefix: string
  /** Key numbers are left-padded with zeros to this many digits. @default 1 */
  zeroPadding: number
}

function invalid(message: string): BenchstreamError {
  return new BenchstreamError('BS_ERR_WORKLOAD', message)
}

function raw(props: Properties, name: string): string | undefined {
  return Object.prototype.hasOwnProperty.call(props, name) ? props[name]?.trim() : undefined
}

function intProp(props: Properties, name: string, def: number, min: number, max: number): number {
  const s = raw(props, name)
  const v = s === undefined ? def : /^\+?\d+$/.test(s) ? Number(s) : Number.NaN
  if (!Number.isSafeInteger(v) || v < min || v > max) {
    throw invalid(`${name} must be an integer in [${min}, ${max}]; got '${s ?? def}'`)
  }
  return v
}

function numProp(props: Properties, name: string, def: number, min: number, max: number, bounds = '[]'): number {
  const s = raw(props, name)
  const v = s === undefined ? def : s === '' ? Number.NaN : Number(s)
  const lowOk = bounds[0] === '(' ? v > min : v >= min
  const highOk = bounds[1] === ')' ? v < max : v <= max
  if (!Number.isFinite(v) || !lowOk || !highOk) {
    throw invalid(`${name} must be a number in ${bounds[0]}${min}, ${max}${bounds[1]}; got '${s ?? def}'`)
  }
  return v
}

function boolProp(props: Properties, name: string, def: boolean): boolean {
  const s = raw(props, name)
  if (s === undefined) return def
  const l = s.toLowerCase()
  if (l === 'true') return true
  if (l === 'false') return false
  throw invalid(`${name} must be true or false; got '${s}'`)
}

function choiceProp<T extends string>(props: Properties, name: string, def: T, choices: readonly T[]): T {
  const s = raw(props, name)
  if (s === undefined) return def
  const found = choices.find((c) => c === s)
  if (found === undefined) throw invalid(`${name} must be one of ${choices.join(', ')}; got '${s}'`)
  return found
}

function stringProp(props: Properties, name: string, def: string, allowEmpty: boolean): string {
  const s = raw(props, name)
  if (s === undefined) return def
  if (s === '' && !allowEmpty) throw invalid(`${name} must not be empty`)
  return s
}

/** Reads and validates CoreWorkload's properties; the result is frozen. */
export function parseCoreWorkloadConfig(props: Properties): Readonly<CoreWorkloadConfig> {
  const recordCount = intProp(props, 'recordcount', 0, 1, MAX_RECORD_COUNT)
  const insertStart = intProp(props, 'insertstart', 0, 0, recordCount - 1)
  const insertCount = intProp(props, 'insertcount', recordCount - insertStart, 1, MAX_RECORD_COUNT)
  if (insertStart + insertCount > recordCount) {
    throw invalid(
      `insertstart (${insertStart}) + insertcount (${insertCount}) = ${insertStart + insertCount} ` +
        `must not exceed recordcount (${recordCount}): ` +
        'each client loads the key numbers [insertstart, insertstart + insertcount) out of [0, recordcount)',
    )
  }

  const proportions = {} as Record<Operation, number>
  let sum = 0
  for (const [name, op] of PROPORTION_PROPERTIES) {
    const v = numProp(props, name, op === 'READ' ? 0.95 : op === 'UPDATE' ? 0.05 : 0, 0, 1)
    proportions[op] = v
    sum += v
  }
  if (Math.abs(sum - 1) > PROPORTION_TOLERANCE) {
    const terms = PROPORTION_PROPERTIES.map(([name, op]) => `${name}=${proportions[op]}`).join(' + ')
    throw invalid(`operation proportions must add up to 1, but ${terms} = ${Number(sum.toPrecision(12))}`)
  }

  const fieldLength = intProp(props, 'fieldlength', 100, 1, MAX_FIELD_LENGTH)
  const minScanLength = intProp(props, 'minscanlength', 1, 1, MAX_RECORD_COUNT)
  const config: CoreWorkloadConfig = {
    recordCount,
    operationCount: intProp(props, 'operationcount', 0, 0, Number.MAX_SAFE_INTEGER),
    maxExecutionTimeS: intProp(props, 'maxexecutiontime', 0, 0, Number.MAX_SAFE_INTEGER),
    table: stringProp(props, 'table', 'usertable', false),
    fieldCount: intProp(props, 'fieldcount', 10, 1, MAX_FIELD_COUNT),
    fieldLength,
    minFieldLength: intProp(props, 'minfieldlength', 1, 1, fieldLength),
    fieldLengthDistribution: choiceProp(props, 'fieldlengthdistribution', 'constant', FIELD_LENGTH_DISTRIBUTIONS),
    fieldNamePrefix: stringProp(props, 'fieldnameprefix', 'field', true),
    readAllFields: boolProp(props, 'readallfields', true),
    readAllFieldsByName: boolProp(props, 'readallfieldsbyname', false),
    writeAllFields: boolProp(props, 'writeallfields', false),
    proportions: Object.freeze(proportions),
    requestDistribution: choiceProp(props, 'requestdistribution', 'uniform', REQUEST_DISTRIBUTIONS),
    zipfianConstant: numProp(props, 'zipfianconstant', ZipfianGenerator.DEFAULT_CONSTANT, 0, 1, '()'),
    minScanLength,
    maxScanLength: intProp(props, 'maxscanlength', Math.max(1000, minScanLength), minScanLength, MAX_RECORD_COUNT),
    scanLengthDistribution: choiceProp(props, 'scanlengthdistribution', 'uniform', SCAN_LENGTH_DISTRIBUTIONS),
    insertOrder: choiceProp(props, 'insertorder', 'hashed', INSERT_ORDERS),
    insertStart,
    insertCount,
    hotspotDataFraction: numProp(props, 'hotspotdatafraction', 0.2, 0, 1),
    hotspotOpnFraction: numProp(props, 'hotspotopnfraction', 0.8, 0, 1),
    exponentialPercentile: numProp(props, 'exponential.percentile', 95, 0, 100, '()'),
    exponentialFrac: numProp(props, 'exponential.frac', 0.8571428571, 0, Number.MAX_SAFE_INTEGER, '(]'),
    keyPrefix: stringProp(props, 'keyprefix', 'user', true),
    zeroPadding: intProp(props, 'zeropadding', 1, 0, MAX_ZERO_PADDING),
  }
  return Object.freeze(config)
}

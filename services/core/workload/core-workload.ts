/**
 * YCSB's CoreWorkload from its documented properties, plus deletes. Key names
 * match YCSB's (FNV-hashed with insertorder=hashed, zero-padded), so tables
 * load and run across both tools. The per-transaction path avoids BigInt and
 * allocation: a driver issues well over 500k ops/s (docs/design/workload.md).
 */
import {
  MAX_RECORD_COUNT,
  parseCoreWorkloadConfig,
  PROPORTION_PROPERTIES,
  type CoreWorkloadConfig,
} from './core-workload-config.js'
import { fnvhash64 } from './fnv-hash.js'
import {
  AcknowledgedCounterGenerator,
  ConstantIntegerGenerator,
  CounterGenerator,
  DiscreteGenerator,
  ExponentialGenerator,
  HotspotIntegerGenerator,
  SequentialGenerator,
  UniformLongGenerator,
} from './generators.js'
import type { NumberGenerator } from './number-generator.js'
import { ScrambledZipfianGenerator, SkewedLatestGenerator, ZipfianGenerator } from './zipfian-generators.js'
import type { Properties } from './properties.js'
import { Rng } from './random.js'
import {
  createSharedWorkloadState,
  SharedAcknowledgedCounterGenerator,
  SharedCounterGenerator,
  SharedSequentialGenerator,
} from './shared-state.js'
import type { FieldValues, Operation, Transaction, Workload } from './workload-types.js'
// Values are slices of one random string: slicing is O(1) in V8, so a value
// costs the same whatever its length. The pool is much longer than a value
// so values differ from each other; 1 MiB keeps that true without letting a
// datastore's compressor see the same few kilobytes over and over.
const VALUE_POOL_MIN = 1 << 20
// 64 characters that need no escaping in any protocol or query language.
const VALUE_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'

function makeValuePool(rng: Rng, length: number): string {
  const alphabet = Uint8Array.from(VALUE_ALPHABET, (ch) => ch.charCodeAt(0))
  const bytes = new Uint8Array(length)
  // Five 6-bit characters from each 32-bit draw.
  for (let i = 0; i < length; i += 5) {
    const r = rng.nextUint32()
    for (let j = 0; j < 5 && i + j < length; j++) bytes[i + j] = alphabet[(r >>> (6 * j)) & 63]!
  }
  // ASCII only, so decoding as UTF-8 is one character per byte.
  return new TextDecoder().decode(bytes)
}

// Redraws of a key chooser that went past the acknowledged keys before the
// draw is folded into range instead (bounds the time one pick can take when
// most of the zipfian range is still unacknowledged).
const MAX_KEY_REDRAWS = 64

const OP_READ = 0
const OP_UPDATE = 1
const OP_INSERT = 2
const OP_SCAN = 3
const OP_RMW = 4
const OP_DELETE = 5
const OP_INDEX: Record<Operation, number> = {
  READ: OP_READ,
  UPDATE: OP_UPDATE,
  INSERT: OP_INSERT,
  SCAN: OP_SCAN,
  'READ-MODIFY-WRITE': OP_RMW,
  DELETE: OP_DELETE,
}

export interface CoreWorkloadOptions {
  /** Seed for every random choice; default: random. The same seed and properties give the same transactions. */
  seed?: number
  /**
   * State shared with the other threads of this client (createSharedState()
   * of a workload with the same properties): the load and insert key
   * sequences, the acknowledged-insert window and the 'sequential' position.
   * Default: this workload's own, for one thread.
   */
  shared?: SharedArrayBuffer
}

/** The acknowledged insert key sequence: a counter whose lastValue() only counts finished inserts. */
interface InsertSequence extends NumberGenerator {
  acknowledge(value: number): void
}

export class CoreWorkload implements Workload {
  readonly config: Readonly<CoreWorkloadConfig>
  readonly table: string
  readonly loadCount: number
  readonly operationCount: number
  readonly maxExecutionTimeS: number
  /** fieldnameprefix + 0 .. fieldcount - 1. */
  readonly fieldNames: readonly string[]

  private readonly rng: Rng
  private readonly orderedInserts: boolean
  private readonly keyPrefix: string
  private readonly zeroPadding: number
  private readonly readAllFields: boolean
  private readonly writeAllFields: boolean
  // undefined = all fields; or the frozen list of every name (readallfieldsbyname)
  private readonly allFieldsList: string[] | undefined
  // One frozen single-name list per field, so a one-field read allocates nothing.
  private readonly singleFieldLists: string[][]
  private readonly valuePool: string
  private readonly fieldLength: NumberGenerator
  private readonly fieldChooser: UniformLongGenerator
  private readonly operationChooser: DiscreteGenerator<number>
  private readonly keyChooser: NumberGenerator
  private readonly keyChooserLow: number
  private readonly exponential: boolean
  private readonly scanLength: NumberGenerator
  private readonly loadSequence: NumberGenerator
  private readonly loadEnd: number
  private readonly insertSequence: InsertSequence

  /** Builds a workload from YCSB properties; throws BS_ERR_WORKLOAD naming the property at fault. */
  static fromProperties(props: Properties, opts: CoreWorkloadOptions = {}): CoreWorkload {
    return new CoreWorkload(parseCoreWorkloadConfig(props), new Rng(opts.seed), opts.shared)
  }

  private constructor(config: Readonly<CoreWorkloadConfig>, rng: Rng, shared: SharedArrayBuffer | undefined) {
    const c = config
    this.config = c
    this.rng = rng
    this.table = c.table
    this.loadCount = c.insertCount
    this.operationCount = c.operationCount
    this.maxExecutionTimeS = c.maxExecutionTimeS
    this.orderedInserts = c.insertOrder === 'ordered'
    this.keyPrefix = c.keyPrefix
    this.zeroPadding = c.zeroPadding
    this.readAllFields = c.readAllFields
    this.writeAllFields = c.writeAllFields

    const names = Array.from({ length: c.fieldCount }, (_, i) => c.fieldNamePrefix + i)
    this.fieldNames = Object.freeze(names)
    // Shared, frozen arrays: bindings read them and must not change them.
    this.allFieldsList = c.readAllFieldsByName ? (Object.freeze([...names]) as string[]) : undefined
    this.singleFieldLists = names.map((n) => Object.freeze([n]) as string[])
    this.fieldChooser = new UniformLongGenerator(rng, 0, c.fieldCount - 1)

    this.fieldLength =
      c.fieldLengthDistribution === 'constant'
        ? new ConstantIntegerGenerator(c.fieldLength)
        : c.fieldLengthDistribution === 'uniform'
          ? new UniformLongGenerator(rng, c.minFieldLength, c.fieldLength)
          : new ZipfianGenerator(rng, c.minFieldLength, c.fieldLength)
    this.valuePool = makeValuePool(rng, Math.max(VALUE_POOL_MIN, 2 * c.fieldLength))

    this.operationChooser = new DiscreteGenerator(
      rng,
      PROPORTION_PROPERTIES.map(([, op]) => ({ weight: c.proportions[op], value: OP_INDEX[op] })),
    )

    this.loadSequence = shared === undefined ? new CounterGenerator(c.insertStart) : new SharedCounterGenerator(shared)
    this.loadEnd = c.insertStart + c.insertCount
    // Run-phase inserts continue after the loaded records, as YCSB's transactioninsertkeysequence.
    this.insertSequence =
      shared === undefined
        ? new AcknowledgedCounterGenerator(c.recordCount)
        : new SharedAcknowledgedCounterGenerator(shared)

    const lb = c.insertStart
    const ub = c.insertStart + c.insertCount - 1
    this.keyChooserLow = lb
    this.exponential = c.requestDistribution === 'exponential'
    switch (c.requestDistribution) {
      case 'uniform':
        this.keyChooser = new UniformLongGenerator(rng, lb, ub)
        break
      case 'sequential':
        this.keyChooser =
          shared === undefined ? new SequentialGenerator(lb, ub) : new SharedSequentialGenerator(shared, lb, ub)
        break
      case 'hotspot':
        this.keyChooser = new HotspotIntegerGenerator(rng, lb, ub, c.hotspotDataFraction, c.hotspotOpnFraction)
        break
      case 'latest':
        this.keyChooser = new SkewedLatestGenerator(rng, this.insertSequence, c.zipfianConstant)
        break
      case 'exponential':
        this.keyChooser = new ExponentialGenerator(rng, c.exponentialPercentile, c.recordCount * c.exponentialFrac)
        break
      case 'zipfian': {
        // YCSB widens the range by twice the inserts it expects, so keys
        // inserted during the run become popular too; until they are
        // acknowledged, draws that land on them are redrawn.
        const expectedNewKeys = Math.floor(c.operationCount * c.proportions.INSERT * 2)
        const top = Math.min(ub + expectedNewKeys, lb + MAX_RECORD_COUNT - 1)
        this.keyChooser = new ScrambledZipfianGenerator(rng, lb, top, c.zipfianConstant)
        break
      }
    }

    this.scanLength =
      c.scanLengthDistribution === 'uniform'
        ? new UniformLongGenerator(rng, c.minScanLength, c.maxScanLength)
        : new ZipfianGenerator(rng, c.minScanLength, c.maxScanLength)
  }

  /** The key name of a key number: prefix, zero padding, then the number (FNV-hashed unless insertorder=ordered). */
  buildKeyName(keynum: number): string {
    const digits = this.orderedInserts ? String(keynum) : fnvhash64(keynum)
    const fill = this.zeroPadding - digits.length
    return fill > 0 ? this.keyPrefix + '0'.repeat(fill) + digits : this.keyPrefix + digits
  }

  /** Key numbers below this have been loaded or acknowledged (the newest readable key number + 1). */
  get acknowledgedKeyLimit(): number {
    return this.insertSequence.lastValue() + 1
  }

  /**
   * A fresh state for threads that share this workload's sequences (each
   * builds its own CoreWorkload from the same properties with `shared`);
   * one per phase, as YCSB builds one CoreWorkload per phase.
   */
  createSharedState(): SharedArrayBuffer {
    return createSharedWorkloadState({ loadStart: this.config.insertStart, insertStart: this.config.recordCount })
  }

  nextLoad(): Transaction | undefined {
    // Take the number first, then check it: with a shared sequence, checking
    // first would let two threads both pass the last free number.
    const keynum = this.loadSequence.nextValue()
    if (keynum >= this.loadEnd) return undefined
    return { op: 'INSERT', table: this.table, key: this.buildKeyName(keynum), values: this.buildValues(), keynum }
  }

  nextTransaction(): Transaction {
    switch (this.operationChooser.nextValue()) {
      case OP_READ:
        return { op: 'READ', table: this.table, key: this.buildKeyName(this.nextKeynum()), fields: this.readFields() }
      case OP_UPDATE:
        return {
          op: 'UPDATE',
          table: this.table,
          key: this.buildKeyName(this.nextKeynum()),
          values: this.writeValues(),
        }
      case OP_INSERT: {
        const keynum = this.insertSequence.nextValue()
        return { op: 'INSERT', table: this.table, key: this.buildKeyName(keynum), values: this.buildValues(), keynum }
      }
      case OP_SCAN:
        return {
          op: 'SCAN',
          table: this.table,
          startKey: this.buildKeyName(this.nextKeynum()),
          count: this.scanLength.nextValue(),
          fields: this.readFields(),
        }
      case OP_RMW: {
        const key = this.buildKeyName(this.nextKeynum())
        // Read and write fields are drawn independently, as in YCSB.
        return {
          op: 'READ-MODIFY-WRITE',
          table: this.table,
          key,
          fields: this.readFields(),
          values: this.writeValues(),
        }
      }
      default:
        return { op: 'DELETE', table: this.table, key: this.buildKeyName(this.nextKeynum()) }
    }
  }

  /**
   * Marks an insert as finished, so 'latest' (and zipfian's widened range) may
   * pick its key. Call it for every run-phase insert handed out, whether it
   * succeeded or not (YCSB acknowledges in a finally block): a key never
   * acknowledged holds back every newer one. Load-phase key numbers are ignored.
   */
  acknowledgeInsert(keynum: number): void {
    this.insertSequence.acknowledge(keynum)
  }

  /** A key number for a read, update, scan, RMW or delete: never past the acknowledged keys. */
  private nextKeynum(): number {
    const limit = this.insertSequence.lastValue()
    if (this.exponential) {
      // The exponential draw is a distance back from the newest key.
      for (let i = 0; i < MAX_KEY_REDRAWS; i++) {
        const k = limit - Math.floor(this.keyChooser.nextValue())
        if (k >= 0) return k
      }
      return this.rng.int(limit + 1)
    }
    let k = this.keyChooser.nextValue()
    for (let i = 0; k > limit && i < MAX_KEY_REDRAWS; i++) k = this.keyChooser.nextValue()
    if (k > limit) k = this.keyChooserLow + ((k - this.keyChooserLow) % (limit - this.keyChooserLow + 1))
    return k
  }

  private readFields(): string[] | undefined {
    if (this.readAllFields) return this.allFieldsList
    return this.singleFieldLists[this.fieldChooser.nextValue()]
  }

  private writeValues(): FieldValues {
    if (this.writeAllFields) return this.buildValues()
    const values: FieldValues = {}
    values[this.fieldNames[this.fieldChooser.nextValue()]!] = this.nextValue()
    return values
  }

  private buildValues(): FieldValues {
    const values: FieldValues = {}
    const names = this.fieldNames
    for (let i = 0; i < names.length; i++) values[names[i]!] = this.nextValue()
    return values
  }

  /** A random printable string of the configured field length. */
  private nextValue(): string {
    const len = this.fieldLength.nextValue()
    const start = this.rng.int(this.valuePool.length - len + 1)
    return this.valuePool.slice(start, start + len)
  }
}

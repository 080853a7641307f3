/**
 * HBase PerformanceEvaluation's tests (`hbase pe <command>`, 2.x): the
 * command a user types, the class that runs it (whose simple name PE prints:
 * `Test : RandomReadTest`, `[RandomReadTest] Summary of timings`), and the
 * operation each row is, in Benchstream's terms. From PE's command table
 * (PerformanceEvaluation.addCommandDescriptor, hbase-mapreduce 2.5.10).
 */
import type { Operation } from '../../../schemas/events.v1.js'

/**
 * Class simple name -> [command, operation]. Every write test is INSERT (PE
 * writes rows it chose, on an empty or a full table alike); every scan
 * test, short or long, is SCAN; increments, appends and check-and-mutates
 * read and write one row: READ-MODIFY-WRITE.
 */
const TESTS: Record<string, readonly [string, Operation]> = {
  AsyncRandomReadTest: ['asyncRandomRead', 'READ'],
  AsyncRandomWriteTest: ['asyncRandomWrite', 'INSERT'],
  AsyncSequentialReadTest: ['asyncSequentialRead', 'READ'],
  AsyncSequentialWriteTest: ['asyncSequentialWrite', 'INSERT'],
  AsyncScanTest: ['asyncScan', 'SCAN'],
  RandomReadTest: ['randomRead', 'READ'],
  MetaRandomReadTest: ['metaRandomRead', 'READ'],
  RandomSeekScanTest: ['randomSeekScan', 'SCAN'],
  RandomScanWithRange10Test: ['scanRange10', 'SCAN'],
  RandomScanWithRange100Test: ['scanRange100', 'SCAN'],
  RandomScanWithRange1000Test: ['scanRange1000', 'SCAN'],
  RandomScanWithRange10000Test: ['scanRange10000', 'SCAN'],
  RandomWriteTest: ['randomWrite', 'INSERT'],
  RandomDeleteTest: ['randomDelete', 'DELETE'],
  SequentialReadTest: ['sequentialRead', 'READ'],
  SequentialWriteTest: ['sequentialWrite', 'INSERT'],
  SequentialDeleteTest: ['sequentialDelete', 'DELETE'],
  MetaWriteTest: ['metaWrite', 'INSERT'],
  ScanTest: ['scan', 'SCAN'],
  FilteredScanTest: ['filterScan', 'SCAN'],
  IncrementTest: ['increment', 'READ-MODIFY-WRITE'],
  AppendTest: ['append', 'READ-MODIFY-WRITE'],
  CheckAndMutateTest: ['checkAndMutate', 'READ-MODIFY-WRITE'],
  CheckAndPutTest: ['checkAndPut', 'READ-MODIFY-WRITE'],
  CheckAndDeleteTest: ['checkAndDelete', 'READ-MODIFY-WRITE'],
  CleanMetaTest: ['cleanMeta', 'DELETE'],
}

/** PE's commands, as `hbase pe` takes them. */
export const PE_COMMANDS: readonly string[] = Object.values(TESTS).map(([c]) => c)

/** What a test is: its command and operation, or undefined for a class PE does not ship (a user's own Test). */
export function peTest(nameOrCommand: string): { className: string; command: string; op: Operation } | undefined {
  for (const [className, [command, op]] of Object.entries(TESTS))
    if (className === nameOrCommand || command === nameOrCommand) return { className, command, op }
  return undefined
}

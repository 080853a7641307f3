/**
 * What turns the engine's output of one ad hoc query into the format the
 * client asked for, one engine chunk at a time, counting rows and bytes and
 * stopping at a row or byte cap (sql-guard.ts decides whether a stop is the
 * cut the caller asked for or a limit that fails the query). One shape per
 * family of formats: text-formats.ts (lines, CSV, JSON documents, the
 * formats for people), native-format.ts, row-binary.ts, arrow-ipc.ts.
 */

/** A piece of the engine's output: chDB gives one block's whole result with its row count; a server, any bytes. */
export interface EngineChunk {
  data: Buffer
  /** Rows in the chunk when the engine says (chDB); undefined when it does not (a server's HTTP body). */
  rows: number | undefined
}

/** Where a result must stop: Infinity for no cap. */
export interface ShapeCaps {
  maxRows: number
  maxBytes: number
}

export interface ResultShape {
  /** Bytes ready from a chunk (possibly none); nothing after a stop. */
  push(chunk: EngineChunk): Buffer[]
  /**
   * What closes the result (a JSON document's tail, Arrow's end marker and footer); throws when it ended inside a
   * row.
   */
  end(): Buffer[]
  /** Rows sent so far; -1 when the format's rows cannot be counted. */
  readonly rows: number
  /** Bytes sent so far. */
  readonly bytes: number
  /** The cap that stopped the result short, with more to come; undefined while it runs or when it ended whole. */
  readonly stoppedBy: 'rows' | 'bytes' | undefined
}

/** No cap. */
export const NO_CAPS: ShapeCaps = { maxRows: Infinity, maxBytes: Infinity }

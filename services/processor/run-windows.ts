/**
 * The window length of every run this processor has met, learned from the
 * RunWindowRegistry once per run and shared by all partition workers: a run
 * keeps the length it was registered with, and a processor configured with
 * another one refuses its messages instead of mixing lengths.
 */
import { peekRunId } from '../core/codec/event-codec.js'
import type { SourceMessage } from '../core/ports/partition-source.js'
import type { RunWindowRegistry } from '../core/ports/run-registry.js'

/** Runs whose window length is remembered; beyond this the oldest are asked for again. */
const MAX_CACHED_RUNS = 10_000

export class RunWindows {
  /** run id -> the run's window length (ms), as registered. */
  private readonly lengths = new Map<string, number>()

  constructor(
    private readonly registry: RunWindowRegistry,
    private readonly windowMs: number,
  ) {}

  /** Registers (or looks up) the window length of every run the messages name that has not been seen yet. */
  async learn(messages: readonly SourceMessage[]): Promise<void> {
    let unknown: Set<string> | undefined
    for (const m of messages) {
      const runId = peekRunId(m.value)
      if (runId !== undefined && !this.lengths.has(runId)) (unknown ??= new Set()).add(runId)
    }
    if (unknown === undefined) return
    const claimed = await this.registry.claim([...unknown], this.windowMs)
    for (const [runId, ms] of claimed) {
      if (this.lengths.size >= MAX_CACHED_RUNS) this.lengths.delete(this.lengths.keys().next().value!)
      this.lengths.set(runId, ms)
    }
  }

  /** Why a message must be refused (its run uses another window length), or undefined when it may be counted. */
  refusal(value: Buffer | null): { runId: string; detail: string } | undefined {
    const runId = peekRunId(value)
    if (runId === undefined) return undefined
    const ms = this.lengths.get(runId)
    if (ms === undefined || ms === this.windowMs) return undefined
    return {
      runId,
      detail:
        `run ${runId} uses ${ms} ms windows (registered by the processor that first saw it); this processor ` +
        `has WINDOW_MS=${this.windowMs}. Run every processor of a group with the same WINDOW_MS, ` +
        `or give this processor its own PROCESSOR_GROUP_ID.`,
    }
  }
}

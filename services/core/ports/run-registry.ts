/**
 * Where a run's window length is decided and kept. The window length belongs
 * to the run, not to whichever processor happens to read it: the first
 * processor to see a run registers its own length, and every reader (reports,
 * dashboards, alerts) uses the registered one. A processor configured with
 * another length refuses that run's messages instead of mixing lengths.
 */
export interface RunWindowRegistry {
  /**
   * The window length (ms) of each run, registering `windowMs` for runs that
   * have none yet. Concurrent claims for a new run agree on one winner.
   */
  claim(runIds: readonly string[], windowMs: number): Promise<Map<string, number>>
}

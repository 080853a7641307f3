/**
 * A datastore made slower on demand, for tests that need an alert: every
 * operation takes at least `delayMs` longer. With 200 ms and 10 threads a
 * run can do at most 50 ops/s, a 95% drop from a target of 1000: far beyond
 * what a busy machine does to a run, so the alert it raises holds however
 * busy the machine is. Nothing is dropped; the workers are simply slower.
 */
import type { Binding, OpResult } from '../../services/core/ports/binding.js'
import type { FieldValues } from '../../services/core/workload/workload-types.js'

/** The delay that stalls a run: 10 threads at 200 ms per operation do at most 50 ops/s. */
export const STALL_MS = 200

export class StalledBinding implements Binding {
  delayMs = 0
  constructor(private readonly inner: Binding) {}
  get name(): string {
    return this.inner.name
  }
  init(): Promise<void> {
    return this.inner.init()
  }
  read(t: string, k: string, f: string[] | undefined): Promise<OpResult> {
    return this.slow(this.inner.read(t, k, f))
  }
  scan(t: string, k: string, n: number, f: string[] | undefined): Promise<OpResult> {
    return this.slow(this.inner.scan(t, k, n, f))
  }
  update(t: string, k: string, v: FieldValues): Promise<OpResult> {
    return this.slow(this.inner.update(t, k, v))
  }
  insert(t: string, k: string, v: FieldValues): Promise<OpResult> {
    return this.slow(this.inner.insert(t, k, v))
  }
  delete(t: string, k: string): Promise<OpResult> {
    return this.slow(this.inner.delete(t, k))
  }
  cleanup(): Promise<void> {
    return this.inner.cleanup()
  }
  private async slow(p: Promise<OpResult>): Promise<OpResult> {
    const r = await p
    if (this.delayMs > 0) await new Promise((res) => setTimeout(res, this.delayMs))
    return r
  }
}

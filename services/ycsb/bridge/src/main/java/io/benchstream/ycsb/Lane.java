package io.benchstream.ycsb;

/**
 * One DB instance's (so one YCSB client thread's) event buffer.
 *
 * <p>Why a lane per thread: the hot path appends a handful of varints into a
 * buffer that no other thread writes, so recording an operation allocates
 * nothing and never waits on another client thread; only sealing a batch
 * (every {@code batchEvents} events or {@code lingerMs}) allocates the message
 * and hands it to the shared queue. The lock is uncontended except when the
 * delivery thread seals a lane whose thread went quiet (a throttled or stalled
 * thread must not hold its events back for longer than the linger time).
 */
final class Lane {
  private final Emitter emitter;
  private final int thread;
  private final OpsBatchEncoder encoder;
  private final int batchEvents;
  private final long lingerNanos;
  /** Events per cell of the unsealed batch, see {@link EventCodes#cell}. */
  private int[] counts = new int[EventCodes.CELLS];
  /** nanoTime of the first event of the unsealed batch. */
  private long firstNanos;
  /** Events recorded by this lane, delivered or not. */
  private long measured;
  /** nanoTime of the first operation's start (valid once measured > 0): the end record's firstOpUs. */
  private long firstStartNanos;

  Lane(Emitter emitter, int thread, BridgeConfig cfg) {
    this.emitter = emitter;
    this.thread = thread;
    this.encoder = new OpsBatchEncoder(cfg.runId, cfg.clientId);
    this.batchEvents = cfg.batchEvents;
    this.lingerNanos = cfg.lingerMs * 1_000_000L;
  }

  /**
   * Records one operation. Times are System.nanoTime values; {@code intendedNs}
   * is 0 when there is no intended start (unthrottled, or YCSB measuring
   * measurement.interval=op). Latencies are truncated to µs as YCSB's DBWrapper does.
   */
  synchronized void record(int opCode, int statusIndex, long intendedNs, long startNs, long endNs, long bytes) {
    long latencyUs = (endNs - startNs) / 1000;
    long intendedUs = intendedNs != 0 ? Math.max(latencyUs, (endNs - intendedNs) / 1000) : latencyUs;
    if (encoder.count() == 0) {
      firstNanos = endNs;
    }
    if (measured == 0) {
      firstStartNanos = startNs;
    }
    encoder.add(thread, opCode, EventCodes.CACHE_UNKNOWN, statusIndex, emitter.epochUs(startNs), latencyUs, intendedUs, bytes);
    counts[EventCodes.cell(opCode, statusIndex)]++;
    measured++;
    if (encoder.count() >= batchEvents || endNs - firstNanos >= lingerNanos) {
      seal();
    }
  }

  /** Seals the unsealed batch if its first event is older than the linger time. */
  synchronized void sealIfStale(long nowNanos) {
    if (encoder.count() > 0 && nowNanos - firstNanos >= lingerNanos) {
      seal();
    }
  }

  /** Seals whatever is buffered (cleanup, end of run). */
  synchronized void sealNow() {
    if (encoder.count() > 0) {
      seal();
    }
  }

  synchronized long measured() {
    return measured;
  }

  /** nanoTime of this lane's first operation's start, or null before any. */
  synchronized Long firstStartNanos() {
    return measured == 0 ? null : firstStartNanos;
  }

  private void seal() {
    int events = encoder.count();
    byte[] value = encoder.finish();
    int[] c = counts;
    counts = new int[EventCodes.CELLS];
    emitter.enqueue(new Sealed(value, events, c));
  }

  /** A finished OPS message and what it carries, for the delivery counters. */
  static final class Sealed {
    final byte[] value;
    final int events;
    final int[] counts;

    Sealed(byte[] value, int events, int[] counts) {
      this.value = value;
      this.events = events;
      this.counts = counts;
    }
  }
}

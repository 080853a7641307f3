package io.benchstream.ycsb;

import java.io.PrintStream;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.function.Function;

/**
 * The one per-JVM event emitter shared by every {@link BenchstreamDB} of a YCSB
 * client (YCSB creates one DB instance per client thread).
 *
 * <p>Each DB records into its own {@link Lane}; sealed batches go into one
 * bounded queue that one background thread delivers. When the queue is full
 * (Kafka down or slower than the benchmark) new batches are dropped and their
 * events counted as undelivered: telemetry never slows or blocks the benchmark,
 * and what it could not deliver is reported, never hidden.
 *
 * <p>Life: DB constructors {@link #register} (YCSB constructs all of them in
 * its main thread before any client thread starts), each DB's setProperties
 * (called by YCSB's DBFactory right after construction, still in the main
 * thread and before YCSB starts its run clock) {@link #acquire}s the shared
 * instance and {@link #start}s it (the first start opens Kafka and sends the
 * RUN_LIFECYCLE 'start' record before any event), and each cleanup (or failed
 * init) {@link #release}s it. The last release flushes with a bounded
 * wait, sends the 'end' record with the delivered counts and prints a summary
 * line to stderr. Counting constructed instances rather than initialised ones
 * matters: a thread that finishes before another has even called init must not
 * end the run.
 */
final class Emitter {
  private static final Object LOCK = new Object();
  /** Constructed bridge DBs not yet released. */
  private static int instances;
  /** Next thread index; DBs are numbered in construction order, i.e. YCSB's thread id. */
  private static int nextThread;
  private static Emitter current;
  private static Function<BridgeConfig, Transport> transportFactory = KafkaTransport::new;
  static PrintStream log = System.err;

  /** Give up the end-of-run flush after this long without progress while Kafka fails. */
  private static final long STALL_NANOS = 5_000_000_000L;
  private static final Duration CONTROL_TIMEOUT = Duration.ofSeconds(10);
  private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(5);

  final BridgeConfig cfg;
  /** benchstream.barrier=stdin: where the run's client threads wait for the start instant; else null. */
  private final StartBarrier barrier;
  private final Function<BridgeConfig, Transport> factory;
  private final ArrayBlockingQueue<Lane.Sealed> queue;
  private final List<Lane> lanes = new CopyOnWriteArrayList<>();
  private final long epochBaseUs;
  private final long nanoBase;
  private final long lingerNanos;

  private final AtomicLongArray sent = new AtomicLongArray(EventCodes.CELLS);
  private final AtomicLong sentEvents = new AtomicLong();
  private final AtomicLong undelivered = new AtomicLong();
  /** Events accepted into the queue and not yet acknowledged or failed. */
  private final AtomicLong outstandingEvents = new AtomicLong();
  private final AtomicLong discarded = new AtomicLong();
  private final AtomicLong undeliveredRecords = new AtomicLong();
  private final AtomicLong deliveredBatches = new AtomicLong();
  private final AtomicBoolean errorLogged = new AtomicBoolean();
  private volatile Exception lastError;

  private boolean started;
  private long startNanos;
  private Transport transport;
  private Thread delivery;
  private Thread shutdownHook;
  private volatile boolean stopping;
  private long seq;
  private final AtomicBoolean finished = new AtomicBoolean();
  private Summary summary;

  private Emitter(BridgeConfig cfg, Function<BridgeConfig, Transport> factory) {
    this.cfg = cfg;
    this.factory = factory;
    this.barrier = cfg.barrier ? new StartBarrier() : null;
    this.queue = new ArrayBlockingQueue<>(cfg.maxQueuedBatches);
    this.lingerNanos = cfg.lingerMs * 1_000_000L;
    // One wall-clock reading, then the monotonic clock YCSB also times with: event
    // times cannot jump with NTP inside a run, and no per-operation clock call is needed.
    Instant now = Instant.now();
    this.nanoBase = System.nanoTime();
    this.epochBaseUs = now.getEpochSecond() * 1_000_000L + now.getNano() / 1000;
  }

  // ---------------------------------------------------------------- shared instance

  static int register() {
    synchronized (LOCK) {
      instances++;
      return nextThread++;
    }
  }

  /** The run's emitter, created (not started) from the first DB's properties. */
  static Emitter acquire(Properties p) {
    synchronized (LOCK) {
      if (current == null) {
        current = new Emitter(BridgeConfig.from(p), transportFactory);
      }
      return current;
    }
  }

  /** One registered DB is done (cleanup or failed init); the last one ends the run. */
  static void release() {
    Emitter last = null;
    synchronized (LOCK) {
      if (instances > 0) {
        instances--;
      }
      if (instances == 0) {
        last = current;
        current = null;
        nextThread = 0;
      }
    }
    if (last != null) {
      last.finish();
    }
  }

  /** Tests: forget a run a failed test left behind (DBs never released), so the next test starts clean. */
  static void reset() {
    synchronized (LOCK) {
      instances = 0;
      nextThread = 0;
      current = null;
    }
  }

  /** Tests: replace Kafka. Returns the previous factory. */
  static Function<BridgeConfig, Transport> setTransportFactory(Function<BridgeConfig, Transport> f) {
    synchronized (LOCK) {
      Function<BridgeConfig, Transport> old = transportFactory;
      transportFactory = f;
      return old;
    }
  }

  // ---------------------------------------------------------------- run

  /**
   * Opens the transport without announcing the run (benchstream.barrier=stdin: getting ready, before the
   * barrier; a run called off there leaves no record). Later calls, and start(), reuse it.
   */
  synchronized void prepare() {
    if (transport != null || !cfg.enabled) {
      return;
    }
    transport = factory.apply(cfg);
    try {
      transport.connect();
    } catch (Exception e) {
      // Telemetry never fails the benchmark: the start record will say whether Kafka is there.
      log.println("[BENCHSTREAM] Kafka at " + cfg.brokers + " did not answer while getting ready: " + e);
    }
  }

  /** Opens the transport and announces the run now; later calls return at once. */
  void start() {
    start(System.nanoTime());
  }

  /**
   * Announces the run; its run time counts from {@code runStartNanos} (System.nanoTime; at a barrier, the start
   * instant, which may be a little ahead). Later calls return at once.
   */
  synchronized void start(long runStartNanos) {
    if (started) {
      return;
    }
    started = true;
    startNanos = runStartNanos;
    if (!cfg.enabled) {
      return;
    }
    if (transport == null) {
      transport = factory.apply(cfg);
    }
    if (barrier == null) {
      sendControl(lifecycle("start"));
    } else {
      // At a barrier the instant is near: a round trip to Kafka must not make this client start late. The record is
      // sent now, acknowledged while the client waits for the instant, and counted if it fails.
      sendControlAsync(lifecycle("start"));
    }
    delivery = new Thread(this::deliver, "benchstream-delivery");
    delivery.setDaemon(true);
    delivery.start();
    // YCSB ends with System.exit; a client thread that dies takes the same path.
    // The hook sends what it can and the 'end' record if no cleanup got to it.
    shutdownHook = new Thread(this::finish, "benchstream-shutdown");
    Runtime.getRuntime().addShutdownHook(shutdownHook);
  }

  /**
   * benchstream.barrier=stdin: ready, then the start line, the run announced and the instant; returns at once once
   * passed. Throws IllegalStateException when the run was called off there (nothing was announced then).
   */
  void awaitStart() throws InterruptedException {
    barrier.await(this::start);
  }

  /** A client thread could not get ready: nobody waits at the barrier for a run that cannot start. */
  void callOff(String why) {
    if (barrier != null) {
      barrier.callOff(why);
    }
  }

  Lane newLane(int thread) {
    Lane lane = new Lane(this, thread, cfg);
    lanes.add(lane);
    return lane;
  }

  /** µs since the epoch of a System.nanoTime value. */
  long epochUs(long nanos) {
    return epochBaseUs + Math.floorDiv(nanos - nanoBase, 1000L);
  }

  /** Called by lanes with a sealed batch; never blocks. */
  void enqueue(Lane.Sealed b) {
    if (!cfg.enabled) {
      discarded.addAndGet(b.events);
      return;
    }
    // Counted before the offer so that the delivery callback can never see it negative.
    outstandingEvents.addAndGet(b.events);
    if (!queue.offer(b)) {
      outstandingEvents.addAndGet(-b.events);
      undelivered.addAndGet(b.events);
    }
  }

  private void deliver() {
    long nextSweep = System.nanoTime() + lingerNanos;
    while (!stopping) {
      Lane.Sealed b = null;
      try {
        b = queue.poll(cfg.lingerMs, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        // stopping is checked by the loop
      }
      if (b != null) {
        send(b);
      }
      long now = System.nanoTime();
      if (now - nextSweep >= 0) {
        for (Lane lane : lanes) {
          lane.sealIfStale(now);
        }
        nextSweep = now + lingerNanos;
      }
    }
  }

  private void send(Lane.Sealed b) {
    // Keys name run, client and batch for debugging; the producer ignores them when it picks the partition
    // (KafkaTransport: sticky, so that batches sent back to back share one request), and spreads a client's
    // batches over the partitions batch by batch.
    String key = cfg.runId + ":" + cfg.clientId + ":" + (seq++);
    AtomicBoolean once = new AtomicBoolean();
    transport.send(key, b.value, err -> {
      if (!once.compareAndSet(false, true)) {
        return;
      }
      if (err == null) {
        for (int i = 0; i < EventCodes.CELLS; i++) {
          if (b.counts[i] != 0) {
            sent.addAndGet(i, b.counts[i]);
          }
        }
        sentEvents.addAndGet(b.events);
        deliveredBatches.incrementAndGet();
        lastError = null;
      } else {
        undelivered.addAndGet(b.events);
        lastError = err;
        if (errorLogged.compareAndSet(false, true)) {
          log.println("[BENCHSTREAM] event delivery to Kafka at " + cfg.brokers + " failing: " + err
              + " (events that cannot be delivered are counted as undelivered)");
        }
      }
      outstandingEvents.addAndGet(-b.events);
    });
  }

  /** Ends the run once: flush (bounded), 'end' record, summary line. */
  void finish() {
    if (!finished.compareAndSet(false, true)) {
      return;
    }
    synchronized (this) {
      if (!started) {
        // Called off at the barrier (or never started): nothing was announced, so nothing ends.
        if (transport != null) {
          transport.close(Duration.ZERO);
        }
        return;
      }
    }
    if (shutdownHook != null && Thread.currentThread() != shutdownHook) {
      try {
        Runtime.getRuntime().removeShutdownHook(shutdownHook);
      } catch (IllegalStateException e) {
        // the JVM is already shutting down
      }
    }
    for (Lane lane : lanes) {
      lane.sealNow();
    }
    long measured = 0;
    Long firstStart = null;
    for (Lane lane : lanes) {
      measured += lane.measured();
      Long f = lane.firstStartNanos();
      if (f != null && (firstStart == null || f - firstStart < 0)) {
        firstStart = f;
      }
    }
    long runtimeMs = Math.max(0, (System.nanoTime() - startNanos) / 1_000_000L);
    if (!cfg.enabled) {
      summary = new Summary(measured, 0, 0, discarded.get(), 0);
      log.println("[BENCHSTREAM] emission disabled (benchstream.enabled=false): " + measured
          + " events measured and encoded, none sent; run " + cfg.runId + ", client " + cfg.clientId);
      return;
    }
    drain();
    stopping = true;
    delivery.interrupt();
    try {
      delivery.join(10_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    List<Lane.Sealed> left = new ArrayList<>();
    queue.drainTo(left);
    for (Lane.Sealed b : left) {
      outstandingEvents.addAndGet(-b.events);
      undelivered.addAndGet(b.events);
    }
    // Batches Kafka has not acknowledged by now are reported as undelivered: the
    // 'end' record only claims what was confirmed.
    long notConfirmed = undelivered.get() + outstandingEvents.get();
    LifecycleRecord end = lifecycle("end");
    end.sent = sentByName();
    end.undelivered = notConfirmed;
    end.runtimeMs = runtimeMs;
    end.firstOpUs = firstStart == null ? null : epochUs(firstStart);
    long delivered = sentEvents.get();
    // Read before the end record and the close: the requests that carried the events.
    long requests = transport.requests();
    sendControl(end);
    // While Kafka fails, waiting for the producer to give up adds nothing: what it
    // still holds is already counted as undelivered above.
    transport.close(lastError != null ? Duration.ZERO : CLOSE_TIMEOUT);
    summary = new Summary(measured, delivered, notConfirmed, 0, undeliveredRecords.get());
    log.println("[BENCHSTREAM] run " + cfg.runId + ", client " + cfg.clientId + ": " + measured + " events measured, "
        + delivered + " delivered, " + notConfirmed + " undelivered (" + deliveredBatches.get() + " batches"
        + (requests >= 0 ? " in " + requests + " Kafka requests" : "") + " to " + cfg.topic + " at " + cfg.brokers
        + "); control records undelivered: " + undeliveredRecords.get());
  }

  /** Waits for the queue and in-flight batches, at most flushTimeoutMs, less when Kafka fails without progress. */
  private void drain() {
    long deadline = System.nanoTime() + cfg.flushTimeoutMs * 1_000_000L;
    long lastProgress = System.nanoTime();
    // Progress means acknowledgements: a dead broker also "completes" batches (each
    // failing after the producer's max.block.ms), which must not keep us waiting.
    long lastDone = sentEvents.get();
    while (outstandingEvents.get() > 0) {
      long now = System.nanoTime();
      if (now - deadline >= 0) {
        return;
      }
      long done = sentEvents.get();
      if (done != lastDone) {
        lastDone = done;
        lastProgress = now;
      } else if (lastError != null && now - lastProgress > STALL_NANOS) {
        return;
      }
      try {
        Thread.sleep(5);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  private Map<String, Long> sentByName() {
    Map<String, Long> out = new LinkedHashMap<>();
    for (int i = 0; i < EventCodes.CELLS; i++) {
      long c = sent.get(i);
      if (c > 0) {
        out.put(EventCodes.OPERATIONS[(i >> 4) - 1] + "/" + EventCodes.STATUSES[i & 15], c);
      }
    }
    return out;
  }

  private LifecycleRecord lifecycle(String phase) {
    LifecycleRecord r = new LifecycleRecord();
    r.phase = phase;
    r.runId = cfg.runId;
    r.clientId = cfg.clientId;
    Instant now = Instant.now();
    r.atUs = now.getEpochSecond() * 1_000_000L + now.getNano() / 1000;
    r.labels = cfg.labels;
    r.workload = cfg.workload;
    r.binding = cfg.db;
    r.threads = cfg.threads;
    r.target = cfg.target;
    if (phase.equals("start")) {
      r.group = cfg.group;
      r.repeat = cfg.repetition;
      r.expectedClients = cfg.expectedClients;
      r.clockOffsetMs = cfg.clockOffsetMs;
    }
    return r;
  }

  private void sendControl(LifecycleRecord r) {
    try {
      transport.sendAndWait(cfg.runId + ":" + cfg.clientId + ":ctl", r.encode(), CONTROL_TIMEOUT);
    } catch (Exception e) {
      // Never fail the benchmark for telemetry: count it, the summary shows it.
      undeliveredRecords.incrementAndGet();
      log.println("[BENCHSTREAM] could not send the run '" + r.phase + "' record to Kafka at " + cfg.brokers + ": " + e);
    }
  }

  private void sendControlAsync(LifecycleRecord r) {
    transport.send(cfg.runId + ":" + cfg.clientId + ":ctl", r.encode(), err -> {
      if (err != null) {
        undeliveredRecords.incrementAndGet();
        log.println("[BENCHSTREAM] could not send the run '" + r.phase + "' record to Kafka at " + cfg.brokers + ": " + err);
      }
    });
  }

  /** Figures of a finished run (tests). */
  Summary summary() {
    return summary;
  }

  static final class Summary {
    final long measured;
    final long delivered;
    final long undelivered;
    final long discarded;
    final long undeliveredRecords;

    Summary(long measured, long delivered, long undelivered, long discarded, long undeliveredRecords) {
      this.measured = measured;
      this.delivered = delivered;
      this.undelivered = undelivered;
      this.discarded = discarded;
      this.undeliveredRecords = undeliveredRecords;
    }
  }
}

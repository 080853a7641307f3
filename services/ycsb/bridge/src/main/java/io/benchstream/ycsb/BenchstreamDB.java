package io.benchstream.ycsb;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;

import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.measurements.Measurements;

/**
 * A YCSB DB that wraps any other YCSB DB (property {@code benchstream.db}) and
 * sends one Benchstream event per operation to Kafka, so every YCSB binding
 * becomes a live Benchstream driver:
 *
 * <pre>
 *   bin/ycsb-style: java -cp ... site.ycsb.Client -t -db io.benchstream.ycsb.BenchstreamDB \
 *       -p benchstream.db=io.benchstream.ycsb.redis.RedisClient -p benchstream.runid=R ...
 * </pre>
 *
 * Each call is timed as YCSB's DBWrapper times it (System.nanoTime around the
 * call, truncated to µs); with a target, the intended start comes from YCSB's
 * Measurements (coordinated-omission correction), so Benchstream's latencies and
 * YCSB's own report describe the same operations the same way. YCSB's DBWrapper
 * still wraps this class and produces its usual report.
 */
public final class BenchstreamDB extends DB {
  /**
   * YCSB's getter of the intended start time. 0.17.0 spells it
   * {@code getIntendedtartTimeNs} (a typo fixed after the release, as
   * {@code getIntendedStartTimeNs}); resolved once so the bridge runs on both.
   */
  private static final MethodHandle INTENDED_START = intendedStartGetter();

  /** Stable thread index: construction order, which is YCSB's thread id. */
  private final int thread;
  private boolean registered;
  private DB inner;
  /** The wrapped DB's init() succeeded: its cleanup() is owed. */
  private boolean innerReady;
  private Emitter emitter;
  private Lane lane;
  private Measurements measurements;
  /** A bad setting or a failed start found by setProperties, thrown by init. */
  private RuntimeException setupError;
  /** -target set: take intended start times from YCSB; otherwise intended = measured latency. */
  private boolean throttled;

  public BenchstreamDB() {
    thread = Emitter.register();
    registered = true;
  }

  /**
   * YCSB's DBFactory calls this in the main thread right after construction,
   * before any client thread starts and before YCSB starts its run clock: the
   * shared emitter is opened here (Kafka producer, 'start' record), so that its
   * set-up cost is not part of YCSB's measured RunTime and throughput. A bad
   * setting is remembered and reported by init(), which may throw.
   *
   * <p>With benchstream.barrier=stdin the client gets ready here instead: Kafka
   * connected, and the wrapped DB created and initialised for each client thread
   * in turn (so its connections are made before the barrier, not after the start).
   * The last client thread's DB then waits at the barrier, still in YCSB's main
   * thread, so that YCSB starts its clock (RunTime, maxexecutiontime) and its
   * client threads at the start instant rather than before a wait of unknown length.
   */
  @Override
  public void setProperties(Properties p) {
    super.setProperties(p);
    if (emitter != null || setupError != null) {
      return;
    }
    try {
      emitter = Emitter.acquire(p);
      // A binding that is not on the class path would fail every init: do not announce that run.
      wrappedClass(emitter.cfg.db);
      if (!emitter.cfg.barrier) {
        emitter.start();
        return;
      }
      emitter.prepare();
      try {
        openInner(p);
      } catch (DBException | RuntimeException e) {
        emitter.callOff("client thread " + thread + " could not get ready: " + e.getMessage());
        throw e;
      }
      if (thread == clientThreads(p) - 1) {
        emitter.awaitStart();
      }
    } catch (DBException e) {
      setupError = new IllegalStateException(e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      setupError = new IllegalStateException("interrupted at the start barrier", e);
    } catch (RuntimeException e) {
      setupError = e;
    }
  }

  /**
   * The number of client threads YCSB 0.17.0's Client creates (Client.initDb): threadcount, but no more than the
   * operations (or records to insert), 0 included: operationcount=0 there means no client thread at all, so a run
   * bounded by maxexecutiontime alone needs a large operationcount.
   */
  static int clientThreads(Properties p) {
    int threads = Integer.parseInt(p.getProperty("threadcount", "1").trim());
    boolean transactions = Boolean.parseBoolean(p.getProperty("dotransactions", "true"));
    String count = transactions ? p.getProperty("operationcount", "0")
        : p.getProperty("insertcount", p.getProperty("recordcount", "0"));
    int ops = Integer.parseInt(count.trim());
    return Math.min(threads, ops);
  }

  private void openInner(Properties props) throws DBException {
    if (thread > 65_535) {
      throw new IllegalArgumentException("more than 65536 client threads: the event schema's thread index is 0..65535");
    }
    inner = instantiate(emitter.cfg.db);
    inner.setProperties(props);
    inner.init();
    innerReady = true;
  }

  @Override
  public void init() throws DBException {
    try {
      if (setupError != null) {
        throw setupError;
      }
      if (emitter == null) {
        // Not created by YCSB's DBFactory (setProperties never called).
        setProperties(getProperties());
        if (setupError != null) {
          throw setupError;
        }
      }
      if (inner == null) {
        openInner(getProperties());
      }
      if (emitter.cfg.barrier) {
        // Passed in YCSB's main thread already (returns at once), or, when the main thread did not get to it,
        // the first client thread here reads stdin and every thread waits for the instant.
        emitter.awaitStart();
      }
      throttled = emitter.cfg.target > 0;
      // Looked up once: Measurements.getMeasurements() is a synchronized static.
      measurements = Measurements.getMeasurements();
      lane = emitter.newLane(thread);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      cleanupInnerQuietly();
      release();
      throw new DBException("benchstream: interrupted at the start barrier", e);
    } catch (DBException | RuntimeException e) {
      // YCSB calls no cleanup() after a failed init(): a wrapped DB made ready before the barrier is closed here.
      cleanupInnerQuietly();
      release();
      if (e instanceof IllegalArgumentException || e instanceof IllegalStateException) {
        throw new DBException("benchstream: " + e.getMessage(), e);
      }
      throw e;
    }
  }

  /**
   * The wrapped DB is created by reflection, not with YCSB's DBFactory: DBFactory
   * would wrap it in a second DBWrapper and every operation would be counted
   * twice in YCSB's own report.
   */
  private static DB instantiate(String className) throws DBException {
    try {
      return (DB) wrappedClass(className).getDeclaredConstructor().newInstance();
    } catch (ReflectiveOperationException e) {
      throw new DBException("benchstream.db=" + className + ": cannot instantiate: " + e, e);
    }
  }

  private static Class<?> wrappedClass(String className) throws DBException {
    Class<?> c;
    try {
      c = Class.forName(className, true, BenchstreamDB.class.getClassLoader());
    } catch (ClassNotFoundException e) {
      throw new DBException("benchstream.db=" + className + ": class not found on the class path", e);
    }
    if (!DB.class.isAssignableFrom(c)) {
      throw new DBException("benchstream.db=" + className + " is not a site.ycsb.DB");
    }
    return c;
  }

  @Override
  public void cleanup() throws DBException {
    try {
      if (lane != null) {
        lane.sealNow();
      }
      if (inner != null) {
        inner.cleanup();
      }
    } finally {
      release();
    }
  }

  private void cleanupInnerQuietly() {
    if (innerReady) {
      innerReady = false;
      try {
        inner.cleanup();
      } catch (DBException | RuntimeException e) {
        // the run is over before it began; the error that ended it is the one to report
      }
    }
  }

  private void release() {
    if (registered) {
      registered = false;
      Emitter.release();
    }
  }

  // ---------------------------------------------------------------- operations
  // Each is: intended start, nanoTime, call, nanoTime, record, in DBWrapper's
  // order. Payload bytes of writes are counted before the call (the binding
  // consumes the iterators), of reads after the second clock reading.
  // An exception from the wrapped DB is not recorded: YCSB does not measure it
  // either (it ends the client), so Benchstream's counts stay equal to YCSB's.

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    long ist = intendedStart();
    long st = System.nanoTime();
    Status s = inner.read(table, key, fields, result);
    long en = System.nanoTime();
    lane.record(EventCodes.READ, EventCodes.statusIndex(s), ist, st, en, bytes(result));
    return s;
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
                     Vector<HashMap<String, ByteIterator>> result) {
    long ist = intendedStart();
    long st = System.nanoTime();
    Status s = inner.scan(table, startkey, recordcount, fields, result);
    long en = System.nanoTime();
    long n = 0;
    if (result != null) {
      for (int i = 0, rows = result.size(); i < rows; i++) {
        n += bytes(result.get(i));
      }
    }
    lane.record(EventCodes.SCAN, EventCodes.statusIndex(s), ist, st, en, n);
    return s;
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    long n = bytes(values);
    long ist = intendedStart();
    long st = System.nanoTime();
    Status s = inner.update(table, key, values);
    long en = System.nanoTime();
    lane.record(EventCodes.UPDATE, EventCodes.statusIndex(s), ist, st, en, n);
    return s;
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    long n = bytes(values);
    long ist = intendedStart();
    long st = System.nanoTime();
    Status s = inner.insert(table, key, values);
    long en = System.nanoTime();
    lane.record(EventCodes.INSERT, EventCodes.statusIndex(s), ist, st, en, n);
    return s;
  }

  @Override
  public Status delete(String table, String key) {
    long ist = intendedStart();
    long st = System.nanoTime();
    Status s = inner.delete(table, key);
    long en = System.nanoTime();
    lane.record(EventCodes.DELETE, EventCodes.statusIndex(s), ist, st, en, 0);
    return s;
  }

  /**
   * Intended start of the current operation (nanoTime), or 0 for none. YCSB sets
   * it only when throttled and measuring intended latency
   * (measurement.interval=intended|both); with measurement.interval=op it
   * returns 0, and Benchstream's intended latency equals the measured one.
   */
  private long intendedStart() {
    if (!throttled || INTENDED_START == null) {
      return 0;
    }
    try {
      return (long) INTENDED_START.invokeExact(measurements);
    } catch (Throwable t) {
      return 0;
    }
  }

  /**
   * Sum of the values' lengths, as the TS driver's valuesBytes counts them.
   * bytesLeft() does not consume the iterator.
   */
  static long bytes(Map<String, ByteIterator> values) {
    if (values == null || values.isEmpty()) {
      return 0;
    }
    long n = 0;
    for (ByteIterator v : values.values()) {
      if (v != null) {
        n += Math.max(0, v.bytesLeft());
      }
    }
    return n;
  }

  private static MethodHandle intendedStartGetter() {
    MethodHandles.Lookup lookup = MethodHandles.publicLookup();
    for (String name : new String[] {"getIntendedStartTimeNs", "getIntendedtartTimeNs"}) {
      try {
        return lookup.findVirtual(Measurements.class, name, MethodType.methodType(long.class));
      } catch (NoSuchMethodException | IllegalAccessException e) {
        // try the other spelling
      }
    }
    return null;
  }
}

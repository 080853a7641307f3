package io.benchstream.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import site.ycsb.DBException;
import site.ycsb.measurements.Measurements;

/**
 * benchstream.barrier=stdin: the bridge gets ready in YCSB's main thread (Kafka, every client thread's wrapped
 * DB), says so on stderr, and starts at the instant read from stdin; abort and a closed stdin call the run off
 * with nothing announced; the end of stdin after the start ends the client without an end record.
 */
class StartBarrierTest {
  /** How late the start may be on a busy machine (the spin aims at well under a ms). */
  private static final long LATE_MS = 150;
  private FakeTransport transport;
  private Function<BridgeConfig, Transport> previous;
  private FakeStdin stdin;
  private ByteArrayOutputStream said;
  private CountDownLatch stdinClosed;

  @BeforeAll
  static void measurements() {
    // A per-JVM singleton, configured once as YCSB's Client does (whichever test class comes first).
    Properties p = new Properties();
    p.setProperty("measurement.interval", "both");
    Measurements.setProperties(p);
  }

  @BeforeEach
  void fakes() {
    Emitter.reset();
    transport = new FakeTransport();
    previous = Emitter.setTransportFactory(cfg -> transport);
    Emitter.log = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);
    stdin = new FakeStdin();
    said = new ByteArrayOutputStream();
    stdinClosed = new CountDownLatch(1);
    StartBarrier.in = stdin;
    StartBarrier.err = new PrintStream(said, true, StandardCharsets.UTF_8);
    StartBarrier.onStdinClosed = stdinClosed::countDown;
    FakeDB.failInit = false;
  }

  @AfterEach
  void restore() {
    Emitter.setTransportFactory(previous);
    Emitter.log = System.err;
    // Never the real one (halt) in this JVM: a watcher left from a test may still see its stdin end.
    StartBarrier.onStdinClosed = () -> { };
    stdin.close();
  }

  private static Properties props(String... kv) {
    Properties p = new Properties();
    p.setProperty("benchstream.db", FakeDB.class.getName());
    p.setProperty("benchstream.runid", "run-b");
    p.setProperty("benchstream.clientid", "client-b");
    p.setProperty("benchstream.barrier", "stdin");
    p.setProperty("workload", "site.ycsb.workloads.CoreWorkload");
    p.setProperty("operationcount", "1000");
    for (int i = 0; i < kv.length; i += 2) {
      p.setProperty(kv[i], kv[i + 1]);
    }
    return p;
  }

  private static long nowUs() {
    Instant now = Instant.now();
    return now.getEpochSecond() * 1_000_000L + now.getNano() / 1000;
  }

  private String said() {
    return said.toString(StandardCharsets.UTF_8);
  }

  private void awaitReady() throws InterruptedException {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (!said().contains(StartBarrier.READY_LINE)) {
      assertTrue(System.nanoTime() < deadline, "no ready line: " + said());
      Thread.sleep(5);
    }
  }

  /** YCSB's main thread: constructs the DBs and sets their properties (the last one waits at the barrier). */
  private static final class MainThread extends Thread {
    final List<BenchstreamDB> dbs = new ArrayList<>();
    final AtomicLong returnedUs = new AtomicLong();
    private final int n;
    private final Properties p;

    MainThread(int n, Properties p) {
      this.n = n;
      this.p = p;
    }

    @Override
    public void run() {
      for (int i = 0; i < n; i++) {
        BenchstreamDB db = new BenchstreamDB();
        db.setProperties(p);
        dbs.add(db);
      }
      returnedUs.set(nowUs());
    }
  }

  private static String json(byte[] record) {
    return new String(record, 4, record.length - 4, StandardCharsets.UTF_8);
  }

  @Test
  void readyThenEveryThreadStartsAtTheInstantAndTheRecordsSaySo() throws Exception {
    int inits = FakeDB.INITS.get();
    MainThread main = new MainThread(2, props("threadcount", "2", "benchstream.group", "g-1", "benchstream.repetition",
        "2", "benchstream.expected.clients", "3", "benchstream.clock.offset.ms", "-1.50"));
    main.start();
    awaitReady();
    assertEquals(inits + 2, FakeDB.INITS.get(), "ready means every client thread's wrapped DB is initialised");
    assertTrue(main.isAlive(), "the last DB waits at the barrier in YCSB's main thread");
    assertTrue(transport.control.isEmpty(), "nothing is announced before the start");
    long atMs = System.currentTimeMillis() + 400;
    stdin.write("start " + atMs + "\n");
    main.join(5_000);
    assertFalse(main.isAlive());
    long late = main.returnedUs.get() - atMs * 1000;
    assertTrue(late >= 0 && late < LATE_MS * 1000, "returned " + late + " µs after the instant");
    assertEquals(1, transport.control.size(), "the start record is sent before the instant");

    for (BenchstreamDB db : main.dbs) {
      db.init(); // passed: returns at once
      db.read("usertable", "k", null, new HashMap<>());
    }
    for (BenchstreamDB db : main.dbs) {
      db.cleanup();
    }
    String start = json(transport.control.get(0));
    assertTrue(start.endsWith("\"threads\":2,\"target\":0,\"group\":\"g-1\",\"repeat\":2,\"expectedClients\":3,"
        + "\"clockOffsetMs\":-1.5}"), start);
    String end = json(transport.control.get(1));
    Matcher m = Pattern.compile("\"runtimeMs\":(\\d+),\"firstOpUs\":(\\d+)}$").matcher(end);
    assertTrue(m.find(), end);
    long firstOpUs = Long.parseLong(m.group(2));
    assertTrue(firstOpUs >= atMs * 1000 && firstOpUs < (atMs + 5_000) * 1000, "firstOpUs " + firstOpUs + " at " + atMs);
    assertTrue(Long.parseLong(m.group(1)) < 5_000, "run time counts from the instant: " + end);
    assertFalse(end.contains("\"group\""), "start fields are in the start record only: " + end);
  }

  @Test
  void abortCallsTheRunOffWithNothingAnnounced() throws Exception {
    int cleanups = FakeDB.CLEANUPS.get();
    MainThread main = new MainThread(2, props("threadcount", "2"));
    main.start();
    awaitReady();
    stdin.write("abort\n");
    main.join(5_000);
    for (BenchstreamDB db : main.dbs) {
      DBException e = assertThrows(DBException.class, db::init);
      assertTrue(e.getMessage().contains("called off at its start barrier: abort"), e.getMessage());
    }
    assertTrue(transport.control.isEmpty(), "no start and no end record");
    assertTrue(transport.closed);
    assertEquals(cleanups + 2, FakeDB.CLEANUPS.get(), "the wrapped DBs made ready are closed");
  }

  @Test
  void stdinClosedOrAStrangeLineBeforeTheStartCallsItOff() throws Exception {
    MainThread main = new MainThread(1, props());
    main.start();
    awaitReady();
    stdin.close();
    main.join(5_000);
    DBException e = assertThrows(DBException.class, main.dbs.get(0)::init);
    assertTrue(e.getMessage().contains("called off at its start barrier: stdin closed"), e.getMessage());

    stdin = new FakeStdin();
    StartBarrier.in = stdin;
    said.reset();
    main = new MainThread(1, props());
    main.start();
    awaitReady();
    stdin.write("go now\n");
    main.join(5_000);
    e = assertThrows(DBException.class, main.dbs.get(0)::init);
    assertTrue(e.getMessage().contains("'go now' on stdin, expected \"start <ms since epoch>\""), e.getMessage());
    assertTrue(transport.control.isEmpty());
  }

  @Test
  void theEndOfStdinAfterTheStartEndsTheClientWithoutAnEndRecord() throws Exception {
    MainThread main = new MainThread(1, props());
    main.start();
    awaitReady();
    stdin.write("start " + (System.currentTimeMillis() + 50) + "\n");
    main.join(5_000);
    main.dbs.get(0).init();
    main.dbs.get(0).read("usertable", "k", null, new HashMap<>());
    assertEquals(1, stdinClosed.getCount(), "stdin still open: the client runs");
    stdin.close();
    assertTrue(stdinClosed.await(5, TimeUnit.SECONDS), "the end of stdin ends the client");
    assertEquals(1, transport.control.size(), "only the start record: the real hook halts the JVM here");
    main.dbs.get(0).cleanup();
  }

  @Test
  void aClientThreadThatCannotGetReadyCallsTheRunOffWithoutWaiting() throws Exception {
    FakeDB.failInit = true;
    BenchstreamDB first = new BenchstreamDB();
    first.setProperties(props("threadcount", "2"));
    FakeDB.failInit = false;
    BenchstreamDB last = new BenchstreamDB();
    last.setProperties(props("threadcount", "2")); // would wait at the barrier
    assertFalse(said().contains(StartBarrier.READY_LINE), "a client that is not ready does not say it is");
    DBException e = assertThrows(DBException.class, first::init);
    assertTrue(e.getMessage().contains("fake init failure"), e.getMessage());
    e = assertThrows(DBException.class, last::init);
    assertTrue(e.getMessage().contains("client thread 0 could not get ready"), e.getMessage());
    assertTrue(transport.control.isEmpty());
  }

  @Test
  void withoutTheMainThreadAtTheBarrierTheFirstClientThreadWaitsAndTheOthersWithIt() throws Exception {
    // threadcount says 3 but 2 DBs are made: the main thread never reaches "the last one", the client threads wait.
    Properties p = props("threadcount", "3");
    List<BenchstreamDB> dbs = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      BenchstreamDB db = new BenchstreamDB();
      db.setProperties(p);
      dbs.add(db);
    }
    assertFalse(said().contains(StartBarrier.READY_LINE));
    List<Thread> threads = new ArrayList<>();
    List<AtomicLong> initedUs = new ArrayList<>();
    for (BenchstreamDB db : dbs) {
      AtomicLong at = new AtomicLong();
      initedUs.add(at);
      Thread t = new Thread(() -> {
        try {
          db.init();
          at.set(nowUs());
        } catch (DBException e) {
          at.set(-1);
        }
      });
      threads.add(t);
      t.start();
    }
    awaitReady();
    long atMs = System.currentTimeMillis() + 300;
    stdin.write("start " + atMs + "\n");
    for (Thread t : threads) {
      t.join(5_000);
    }
    for (AtomicLong at : initedUs) {
      long late = at.get() - atMs * 1000;
      assertTrue(late >= 0 && late < LATE_MS * 1000, "a thread started " + late + " µs after the instant");
    }
    assertEquals(1, said().split(StartBarrier.READY_LINE, -1).length - 1, "ready said once");
    for (BenchstreamDB db : dbs) {
      db.cleanup();
    }
    assertEquals(2, transport.control.size());
  }

  @Test
  void clientThreadsAreCountedAsYcsbsClientCountsThem() {
    Properties p = new Properties();
    p.setProperty("operationcount", "1000");
    assertEquals(1, BenchstreamDB.clientThreads(p));
    p.setProperty("threadcount", "8");
    assertEquals(8, BenchstreamDB.clientThreads(p));
    p.setProperty("operationcount", "0");
    assertEquals(0, BenchstreamDB.clientThreads(p), "YCSB 0.17.0: operationcount 0 means no thread at all");
    p.setProperty("operationcount", "5");
    assertEquals(5, BenchstreamDB.clientThreads(p), "no more threads than operations");
    p.setProperty("dotransactions", "false");
    assertEquals(0, BenchstreamDB.clientThreads(p), "a load counts records, 0 by default");
    p.setProperty("recordcount", "3");
    assertEquals(3, BenchstreamDB.clientThreads(p));
    p.setProperty("insertcount", "100");
    assertEquals(8, BenchstreamDB.clientThreads(p), "insertcount before recordcount");
  }

  @Test
  void experimentPropertiesAreCheckedAsTheDriverChecksItsFlags() {
    assertEquals("1.5", BridgeConfig.clockOffset("1.50"));
    assertEquals("0", BridgeConfig.clockOffset("-0.000"));
    assertEquals("100", BridgeConfig.clockOffset("100"));
    assertEquals("-86400000", BridgeConfig.clockOffset("-86400000"));
    assertNull(BridgeConfig.clockOffset(""));
    for (String bad : new String[] {"86400000.5", "1e3", "+1", ".5", "x"}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> BridgeConfig.clockOffset(bad));
      assertTrue(e.getMessage().contains("a number of ms within a day either way"), e.getMessage());
    }
    String[][] bad = {
        {"benchstream.barrier", "file", "benchstream.barrier 'file' is not allowed: expected stdin"},
        {"benchstream.repetition", "0", "benchstream.repetition must be between 1 and 100000, got 0"},
        {"benchstream.expected.clients", "1025", "benchstream.expected.clients must be between 1 and 1024"},
        {"benchstream.group", "a b", "benchstream.group 'a b' is not allowed"},
    };
    for (String[] c : bad) {
      Properties p = props(c[0], c[1]);
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> BridgeConfig.from(p));
      assertTrue(e.getMessage().contains(c[2]), e.getMessage());
    }
    BridgeConfig none = BridgeConfig.from(props("benchstream.barrier", ""));
    assertFalse(none.barrier);
    assertNull(none.group);
    assertNull(none.repetition);
  }
}

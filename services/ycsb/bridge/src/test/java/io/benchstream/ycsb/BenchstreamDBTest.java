package io.benchstream.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Vector;
import java.util.function.Function;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import site.ycsb.ByteIterator;
import site.ycsb.DBException;
import site.ycsb.RandomByteIterator;
import site.ycsb.Status;
import site.ycsb.measurements.Measurements;

class BenchstreamDBTest {
  private FakeTransport transport;
  private Function<BridgeConfig, Transport> previous;
  private ByteArrayOutputStream stderr;

  @BeforeAll
  static void measureIntendedLatency() {
    // Measurements is a per-JVM singleton configured once, as YCSB's Client does.
    Properties p = new Properties();
    p.setProperty("measurement.interval", "both");
    Measurements.setProperties(p);
  }

  @BeforeEach
  void fakeKafka() {
    Emitter.reset();
    transport = new FakeTransport();
    previous = Emitter.setTransportFactory(cfg -> transport);
    stderr = new ByteArrayOutputStream();
    Emitter.log = new PrintStream(stderr, true, StandardCharsets.UTF_8);
    FakeDB.updateStatus = Status.OK;
    FakeDB.insertStatus = Status.OK;
    FakeDB.deleteStatus = Status.OK;
    FakeDB.failInit = false;
  }

  @AfterEach
  void restore() {
    Emitter.setTransportFactory(previous);
    Emitter.log = System.err;
  }

  private static Properties props(String... kv) {
    Properties p = new Properties();
    p.setProperty("benchstream.db", FakeDB.class.getName());
    p.setProperty("benchstream.runid", "run-1");
    p.setProperty("benchstream.clientid", "client-a");
    p.setProperty("workload", "site.ycsb.workloads.CoreWorkload");
    for (int i = 0; i < kv.length; i += 2) {
      p.setProperty(kv[i], kv[i + 1]);
    }
    return p;
  }

  /** Constructs all DBs first, as YCSB's Client does, then inits them. */
  private static List<BenchstreamDB> open(int n, Properties p) throws DBException {
    List<BenchstreamDB> dbs = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      BenchstreamDB db = new BenchstreamDB();
      db.setProperties(p);
      dbs.add(db);
    }
    for (BenchstreamDB db : dbs) {
      db.init();
    }
    return dbs;
  }

  private static Map<String, ByteIterator> values(int fields, int length) {
    Map<String, ByteIterator> m = new HashMap<>();
    for (int i = 0; i < fields; i++) {
      m.put("field" + i, new RandomByteIterator(length));
    }
    return m;
  }

  private List<TestDecoder.Event> events() {
    List<TestDecoder.Event> all = new ArrayList<>();
    for (byte[] m : transport.events) {
      all.addAll(TestDecoder.decode(m));
    }
    return all;
  }

  private static String json(byte[] record) {
    assertEquals(0x42, record[0]);
    assertEquals(0x53, record[1]);
    assertEquals(1, record[2]);
    assertEquals(3, record[3]);
    return new String(record, 4, record.length - 4, StandardCharsets.UTF_8);
  }

  @Test
  void delegatesEveryCallAndSendsOneEventPerOperation() throws Exception {
    int inits = FakeDB.INITS.get();
    int cleanups = FakeDB.CLEANUPS.get();
    FakeDB.updateStatus = Status.BATCHED_OK;
    FakeDB.insertStatus = new Status("TIMEOUT", "a binding's own status");
    FakeDB.deleteStatus = new Status("SOMETHING_NEW", "unknown to Benchstream");
    Properties p = props("threadcount", "3", "benchstream.labels", "system=fake,version=1.2");
    List<BenchstreamDB> dbs = open(3, p);
    assertEquals(inits + 3, FakeDB.INITS.get());
    for (BenchstreamDB db : dbs) {
      assertEquals(Status.OK, db.read("usertable", "user1", null, new HashMap<>()));
      assertEquals(Status.BATCHED_OK, db.update("usertable", "user1", values(2, 100)));
      assertEquals("TIMEOUT", db.insert("usertable", "user2", values(10, 100)).getName());
      assertEquals("SOMETHING_NEW", db.delete("usertable", "user2").getName());
      Vector<HashMap<String, ByteIterator>> rows = new Vector<>();
      assertEquals(Status.NOT_FOUND, db.scan("usertable", "user1", 4, null, rows));
      assertEquals(4, rows.size(), "the wrapped DB's results reach the caller");
    }
    for (BenchstreamDB db : dbs) {
      db.cleanup();
    }
    assertEquals(cleanups + 3, FakeDB.CLEANUPS.get());
    assertTrue(transport.closed);

    List<TestDecoder.Event> ev = events();
    assertEquals(15, ev.size());
    int[] perThread = new int[3];
    for (TestDecoder.Event e : ev) {
      assertEquals("run-1", e.runId);
      assertEquals("client-a", e.clientId);
      perThread[e.thread]++;
      assertEquals(EventCodes.CACHE_UNKNOWN, e.cache);
      assertEquals(e.latencyUs, e.intendedUs, "unthrottled: intended == measured");
      assertTrue(Math.abs(e.startUs - System.currentTimeMillis() * 1000) < 60_000_000L, "start is epoch µs");
      switch (e.opCode) {
        case EventCodes.READ:
          assertEquals(0, e.status);
          assertEquals(20, e.bytes, "two 10-character fields read");
          break;
        case EventCodes.UPDATE:
          assertEquals(0, e.status, "BATCHED_OK counts as OK");
          assertEquals(200, e.bytes, "bytes counted before the binding consumed the values");
          break;
        case EventCodes.INSERT:
          assertEquals(8, e.status, "TIMEOUT");
          assertEquals(1000, e.bytes);
          break;
        case EventCodes.DELETE:
          assertEquals(1, e.status, "unknown status is ERROR");
          assertEquals(0, e.bytes);
          break;
        case EventCodes.SCAN:
          assertEquals(2, e.status, "NOT_FOUND");
          assertEquals(12, e.bytes, "4 rows of 3 characters");
          break;
        default:
          throw new AssertionError("unexpected op " + e.opCode);
      }
    }
    assertEquals("[5, 5, 5]", Arrays.toString(perThread), "thread index = construction order");

    assertEquals(2, transport.control.size());
    String start = json(transport.control.get(0));
    String end = json(transport.control.get(1));
    assertTrue(start.startsWith("{\"kind\":3,\"phase\":\"start\",\"atUs\":"), start);
    assertTrue(start.contains("\"runId\":\"run-1\",\"clientId\":\"client-a\",\"labels\":{\"system\":\"fake\",\"version\":\"1.2\"},"
        + "\"workload\":\"site.ycsb.workloads.CoreWorkload\",\"binding\":\"io.benchstream.ycsb.FakeDB\",\"threads\":3,\"target\":0}"), start);
    assertTrue(end.contains("\"sent\":{\"READ/OK\":3,\"UPDATE/OK\":3,\"INSERT/TIMEOUT\":3,\"SCAN/NOT_FOUND\":3,\"DELETE/ERROR\":3},\"undelivered\":0,\"runtimeMs\":"), end);
    String log = stderr.toString(StandardCharsets.UTF_8);
    assertTrue(log.contains("15 events measured, 15 delivered, 0 undelivered"), log);
  }

  @Test
  void aFullQueueDropsAndCountsInsteadOfBlocking() throws Exception {
    transport.hold = true; // Kafka accepts nothing
    List<BenchstreamDB> dbs = open(2, props("benchstream.queue", "2", "benchstream.batch.events", "1", "benchstream.flush.timeout.ms", "200"));
    for (int i = 0; i < 50; i++) {
      for (BenchstreamDB db : dbs) {
        db.read("usertable", "k", null, new HashMap<>());
      }
    }
    for (BenchstreamDB db : dbs) {
      db.cleanup();
    }
    String log = stderr.toString(StandardCharsets.UTF_8);
    assertTrue(log.contains("100 events measured, 0 delivered, 100 undelivered"), log);
    String end = json(transport.control.get(1));
    assertTrue(end.contains("\"sent\":{},\"undelivered\":100,"), end);
    assertTrue(transport.heldCount() <= 100);
  }

  @Test
  void failedDeliveriesAreCountedAsUndelivered() throws Exception {
    List<BenchstreamDB> dbs = open(1, props("benchstream.batch.events", "10"));
    transport.fail = true;
    for (int i = 0; i < 25; i++) {
      dbs.get(0).update("usertable", "k", values(1, 10));
    }
    dbs.get(0).cleanup();
    String log = stderr.toString(StandardCharsets.UTF_8);
    assertTrue(log.contains("25 events measured, 0 delivered, 25 undelivered"), log);
    assertTrue(log.contains("control records undelivered: 1"), "the end record could not be sent either: " + log);
  }

  @Test
  void disabledEmissionMeasuresButNeverOpensKafka() throws Exception {
    Emitter.setTransportFactory(cfg -> {
      throw new AssertionError("no transport when benchstream.enabled=false");
    });
    List<BenchstreamDB> dbs = open(2, props("benchstream.enabled", "false"));
    for (BenchstreamDB db : dbs) {
      db.read("usertable", "k", null, new HashMap<>());
      db.delete("usertable", "k");
    }
    for (BenchstreamDB db : dbs) {
      db.cleanup();
    }
    String log = stderr.toString(StandardCharsets.UTF_8);
    assertTrue(log.contains("emission disabled (benchstream.enabled=false): 4 events measured"), log);
  }

  @Test
  void throttledRunsTakeTheIntendedStartFromYcsb() throws Exception {
    List<BenchstreamDB> dbs = open(1, props("target", "100"));
    // What YCSB's ClientThread does when throttled: the schedule said 5 ms ago.
    Measurements.getMeasurements().setIntendedStartTimeNs(System.nanoTime() - 5_000_000L);
    dbs.get(0).read("usertable", "k", null, new HashMap<>());
    Measurements.getMeasurements().setIntendedStartTimeNs(0);
    dbs.get(0).cleanup();
    List<TestDecoder.Event> ev = events();
    assertEquals(1, ev.size());
    assertTrue(ev.get(0).intendedUs >= ev.get(0).latencyUs + 5000, "intended " + ev.get(0).intendedUs + " latency " + ev.get(0).latencyUs);
    assertTrue(json(transport.control.get(0)).contains("\"target\":100}"));
  }

  @Test
  void aThreadThatEndsEarlyDoesNotEndTheRun() throws Exception {
    List<BenchstreamDB> dbs = open(2, props());
    dbs.get(0).read("usertable", "k", null, new HashMap<>());
    dbs.get(0).cleanup();
    assertEquals(1, transport.control.size(), "no 'end' while another thread runs");
    dbs.get(1).read("usertable", "k", null, new HashMap<>());
    dbs.get(1).cleanup();
    assertEquals(2, transport.control.size());
    assertEquals(2, events().size());
  }

  @Test
  void badSettingsFailInitWithTheirNameAndLeaveNothingOpen() throws Exception {
    BenchstreamDB bad = new BenchstreamDB();
    bad.setProperties(props("benchstream.linger", "5"));
    DBException e = assertThrows(DBException.class, bad::init);
    assertTrue(e.getMessage().contains("unknown property benchstream.linger"), e.getMessage());

    BenchstreamDB badId = new BenchstreamDB();
    badId.setProperties(props("benchstream.runid", "no spaces"));
    e = assertThrows(DBException.class, badId::init);
    assertTrue(e.getMessage().contains("benchstream.runid"), e.getMessage());

    BenchstreamDB missing = new BenchstreamDB();
    missing.setProperties(props("benchstream.db", "no.such.Binding"));
    e = assertThrows(DBException.class, missing::init);
    assertTrue(e.getMessage().contains("class not found"), e.getMessage());

    assertTrue(transport.control.isEmpty(), "bad settings and a missing binding announce nothing");

    // The binding itself fails: the run was announced (before YCSB's clock started)
    // and ends with nothing sent.
    FakeDB.failInit = true;
    BenchstreamDB failing = new BenchstreamDB();
    failing.setProperties(props());
    assertThrows(DBException.class, failing::init);
    FakeDB.failInit = false;
    assertEquals(2, transport.control.size());
    assertTrue(json(transport.control.get(1)).contains("\"sent\":{},\"undelivered\":0,"));
    transport.control.clear();

    // The next run starts from a clean slate: thread indexes from 0, a new emitter.
    List<BenchstreamDB> dbs = open(1, props());
    dbs.get(0).read("usertable", "k", null, new HashMap<>());
    dbs.get(0).cleanup();
    assertEquals(0, events().get(0).thread);
    assertEquals(2, transport.control.size());
  }

  @Test
  void theRunIsAnnouncedWhenYcsbSetsPropertiesBeforeAnyInit() throws Exception {
    BenchstreamDB a = new BenchstreamDB();
    BenchstreamDB b = new BenchstreamDB();
    a.setProperties(props());
    b.setProperties(props());
    assertEquals(1, transport.control.size(), "'start' sent once, before init and before YCSB's clock");
    a.init();
    b.init();
    a.cleanup();
    b.cleanup();
    assertEquals(2, transport.control.size());
  }

  @Test
  void labelsAreParsedInOrderAndKeysValidated() {
    assertEquals("{a=1, b=x y}", BridgeConfig.labels("a=1, b = x y ,").toString());
    assertThrows(IllegalArgumentException.class, () -> BridgeConfig.labels("novalue"));
    assertThrows(IllegalArgumentException.class, () -> BridgeConfig.labels("bad key=1"));
    BridgeConfig cfg = BridgeConfig.from(props());
    assertNotNull(cfg.runId);
    assertFalse(cfg.labels.containsKey("x"));
    assertEquals(4096, cfg.batchEvents);
    assertEquals("127.0.0.1:9092", cfg.brokers);
    assertEquals("benchstream.events.v1", cfg.topic);
  }
}

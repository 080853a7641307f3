package io.benchstream.ycsb.hbase;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.nio.channels.ClosedChannelException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.BufferedMutator;
import org.apache.hadoop.hbase.client.BufferedMutatorParams;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Durability;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.RetriesExhaustedException;
import org.apache.hadoop.hbase.client.RetriesExhaustedWithDetailsException;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.filter.PageFilter;
import org.apache.hadoop.hbase.util.Bytes;

import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * YCSB binding for HBase 2 through the hbase-client {@link Table} API (Benchstream's own
 * code; it follows the semantics of YCSB's hbase2 binding, see README.md for the
 * differences).
 *
 * <p>One {@link Connection} is shared by all client threads of the JVM (it is thread-safe
 * and expensive); each thread has its own {@link Table} and, with client-side buffering,
 * its own {@link BufferedMutator}.
 *
 * <p>Every call is bounded: unless hbase-site.xml or a {@code -p hbase.*} property says
 * otherwise, RPCs, operations, meta look-ups and ZooKeeper reconnects give up after a few
 * seconds, so a stopped HBase makes operations fail with {@link Status#SERVICE_UNAVAILABLE}
 * instead of blocking in retries for minutes. Once no operation has succeeded for
 * {@code hbase.failfast.ms}, operations fail at once (one probe per second still goes to
 * HBase and closes the circuit when it succeeds), so a run against a dead cluster ends.
 */
public class HBaseClient extends DB {
  /** Column family of every field. YCSB's binding has no default; "family" is its documented one. */
  public static final String COLUMN_FAMILY_PROPERTY = "columnfamily";
  public static final String COLUMN_FAMILY_DEFAULT = "family";
  /** Buffer puts and deletes in a BufferedMutator (they return BATCHED_OK). */
  public static final String CLIENT_BUFFERING_PROPERTY = "clientbuffering";
  /** BufferedMutator buffer size in bytes. */
  public static final String WRITE_BUFFER_SIZE_PROPERTY = "writebuffersize";
  public static final long WRITE_BUFFER_SIZE_DEFAULT = 12L * 1024 * 1024;
  /** org.apache.hadoop.hbase.client.Durability name for puts and deletes. */
  public static final String DURABILITY_PROPERTY = "durability";
  /** Add a PageFilter to scans besides Scan#setLimit (YCSB's binding relies on the filter). */
  public static final String USE_PAGE_FILTER_PROPERTY = "hbase.usepagefilter";
  /**
   * Fail fast once an operation fails as unavailable and none has succeeded for this many
   * milliseconds; 0 = never.
   */
  public static final String FAIL_FAST_PROPERTY = "hbase.failfast.ms";
  public static final long FAIL_FAST_DEFAULT_MS = 10_000;
  /** Print every failed operation (the first few are always printed). */
  public static final String DEBUG_PROPERTY = "debug";

  static final String BOOTSTRAP_SERVERS_KEY = "hbase.client.bootstrap.servers";
  static final String REGISTRY_IMPL_KEY = "hbase.client.registry.impl";
  static final String RPC_REGISTRY = "org.apache.hadoop.hbase.client.RpcConnectionRegistry";

  /** While failing fast, a probe goes to HBase this long after the previous one ended. */
  static final long PROBE_INTERVAL_NS = 1_000_000_000L;
  /** Errors printed to stderr without debug=true: enough to see what is wrong, not a flood. */
  static final int ERRORS_PRINTED_MAX = 5;

  /**
   * Client settings applied unless hbase-site.xml (on the classpath) or a -p property sets
   * them: HBase's own defaults (e.g. 16 retries with back-off, 20 min operation timeout,
   * 30 ZooKeeper reconnect attempts) keep a client blocked for minutes on a dead cluster.
   */
  static final Map<String, String> BOUNDED_DEFAULTS;

  static {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("hbase.client.retries.number", "3");
    m.put("hbase.client.pause", "100");
    m.put("hbase.rpc.timeout", "2000");
    m.put("hbase.client.operation.timeout", "5000");
    m.put("hbase.client.meta.operation.timeout", "5000");
    m.put("hbase.client.scanner.timeout.period", "5000");
    m.put("hbase.ipc.client.socket.timeout.connect", "2000");
    m.put("zookeeper.session.timeout", "5000");
    // Each ZooKeeper attempt against a dead quorum costs ~1.5 s (client reconnect back-off),
    // and every retried operation looks meta up again: retry 0 keeps an operation ~6 s.
    m.put("zookeeper.recovery.retry", "0");
    m.put("zookeeper.recovery.retry.intervalmill", "200");
    BOUNDED_DEFAULTS = java.util.Collections.unmodifiableMap(m);
  }

  /** Simple names of exceptions that mean "HBase (or the region) cannot be reached now". */
  static final Set<String> UNAVAILABLE_EXCEPTIONS = Set.of(
      "CallTimeoutException", "ConnectionClosedException", "ConnectionClosingException",
      "FailedServerException", "StoppedRpcClientException", "ServerNotRunningYetException",
      "RegionServerStoppedException", "RegionServerAbortedException", "MasterNotRunningException",
      "PleaseHoldException", "NoServerForRegionException", "NotServingRegionException",
      "RegionOfflineException", "RegionTooBusyException", "CallQueueTooBigException",
      "TimeoutIOException", "OperationTimeoutExceededException", "ConnectionLossException",
      "SessionExpiredException", "TimeoutException", "MasterRegistryFetchException");

  private static final Object LOCK = new Object();
  /** Guarded by LOCK. */
  private static Connection connection;
  /** Guarded by LOCK: threads between a successful init() and their cleanup(). */
  private static int users;

  /** System.nanoTime() of the latest successful operation (or of connecting). */
  private static volatile long lastSuccessNs;
  private static final AtomicLong NEXT_PROBE_NS = new AtomicLong();
  /** While failing fast, at most one operation (the probe) is in HBase at a time. */
  private static final AtomicBoolean PROBE_IN_FLIGHT = new AtomicBoolean();
  private static volatile boolean failingFast;
  private static final AtomicLong FAILED_FAST = new AtomicLong();
  private static final AtomicInteger ERRORS_PRINTED = new AtomicInteger();

  private byte[] family;
  private boolean clientBuffering;
  private long writeBufferSize = WRITE_BUFFER_SIZE_DEFAULT;
  private Durability durability = Durability.USE_DEFAULT;
  private boolean usePageFilter;
  private long failFastNs;
  private boolean debug;

  /** This thread's current operation is the probe. */
  private boolean probing;

  private String tableName;
  private Table table;
  private BufferedMutator mutator;

  @Override
  public void init() throws DBException {
    Properties p = getProperties();
    family = Bytes.toBytes(p.getProperty(COLUMN_FAMILY_PROPERTY, COLUMN_FAMILY_DEFAULT));
    clientBuffering = parseBoolean(p, CLIENT_BUFFERING_PROPERTY, false);
    writeBufferSize = parseLong(p, WRITE_BUFFER_SIZE_PROPERTY, WRITE_BUFFER_SIZE_DEFAULT, 1);
    String d = p.getProperty(DURABILITY_PROPERTY);
    if (d != null) {
      try {
        durability = Durability.valueOf(d.trim());
      } catch (IllegalArgumentException e) {
        throw new DBException(DURABILITY_PROPERTY + " must be one of " + Arrays.toString(Durability.values())
            + ", got '" + d + "'");
      }
    }
    usePageFilter = parseBoolean(p, USE_PAGE_FILTER_PROPERTY, false);
    failFastNs = parseLong(p, FAIL_FAST_PROPERTY, FAIL_FAST_DEFAULT_MS, 0) * 1_000_000L;
    debug = parseBoolean(p, DEBUG_PROPERTY, false);

    synchronized (LOCK) {
      if (connection == null) {
        Configuration conf = configuration(p);
        String initialTable = p.getProperty("table", "usertable");
        Connection c = null;
        try {
          c = ConnectionFactory.createConnection(conf);
          // Fail here, once, with a clear message: during the run a missing table would
          // only show as a wall of per-operation errors.
          try (Admin admin = c.getAdmin()) {
            if (!admin.tableExists(TableName.valueOf(initialTable))) {
              throw new DBException("HBase table '" + initialTable + "' does not exist; create it with column family '"
                  + Bytes.toString(family) + "' (deploy/local/hbase.sh create-table does)");
            }
          }
        } catch (IOException e) {
          closeQuietly(c);
          String where = conf.getTrimmed(BOOTSTRAP_SERVERS_KEY, "").isEmpty()
              ? "ZooKeeper " + conf.get("hbase.zookeeper.quorum") + ":" + conf.get("hbase.zookeeper.property.clientPort")
              : "bootstrap servers " + conf.get(BOOTSTRAP_SERVERS_KEY);
          throw new DBException("cannot reach HBase through " + where + ": " + brief(e), e);
        } catch (DBException e) {
          closeQuietly(c);
          throw e;
        }
        connection = c;
        lastSuccessNs = System.nanoTime();
        failingFast = false;
      }
      users++;
    }
  }

  /**
   * hbase-default.xml and hbase-site.xml from the classpath, then the bounded defaults for
   * keys hbase-site.xml does not set, then every -p property named hbase.*, zookeeper.* or
   * hadoop.* (so -p hbase.zookeeper.quorum=... works without an hbase-site.xml).
   */
  static Configuration configuration(Properties p) {
    Configuration conf = HBaseConfiguration.create();
    for (Map.Entry<String, String> e : BOUNDED_DEFAULTS.entrySet()) {
      String[] sources = conf.getPropertySources(e.getKey());
      boolean onlyDefault = sources == null
          || Arrays.stream(sources).allMatch(s -> s != null && s.endsWith("hbase-default.xml"));
      if (onlyDefault) {
        conf.set(e.getKey(), e.getValue());
      }
    }
    for (String name : p.stringPropertyNames()) {
      if (name.startsWith("hbase.") || name.startsWith("zookeeper.") || name.startsWith("hadoop.")) {
        conf.set(name, p.getProperty(name));
      }
    }
    // With bootstrap servers the client finds meta over RPC to them instead of through
    // ZooKeeper, whose look-ups are serialized in one thread and not bounded by the
    // operation timeout (an operation against a dead cluster then takes ~3 s, not ~6-25 s).
    String bootstrap = conf.getTrimmed(BOOTSTRAP_SERVERS_KEY, "");
    if (!bootstrap.isEmpty() && conf.get(REGISTRY_IMPL_KEY) == null) {
      conf.set(REGISTRY_IMPL_KEY, RPC_REGISTRY);
    }
    return conf;
  }

  @Override
  public void cleanup() throws DBException {
    IOException failure = null;
    try {
      if (mutator != null) {
        mutator.close();   // flushes what is still buffered; bounded by the operation timeout
      }
    } catch (IOException e) {
      failure = e;
    }
    try {
      if (table != null) {
        table.close();
      }
    } catch (IOException e) {
      failure = failure == null ? e : failure;
    }
    mutator = null;
    table = null;
    synchronized (LOCK) {
      if (--users <= 0 && connection != null) {
        users = 0;
        closeQuietly(connection);
        connection = null;
        long fast = FAILED_FAST.getAndSet(0);
        if (fast > 0) {
          System.err.println("HBaseClient: " + fast
              + " operation(s) failed fast (SERVICE_UNAVAILABLE without a call) while HBase was unreachable");
        }
      }
    }
    if (failure != null) {
      throw new DBException("closing HBase table " + tableName + ": " + brief(failure), failure);
    }
  }

  @Override
  public Status read(String tableName, String key, Set<String> fields, Map<String, ByteIterator> result) {
    Status refused = admit();
    if (refused != null) {
      return refused;
    }
    try {
      Get get = new Get(Bytes.toBytes(key));
      if (fields == null) {
        get.addFamily(family);
      } else {
        for (String field : fields) {
          get.addColumn(family, Bytes.toBytes(field));
        }
      }
      Result r = table(tableName).get(get);
      succeeded();
      if (r == null || r.isEmpty()) {
        return Status.NOT_FOUND;
      }
      copyCells(r, result);
      return Status.OK;
    } catch (IOException | RuntimeException e) {
      return failed("read " + key, e);
    }
  }

  @Override
  public Status scan(String tableName, String startKey, int recordCount, Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    if (recordCount <= 0) {
      return Status.OK;
    }
    Status refused = admit();
    if (refused != null) {
      return refused;
    }
    // setLimit ends the scan on the server after recordCount rows; caching = the same
    // count brings them back in one RPC, as YCSB's binding does.
    Scan scan = new Scan().withStartRow(Bytes.toBytes(startKey)).setLimit(recordCount).setCaching(recordCount);
    if (usePageFilter) {
      scan.setFilter(new PageFilter(recordCount));
    }
    if (fields == null) {
      scan.addFamily(family);
    } else {
      for (String field : fields) {
        scan.addColumn(family, Bytes.toBytes(field));
      }
    }
    try (ResultScanner scanner = table(tableName).getScanner(scan)) {
      int rows = 0;
      for (Result r = scanner.next(); r != null && rows < recordCount; r = scanner.next()) {
        HashMap<String, ByteIterator> row = new HashMap<>();
        copyCells(r, row);
        result.add(row);
        rows++;
      }
      succeeded();
      return Status.OK;
    } catch (IOException | RuntimeException e) {
      return failed("scan from " + startKey, e);
    }
  }

  @Override
  public Status update(String tableName, String key, Map<String, ByteIterator> values) {
    Status refused = admit();
    if (refused != null) {
      return refused;
    }
    Put put = new Put(Bytes.toBytes(key));
    put.setDurability(durability);
    for (Map.Entry<String, ByteIterator> e : values.entrySet()) {
      put.addColumn(family, Bytes.toBytes(e.getKey()), e.getValue().toArray());
    }
    try {
      if (clientBuffering) {
        mutator(tableName).mutate(put);
        succeeded();
        return Status.BATCHED_OK;
      }
      table(tableName).put(put);
      succeeded();
      return Status.OK;
    } catch (IOException | RuntimeException e) {
      return failed("put " + key, e);
    }
  }

  @Override
  public Status insert(String tableName, String key, Map<String, ByteIterator> values) {
    // HBase has no insert-only put; an insert is a put of all fields, as in YCSB's binding.
    return update(tableName, key, values);
  }

  @Override
  public Status delete(String tableName, String key) {
    Status refused = admit();
    if (refused != null) {
      return refused;
    }
    Delete delete = new Delete(Bytes.toBytes(key));
    delete.setDurability(durability);
    try {
      if (clientBuffering) {
        mutator(tableName).mutate(delete);
        succeeded();
        return Status.BATCHED_OK;
      }
      table(tableName).delete(delete);
      succeeded();
      return Status.OK;
    } catch (IOException | RuntimeException e) {
      return failed("delete " + key, e);
    }
  }

  // ------------------------------------------------------------------ helpers

  private Table table(String name) throws IOException {
    if (table == null || !name.equals(tableName)) {
      switchTable(name);
    }
    return table;
  }

  private BufferedMutator mutator(String name) throws IOException {
    if (mutator == null || !name.equals(tableName)) {
      switchTable(name);
    }
    return mutator;
  }

  private void switchTable(String name) throws IOException {
    if (mutator != null) {
      mutator.close();
      mutator = null;
    }
    if (table != null) {
      table.close();
      table = null;
    }
    TableName tn = TableName.valueOf(name);
    table = connection.getTable(tn);
    if (clientBuffering) {
      mutator = connection.getBufferedMutator(new BufferedMutatorParams(tn).writeBufferSize(writeBufferSize));
    }
    tableName = name;
  }

  private static void copyCells(Result r, Map<String, ByteIterator> out) {
    for (Cell c : r.rawCells()) {
      out.put(Bytes.toString(CellUtil.cloneQualifier(c)), new ByteArrayByteIterator(CellUtil.cloneValue(c)));
    }
  }

  /**
   * null to go ahead; SERVICE_UNAVAILABLE while failing fast, except for the probe: one
   * operation at a time, PROBE_INTERVAL_NS after the previous probe ended (a probe
   * against a dead cluster takes seconds; overlapping probes would stall every thread).
   */
  private Status admit() {
    if (!failingFast) {
      return null;
    }
    if (System.nanoTime() - NEXT_PROBE_NS.get() >= 0 && PROBE_IN_FLIGHT.compareAndSet(false, true)) {
      probing = true;
      return null;
    }
    FAILED_FAST.incrementAndGet();
    return Status.SERVICE_UNAVAILABLE;
  }

  private void endProbe() {
    if (probing) {
      probing = false;
      NEXT_PROBE_NS.set(System.nanoTime() + PROBE_INTERVAL_NS);
      PROBE_IN_FLIGHT.set(false);
    }
  }

  private void succeeded() {
    lastSuccessNs = System.nanoTime();
    endProbe();
    if (failingFast) {
      failingFast = false;
      System.err.println("HBaseClient: HBase answers again; operations go to HBase again");
    }
  }

  private Status failed(String what, Throwable e) {
    endProbe();
    Status status = classify(e);
    if (debug || ERRORS_PRINTED.getAndIncrement() < ERRORS_PRINTED_MAX) {
      System.err.println("HBaseClient: " + what + " failed (" + status.getName() + "): " + brief(e));
    }
    if (status == Status.SERVICE_UNAVAILABLE && failFastNs > 0 && !failingFast) {
      long now = System.nanoTime();
      long quietNs = now - lastSuccessNs;
      if (quietNs >= failFastNs) {
        synchronized (LOCK) {
          if (!failingFast) {
            NEXT_PROBE_NS.set(now + PROBE_INTERVAL_NS);
            failingFast = true;
            System.err.println("HBaseClient: no operation succeeded for " + quietNs / 1_000_000
                + " ms; failing operations at once (one probe per second) until HBase answers");
          }
        }
      }
    }
    if (e instanceof InterruptedIOException && Thread.currentThread().isInterrupted()) {
      // Keep the interrupt for YCSB's own shutdown handling.
      Thread.currentThread().interrupt();
    }
    return status;
  }

  /** SERVICE_UNAVAILABLE when anything in the cause chain says HBase cannot be reached. */
  static Status classify(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof ConnectException || t instanceof NoRouteToHostException
          || t instanceof SocketTimeoutException || t instanceof ClosedChannelException
          || UNAVAILABLE_EXCEPTIONS.contains(t.getClass().getSimpleName())) {
        return Status.SERVICE_UNAVAILABLE;
      }
      if (t instanceof RetriesExhaustedWithDetailsException) {
        for (Throwable c : ((RetriesExhaustedWithDetailsException) t).getCauses()) {
          if (c != t && classify(c) == Status.SERVICE_UNAVAILABLE) {
            return Status.SERVICE_UNAVAILABLE;
          }
        }
      }
      // RetriesExhaustedException lists every attempt's exception in its message only.
      if (t instanceof RetriesExhaustedException && t.getMessage() != null) {
        String m = t.getMessage();
        if (m.contains("Connection refused") || m.contains("ConnectException")
            || UNAVAILABLE_EXCEPTIONS.stream().anyMatch(m::contains)) {
          return Status.SERVICE_UNAVAILABLE;
        }
      }
    }
    return Status.ERROR;
  }

  /**
   * One line: the exception and the first line of its message. For retries exhausted, whose
   * first line says only "Failed after attempts=4, exceptions:", the exception types of the
   * attempts are appended, since they say what went wrong.
   */
  static String brief(Throwable t) {
    String full = t.getMessage();
    String m = full;
    if (m != null) {
      int nl = m.indexOf('\n');
      if (nl >= 0) {
        m = m.substring(0, nl);
      }
      if (m.length() > 300) {
        m = m.substring(0, 300) + "...";
      }
    }
    String s = t.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    if (full != null && (t instanceof RetriesExhaustedException || t instanceof RetriesExhaustedWithDetailsException)) {
      Set<String> kinds = new java.util.LinkedHashSet<>();
      java.util.regex.Matcher x = EXCEPTION_NAME.matcher(full);
      while (x.find() && kinds.size() < 5) {
        String name = x.group(1);
        if (!name.equals(t.getClass().getSimpleName())) {
          kinds.add(name);
        }
      }
      if (!kinds.isEmpty()) {
        s += " " + kinds;
      }
    }
    return s;
  }

  /** Simple name of a qualified exception class in a message, e.g. "...ipc.CallQueueTooBigException". */
  private static final java.util.regex.Pattern EXCEPTION_NAME =
      java.util.regex.Pattern.compile("(?:[a-z][a-z0-9_]*\\.)+([A-Z][A-Za-z0-9_$]*(?:Exception|Error))");

  private static void closeQuietly(Connection c) {
    if (c == null) {
      return;
    }
    try {
      c.close();
    } catch (IOException | RuntimeException e) {
      System.err.println("HBaseClient: closing the HBase connection: " + brief(e));
    }
  }

  private static boolean parseBoolean(Properties p, String name, boolean dflt) throws DBException {
    String v = p.getProperty(name);
    if (v == null) {
      return dflt;
    }
    if ("true".equalsIgnoreCase(v.trim())) {
      return true;
    }
    if ("false".equalsIgnoreCase(v.trim())) {
      return false;
    }
    throw new DBException(name + " must be true or false, got '" + v + "'");
  }

  private static long parseLong(Properties p, String name, long dflt, long min) throws DBException {
    String v = p.getProperty(name);
    if (v == null) {
      return dflt;
    }
    try {
      long n = Long.parseLong(v.trim());
      if (n >= min) {
        return n;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new DBException(name + " must be a whole number >= " + min + ", got '" + v + "'");
  }
}

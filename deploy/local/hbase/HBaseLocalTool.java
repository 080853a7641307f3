// Small admin helper for deploy/local/hbase.sh: readiness, table creation, flush, and
// reading the region server's metrics over remote JMX. hbase.sh compiles it once per
// HBase version (javac against the cached server jars) and runs it with the generated
// conf dir first on the classpath, so it talks to the server that hbase.sh configured.
//
// Every call is bounded: a client that waits on a dead HBase would otherwise sit in
// ZooKeeper and RPC retries for minutes. Exit codes: 0 ok, 1 failed, 2 usage,
// 3 the watched server process exited, 4 timed out, 5 ready but the table failed.

import java.io.IOException;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.TreeMap;
import java.util.Map;
import javax.management.Attribute;
import javax.management.AttributeList;
import javax.management.MBeanAttributeInfo;
import javax.management.MBeanServerConnection;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.ClusterMetrics;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.RegionLocator;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.util.Bytes;

public final class HBaseLocalTool {
  private static final int EXIT_FAILED = 1;
  private static final int EXIT_USAGE = 2;
  private static final int EXIT_SERVER_GONE = 3;
  private static final int EXIT_TIMEOUT = 4;
  /** wait-ready with a table: the server is ready, creating the table failed. */
  private static final int EXIT_TABLE = 5;
  /** Between readiness probes; the master needs a few seconds anyway. */
  private static final long POLL_MS = 250;

  private HBaseLocalTool() {}

  public static void main(String[] args) {
    if (args.length == 0) usage();
    try {
      switch (args[0]) {
        case "wait-ready": {
          if (args.length != 3 && args.length != 6) usage();
          long t0 = System.nanoTime();
          long timeoutS = Long.parseLong(args[2]);
          waitReady(Long.parseLong(args[1]), timeoutS);
          if (args.length == 6) {
            // Same JVM: a second helper start costs seconds on a small machine.
            long left = Math.max(10, timeoutS - (System.nanoTime() - t0) / 1_000_000_000L);
            try {
              createTable(args[3], args[4], Integer.parseInt(args[5]), left);
            } catch (Fail f) {
              throw new Fail(EXIT_TABLE, f.getMessage());
            } catch (IOException | RuntimeException e) {
              throw new Fail(EXIT_TABLE, "creating table " + args[3] + ": " + brief(e));
            }
          }
          break;
        }
        case "create-table":
          if (args.length != 5) usage();
          createTable(args[1], args[2], Integer.parseInt(args[3]), Long.parseLong(args[4]));
          break;
        case "flush":
          if (args.length != 3) usage();
          flush(args[1], Long.parseLong(args[2]));
          break;
        case "jmx":
          if (args.length < 3) usage();
          jmx(Integer.parseInt(args[1]), args[2], args.length > 3 ? Double.parseDouble(args[3]) : 0,
              args.length > 4 ? java.util.regex.Pattern.compile(args[4]) : null);
          break;
        default:
          usage();
      }
    } catch (Fail f) {
      System.err.println("HBaseLocalTool: " + f.getMessage());
      System.exit(f.code);
    } catch (Exception e) {
      System.err.println("HBaseLocalTool: " + e);
      System.exit(EXIT_FAILED);
    }
    // HBase client threads (ZooKeeper, netty) are not all daemons.
    System.exit(0);
  }

  private static void usage() {
    System.err.println("usage: HBaseLocalTool wait-ready <server-pid|0> <timeout-s> [<table> <family> <regions>]\n"
        + "       HBaseLocalTool create-table <table> <family> <regions> <timeout-s>\n"
        + "       HBaseLocalTool flush <table> <timeout-s>\n"

        + "       HBaseLocalTool jmx <port> <object-name> [every-s [attribute-regex]]");
    System.exit(EXIT_USAGE);
  }

  private static final class Fail extends RuntimeException {
    final int code;

    Fail(int code, String message) {
      super(message);
      this.code = code;
    }
  }

  /** hbase-site.xml from the classpath (the generated conf dir), with client calls kept short. */
  private static Configuration clientConf() {
    Configuration conf = HBaseConfiguration.create();
    conf.setInt(HConstants.HBASE_CLIENT_RETRIES_NUMBER, 2);
    conf.setLong(HConstants.HBASE_CLIENT_PAUSE, 100);
    conf.setInt(HConstants.HBASE_RPC_TIMEOUT_KEY, 5000);
    conf.setInt(HConstants.HBASE_CLIENT_OPERATION_TIMEOUT, 10000);
    conf.setInt(HConstants.HBASE_CLIENT_META_OPERATION_TIMEOUT, 10000);
    conf.setInt("hbase.ipc.client.socket.timeout.connect", 2000);
    conf.setInt(HConstants.ZK_SESSION_TIMEOUT, 5000);
    conf.setInt("zookeeper.recovery.retry", 1);
    conf.setInt("zookeeper.recovery.retry.intervalmill", 200);
    return conf;
  }

  private static void checkServer(long pid) {
    if (pid > 0 && !ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
      throw new Fail(EXIT_SERVER_GONE, "HBase process " + pid + " exited");
    }
  }

  private static void pause() {
    try {
      Thread.sleep(POLL_MS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new Fail(EXIT_FAILED, "interrupted");
    }
  }

  private static String brief(Throwable t) {
    String m = t.getMessage();
    if (m != null) {
      int nl = m.indexOf('\n');
      if (nl >= 0) m = m.substring(0, nl);
      if (m.length() > 200) m = m.substring(0, 200) + "...";
    }
    return t.getClass().getSimpleName() + (m == null ? "" : ": " + m);
  }

  /**
   * Ready means what a benchmark client needs: the master has finished initializing
   * (listTableNames goes through the master and is refused until then), at least one
   * region server is live, and hbase:meta is assigned and available.
   */
  private static void waitReady(long pid, long timeoutS) throws IOException {
    long deadline = System.nanoTime() + timeoutS * 1_000_000_000L;
    String last = "no attempt yet";
    while (true) {
      checkServer(pid);
      if (System.nanoTime() > deadline) {
        throw new Fail(EXIT_TIMEOUT, "not ready after " + timeoutS + " s; last: " + last);
      }
      try (Connection c = ConnectionFactory.createConnection(clientConf());
          Admin admin = c.getAdmin()) {
        while (true) {
          checkServer(pid);
          if (System.nanoTime() > deadline) {
            throw new Fail(EXIT_TIMEOUT, "not ready after " + timeoutS + " s; last: " + last);
          }
          try {
            ClusterMetrics m = admin.getClusterMetrics(EnumSet.of(ClusterMetrics.Option.LIVE_SERVERS));
            int live = m.getLiveServerMetrics().size();
            if (live < 1) {
              last = "no live region server";
            } else {
              admin.listTableNames();
              if (!admin.isTableAvailable(TableName.META_TABLE_NAME)) {
                last = "hbase:meta not available";
              } else {
                try (RegionLocator l = c.getRegionLocator(TableName.META_TABLE_NAME)) {
                  String where = l.getRegionLocation(HConstants.EMPTY_START_ROW, true).getServerName().toString();
                  System.out.println("ready: " + live + " live region server(s), hbase:meta on " + where);
                  return;
                }
              }
            }
          } catch (IOException e) {
            last = brief(e);
          }
          pause();
        }
      } catch (IOException e) {
        last = brief(e);
        pause();
      }
    }
  }

  /**
   * YCSB's documented pre-split for its "user<number>" keys: split points spread evenly
   * over user1000..user9999, which matches hashed insert order well enough.
   */
  private static byte[][] splitKeys(int regions) {
    byte[][] splits = new byte[regions - 1][];
    int n = regions - 1;
    for (int i = 1; i <= n; i++) {
      splits[i - 1] = Bytes.toBytes("user" + (1000 + (long) i * (9999 - 1000) / n));
    }
    return splits;
  }

  private static void createTable(String table, String family, int regions, long timeoutS) throws IOException {
    if (regions < 1) throw new Fail(EXIT_USAGE, "regions must be >= 1, got " + regions);
    long deadline = System.nanoTime() + timeoutS * 1_000_000_000L;
    TableName tn = TableName.valueOf(table);
    try (Connection c = ConnectionFactory.createConnection(clientConf()); Admin admin = c.getAdmin()) {
      String last = "no attempt yet";
      boolean created = false;
      while (true) {
        if (System.nanoTime() > deadline) {
          throw new Fail(EXIT_TIMEOUT, "could not create " + table + " in " + timeoutS + " s; last: " + last);
        }
        try {
          if (admin.tableExists(tn)) {
            TableDescriptor d = admin.getDescriptor(tn);
            if (!d.hasColumnFamily(Bytes.toBytes(family))) {
              throw new Fail(EXIT_FAILED, "table " + table + " exists without column family '" + family
                  + "' (has " + d.getColumnFamilyNames().stream().map(Bytes::toString).toList() + ")");
            }
            if (admin.isTableAvailable(tn)) {
              if (!created) {
                int n = admin.getRegions(tn).size();
                System.out.println("table " + table + " exists (family '" + family + "', " + n + " region(s))");
              }
              return;
            }
            last = "table " + table + " exists but is not available yet";
          } else {
            TableDescriptor d = TableDescriptorBuilder.newBuilder(tn)
                .setColumnFamily(ColumnFamilyDescriptorBuilder.of(family)).build();
            if (regions > 1) {
              admin.createTable(d, splitKeys(regions));
            } else {
              admin.createTable(d);
            }
            created = true;
            System.out.println("created table " + table + " (family '" + family + "', " + regions + " region(s))");
            // createTable returns once the procedure is done; loop once more to confirm.
            continue;
          }
        } catch (org.apache.hadoop.hbase.TableExistsException e) {
          last = "created concurrently";
          continue;
        } catch (IOException e) {
          last = brief(e);
        }
        pause();
      }
    }
  }

  /** Writes the memstore to HFiles, so later reads go through the block cache. */
  private static void flush(String table, long timeoutS) throws IOException {
    Configuration conf = clientConf();
    conf.setInt(HConstants.HBASE_CLIENT_OPERATION_TIMEOUT, (int) Math.min(Integer.MAX_VALUE, timeoutS * 1000));
    conf.setInt(HConstants.HBASE_RPC_TIMEOUT_KEY, (int) Math.min(Integer.MAX_VALUE, timeoutS * 1000));
    try (Connection c = ConnectionFactory.createConnection(conf); Admin admin = c.getAdmin()) {
      TableName tn = TableName.valueOf(table);
      long t0 = System.nanoTime();
      admin.flush(tn);
      System.out.printf(Locale.ROOT, "flushed %s in %.1f s%n", table, (System.nanoTime() - t0) / 1e9);
    }
  }

  /**
   * One JSON object per sample with every numeric attribute of the MBean, read over
   * remote JMX (the route when the region server's info server is off). every-s > 0
   * keeps one connection and prints a line per interval until killed; a regex keeps only
   * the attributes whose names it matches in full.
   */
  private static void jmx(int port, String objectName, double everyS, java.util.regex.Pattern only)
      throws Exception {
    // Bound RMI: an open port that never answers would otherwise block indefinitely.
    System.setProperty("sun.rmi.transport.tcp.responseTimeout", "5000");
    System.setProperty("sun.rmi.transport.connectionTimeout", "5000");
    JMXServiceURL url = new JMXServiceURL("service:jmx:rmi:///jndi/rmi://127.0.0.1:" + port + "/jmxrmi");
    try (JMXConnector jc = JMXConnectorFactory.connect(url)) {
      MBeanServerConnection mbs = jc.getMBeanServerConnection();
      ObjectName on = new ObjectName(objectName);
      List<String> names = new ArrayList<>();
      for (MBeanAttributeInfo a : mbs.getMBeanInfo(on).getAttributes()) {
        if (only == null || only.matcher(a.getName()).matches()) names.add(a.getName());
      }
      do {
        AttributeList values = mbs.getAttributes(on, names.toArray(new String[0]));
        Map<String, Object> sorted = new TreeMap<>();
        for (Object o : values) {
          Attribute a = (Attribute) o;
          if (a.getValue() instanceof Number) sorted.put(a.getName(), a.getValue());
        }
        StringBuilder sb = new StringBuilder("{\"ts\":").append(System.currentTimeMillis());
        for (Map.Entry<String, Object> e : sorted.entrySet()) {
          Object v = e.getValue();
          // JSON has no NaN/Infinity (HBase reports NaN percentages before the first request).
          boolean finite = !(v instanceof Double || v instanceof Float) || Double.isFinite(((Number) v).doubleValue());
          sb.append(",\"").append(e.getKey()).append("\":").append(finite ? v : "null");
        }
        System.out.println(sb.append('}'));
        if (everyS > 0) Thread.sleep((long) (everyS * 1000));
      } while (everyS > 0);
    }
  }
}

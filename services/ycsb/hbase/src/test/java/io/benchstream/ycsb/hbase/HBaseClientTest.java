package io.benchstream.ycsb.hbase;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.ConnectException;
import java.util.List;
import java.util.Properties;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.TableNotFoundException;
import org.apache.hadoop.hbase.client.Row;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.RetriesExhaustedException;
import org.apache.hadoop.hbase.client.RetriesExhaustedWithDetailsException;
import org.apache.hadoop.hbase.ipc.CallTimeoutException;
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.Test;

import site.ycsb.DBException;
import site.ycsb.Status;

/** Pure tests (no HBase): failure classification, client configuration, property checks. */
class HBaseClientTest {

  @Test
  void unreachableClusterIsServiceUnavailable() {
    assertEquals(Status.SERVICE_UNAVAILABLE,
        HBaseClient.classify(new IOException("wrapped", new ConnectException("Connection refused"))));
    assertEquals(Status.SERVICE_UNAVAILABLE, HBaseClient.classify(new CallTimeoutException("callTimeout=2000")));
    // What the sync client throws with an RPC registry and every server down: the
    // attempts' exceptions are only in the message.
    assertEquals(Status.SERVICE_UNAVAILABLE, HBaseClient.classify(new RetriesExhaustedException(
        "Failed after attempts=4, exceptions: ... java.net.ConnectException: Connection refused")));
    Put put = new Put(Bytes.toBytes("user1"));
    assertEquals(Status.SERVICE_UNAVAILABLE, HBaseClient.classify(new RetriesExhaustedWithDetailsException(
        List.<Throwable>of(new ConnectException("Connection refused")), List.<Row>of(put), List.of("127.0.0.1:16020"))));
  }

  @Test
  void otherFailuresAreErrors() {
    assertEquals(Status.ERROR, HBaseClient.classify(new TableNotFoundException("usertable")));
    assertEquals(Status.ERROR, HBaseClient.classify(new IllegalArgumentException("Row length is 0")));
    assertEquals(Status.ERROR, HBaseClient.classify(new RetriesExhaustedException("Failed after attempts=4")));
  }

  @Test
  void briefNamesTheAttemptsOfExhaustedRetries() {
    String message = "Failed after attempts=4, exceptions:\n"
        + "2026-12-03T10:11:12.613Z, RpcRetryingCaller{globalStartTime=..., pause=100, maxAttempts=4}, "
        + "org.apache.hadoop.hbase.CallQueueTooBigException: Call queue is full on 127.0.0.1,16020, too many items queued ?\n"
        + "2026-12-03T10:11:12.813Z, RpcRetryingCaller{...}, org.apache.hadoop.hbase.CallQueueTooBigException: Call queue is full\n";
    assertEquals("RetriesExhaustedException: Failed after attempts=4, exceptions: [CallQueueTooBigException]",
        HBaseClient.brief(new RetriesExhaustedException(message)));
    assertEquals("IOException: one line", HBaseClient.brief(new IOException("one line\nsecond")));
  }

  @Test
  void boundedDefaultsApplyUnlessOverridden() {
    Properties p = new Properties();
    p.setProperty("hbase.rpc.timeout", "7000");
    p.setProperty("hbase.zookeeper.property.clientPort", "29301");
    p.setProperty("recordcount", "10");
    Configuration conf = HBaseClient.configuration(p);
    assertEquals("7000", conf.get("hbase.rpc.timeout"));
    assertEquals("29301", conf.get("hbase.zookeeper.property.clientPort"));
    assertEquals("5000", conf.get("hbase.client.operation.timeout"));
    assertEquals("3", conf.get("hbase.client.retries.number"));
    assertEquals("0", conf.get("zookeeper.recovery.retry"));
    assertEquals(null, conf.get("recordcount"));
    assertEquals(null, conf.get(HBaseClient.REGISTRY_IMPL_KEY));
  }

  @Test
  void bootstrapServersSelectTheRpcRegistry() {
    Properties p = new Properties();
    p.setProperty(HBaseClient.BOOTSTRAP_SERVERS_KEY, "127.0.0.1:16000,127.0.0.1:16020");
    assertEquals(HBaseClient.RPC_REGISTRY, HBaseClient.configuration(p).get(HBaseClient.REGISTRY_IMPL_KEY));
    p.setProperty(HBaseClient.REGISTRY_IMPL_KEY, "org.apache.hadoop.hbase.client.ZKConnectionRegistry");
    assertEquals("org.apache.hadoop.hbase.client.ZKConnectionRegistry",
        HBaseClient.configuration(p).get(HBaseClient.REGISTRY_IMPL_KEY));
  }

  /** Bad properties are rejected before anything connects. */
  @Test
  void badPropertiesFailInit() {
    assertInitFails("durability", "FAST", "durability must be one of [USE_DEFAULT, SKIP_WAL, ASYNC_WAL, SYNC_WAL, FSYNC_WAL]");
    assertInitFails("clientbuffering", "yes", "clientbuffering must be true or false");
    assertInitFails("writebuffersize", "0", "writebuffersize must be a whole number >= 1");
    assertInitFails("hbase.failfast.ms", "-1", "hbase.failfast.ms must be a whole number >= 0");
  }

  private static void assertInitFails(String name, String value, String expected) {
    HBaseClient client = new HBaseClient();
    Properties p = new Properties();
    p.setProperty(name, value);
    client.setProperties(p);
    DBException e = assertThrows(DBException.class, client::init);
    assertTrue(e.getMessage().startsWith(expected), e.getMessage());
  }
}

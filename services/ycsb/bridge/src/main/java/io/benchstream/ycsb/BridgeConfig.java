package io.benchstream.ycsb;

import java.math.BigDecimal;
import java.net.InetAddress;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ThreadLocalRandom;
import java.util.regex.Pattern;

/**
 * The bridge's settings, read once from YCSB's properties (-p / -P) and
 * validated: a bad value stops the client at init with a message naming the
 * property and what is allowed, before anything connects.
 */
public final class BridgeConfig {
  /** schemas/events.v1.ts ID_PATTERN: run ids, client ids and label keys. */
  public static final Pattern ID_PATTERN = Pattern.compile("^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$");
  static final String ID_RULE = "1-64 characters from A-Z a-z 0-9 . _ : -, starting with a letter or digit";

  public static final String PREFIX = "benchstream.";
  /** Every property this bridge reads; any other benchstream.* name is a typo and is rejected. */
  static final Set<String> KNOWN = Set.of(
      "benchstream.db", "benchstream.runid", "benchstream.clientid", "benchstream.labels",
      "benchstream.brokers", "benchstream.topic", "benchstream.queue", "benchstream.batch.events",
      "benchstream.linger.ms", "benchstream.flush.timeout.ms", "benchstream.enabled", "benchstream.workload",
      "benchstream.group", "benchstream.repetition", "benchstream.barrier", "benchstream.expected.clients",
      "benchstream.clock.offset.ms");
  /** Largest clock offset a client may report, ms (schemas/events.v1.ts RunLifecycleBody clockOffsetMs). */
  private static final BigDecimal MAX_CLOCK_OFFSET_MS = BigDecimal.valueOf(86_400_000L);

  /** Class name of the wrapped YCSB DB. Required. */
  public final String db;
  /** @default generated: ycsb-YYYYMMDDTHHMMSS-xxxx (one per JVM) */
  public final String runId;
  /** @default hostname-pid */
  public final String clientId;
  public final Map<String, String> labels;
  /** @default 127.0.0.1:9092 */
  public final String brokers;
  /** @default benchstream.events.v1 */
  public final String topic;
  /** Sealed batches waiting for Kafka before new ones are dropped (and counted). @default 2048 */
  public final int maxQueuedBatches;
  /** Events per batch message. @default 4096 */
  public final int batchEvents;
  /** Longest time an event waits in an unsealed batch, ms. @default 50 */
  public final int lingerMs;
  /** Longest wait at the end for Kafka to acknowledge what is queued, ms. @default 30000 */
  public final int flushTimeoutMs;
  /** false: time and encode every operation but send nothing (overhead measurements). @default true */
  public final boolean enabled;
  /** Workload name in the lifecycle records. @default the workload property */
  public final String workload;
  /** Group of repetitions the run belongs to (start record). @default none */
  public final String group;
  /** The run's repetition in its group, 1 to 100000 (start record). @default none */
  public final Integer repetition;
  /**
   * true with benchstream.barrier=stdin: ready, then the start instant from stdin ({@link StartBarrier}).
   * @default false
   */
  public final boolean barrier;
  /** How many clients the run has, 1 to 1024 (start record). @default none */
  public final Integer expectedClients;
  /**
   * This machine's clock minus the broker's, ms, as its agent measured it (start record): the JSON number's
   * text, as JSON.stringify writes the value (so both drivers write the same bytes). @default none
   */
  public final String clockOffsetMs;
  /** YCSB's threadcount. */
  public final int threads;
  /** YCSB's target (ops/s for this client), 0 = unthrottled. */
  public final int target;

  private BridgeConfig(Properties p) {
    for (String name : p.stringPropertyNames()) {
      if (name.startsWith(PREFIX) && !KNOWN.contains(name)) {
        throw new IllegalArgumentException("unknown property " + name + "; the bridge reads " + String.join(", ", new TreeSet<>(KNOWN)));
      }
    }
    db = p.getProperty("benchstream.db", "").trim();
    if (db.isEmpty()) {
      throw new IllegalArgumentException("benchstream.db is required: the class name of the YCSB DB to wrap, e.g. -p benchstream.db=io.benchstream.ycsb.redis.RedisClient");
    }
    if (db.equals(BenchstreamDB.class.getName())) {
      throw new IllegalArgumentException("benchstream.db names the bridge itself; name the YCSB DB it should wrap");
    }
    runId = id("benchstream.runid", p.getProperty("benchstream.runid", defaultRunId()));
    clientId = id("benchstream.clientid", p.getProperty("benchstream.clientid", defaultClientId()));
    labels = Collections.unmodifiableMap(labels(p.getProperty("benchstream.labels", "")));
    brokers = p.getProperty("benchstream.brokers", "127.0.0.1:9092").trim();
    if (brokers.isEmpty()) {
      throw new IllegalArgumentException("benchstream.brokers must name at least one host:port");
    }
    topic = p.getProperty("benchstream.topic", "benchstream.events.v1").trim();
    if (topic.isEmpty()) {
      throw new IllegalArgumentException("benchstream.topic must not be empty");
    }
    maxQueuedBatches = intIn(p, "benchstream.queue", 2048, 1, 1_000_000);
    batchEvents = intIn(p, "benchstream.batch.events", 4096, 1, 1_000_000);
    // As the driver's --linger-ms: a lane that fills a batch of 4,096 events in less than this (16,000 ops/s a
    // thread) sends full batches; a 50 ms linger sealed ~800-event batches, each its own produce request, whose
    // sender-thread CPU (~0.4 ms a request) the client's cores paid (docs/reports/telemetry-cost.md).
    lingerMs = intIn(p, "benchstream.linger.ms", 250, 1, 60_000);
    flushTimeoutMs = intIn(p, "benchstream.flush.timeout.ms", 30_000, 0, 3_600_000);
    String en = p.getProperty("benchstream.enabled", "true").trim();
    if (!en.equals("true") && !en.equals("false")) {
      throw new IllegalArgumentException("benchstream.enabled must be true or false, got '" + en + "'");
    }
    enabled = en.equals("true");
    workload = p.getProperty("benchstream.workload", p.getProperty("workload", "")).trim();
    String g = p.getProperty("benchstream.group", "").trim();
    group = g.isEmpty() ? null : id("benchstream.group", g);
    repetition = optionalInt(p, "benchstream.repetition", 1, 100_000);
    String b = p.getProperty("benchstream.barrier", "").trim();
    if (!b.isEmpty() && !b.equals("stdin")) {
      throw new IllegalArgumentException("benchstream.barrier '" + b + "' is not allowed: expected stdin");
    }
    barrier = b.equals("stdin");
    expectedClients = optionalInt(p, "benchstream.expected.clients", 1, 1024);
    clockOffsetMs = clockOffset(p.getProperty("benchstream.clock.offset.ms", "").trim());
    threads = intIn(p, "threadcount", 1, 1, Integer.MAX_VALUE);
    target = intIn(p, "target", 0, 0, Integer.MAX_VALUE);
  }

  /** Reads and validates; throws IllegalArgumentException naming the bad property. */
  public static BridgeConfig from(Properties p) {
    return new BridgeConfig(p);
  }

  private static String id(String name, String value) {
    String v = value.trim();
    if (!ID_PATTERN.matcher(v).matches()) {
      throw new IllegalArgumentException(name + " '" + v + "' is not allowed: " + ID_RULE);
    }
    return v;
  }

  /** "k=v,k=v" in the given order; keys follow ID_PATTERN. */
  static Map<String, String> labels(String spec) {
    Map<String, String> out = new LinkedHashMap<>();
    for (String part : spec.split(",")) {
      if (part.trim().isEmpty()) {
        continue;
      }
      int eq = part.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException("benchstream.labels: '" + part + "' is not key=value (labels are k=v,k=v)");
      }
      String k = part.substring(0, eq).trim();
      if (!ID_PATTERN.matcher(k).matches()) {
        throw new IllegalArgumentException("benchstream.labels: key '" + k + "' is not allowed: " + ID_RULE);
      }
      out.put(k, part.substring(eq + 1).trim());
    }
    return out;
  }

  private static int intIn(Properties p, String name, int dflt, int min, int max) {
    String s = p.getProperty(name);
    if (s == null || s.trim().isEmpty()) {
      return dflt;
    }
    long v;
    try {
      v = Long.parseLong(s.trim());
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + " must be a whole number, got '" + s + "'");
    }
    if (v < min || v > max) {
      throw new IllegalArgumentException(name + " must be between " + min + " and " + max + ", got " + v);
    }
    return (int) v;
  }

  private static Integer optionalInt(Properties p, String name, int min, int max) {
    String s = p.getProperty(name, "").trim();
    return s.isEmpty() ? null : intIn(p, name, 0, min, max);
  }

  /**
   * A number of ms within a day either way, as JSON text without trailing zeros ("1.50" is 1.5, "-0" is 0),
   * which is how JSON.stringify writes the value Number() reads from the same text.
   */
  static String clockOffset(String s) {
    if (s.isEmpty()) {
      return null;
    }
    BigDecimal v;
    try {
      if (!s.matches("-?\\d+(\\.\\d+)?")) {
        throw new NumberFormatException();
      }
      v = new BigDecimal(s);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("benchstream.clock.offset.ms '" + s + "' is not allowed: a number of ms within a day either way");
    }
    if (v.abs().compareTo(MAX_CLOCK_OFFSET_MS) > 0) {
      throw new IllegalArgumentException("benchstream.clock.offset.ms '" + s + "' is not allowed: a number of ms within a day either way");
    }
    return v.signum() == 0 ? "0" : v.stripTrailingZeros().toPlainString();
  }

  private static String defaultRunId() {
    String ts = ZonedDateTime.now(ZoneOffset.UTC).format(DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss"));
    String rnd = Integer.toString(ThreadLocalRandom.current().nextInt(36 * 36 * 36 * 36), 36);
    return "ycsb-" + ts + "-" + rnd;
  }

  private static String defaultClientId() {
    String host;
    try {
      host = InetAddress.getLocalHost().getHostName();
    } catch (Exception e) {
      host = "ycsb";
    }
    host = host.replaceAll("[^A-Za-z0-9._-]", "_");
    if (host.length() > 40) {
      host = host.substring(0, 40);
    }
    if (host.isEmpty() || !Character.isLetterOrDigit(host.charAt(0))) {
      host = "ycsb" + host;
    }
    return host + "-" + ProcessHandle.current().pid();
  }
}

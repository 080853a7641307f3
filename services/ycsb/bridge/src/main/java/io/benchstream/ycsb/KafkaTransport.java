package io.benchstream.ycsb;

import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * {@link Transport} over one Kafka producer. TLS and SASL come from the same
 * environment variables as the rest of Benchstream (KAFKA_SECURITY_PROTOCOL,
 * KAFKA_SASL_MECHANISM, KAFKA_SASL_USERNAME, KAFKA_SASL_PASSWORD,
 * KAFKA_SSL_CA_FILE; docs/reference/configuration.md), not from YCSB
 * properties: YCSB prints its command line, and -p values would show the
 * password there and in `ps`.
 */
final class KafkaTransport implements Transport {
  private final KafkaProducer<String, byte[]> producer;
  private final String topic;

  KafkaTransport(BridgeConfig cfg) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cfg.brokers);
    p.put(ProducerConfig.CLIENT_ID_CONFIG, "benchstream-ycsb-" + cfg.clientId);
    // Idempotent with acks=all: a retried send cannot write a batch twice, so the
    // processor never counts an operation twice because of the driver.
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    // Batches are already packed (thousands of events per message); a short linger
    // only lets the producer put several of them in one request.
    p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    // Several messages of ~45 KB fit one record batch (the default 16 KB held one), and without keys deciding the
    // partition the producer fills one partition's batch before it moves to the next (sticky): the messages the
    // delivery thread sends back to back travel in one produce request instead of one request each. 480 KiB stays
    // well under the broker's default message.max.bytes (1 MiB), which bounds a record batch.
    p.put(ProducerConfig.BATCH_SIZE_CONFIG, String.valueOf(480 * 1024));
    p.put(ProducerConfig.PARTITIONER_IGNORE_KEYS_CONFIG, "true");
    // How long send() may block on metadata or a full producer buffer. Only the
    // delivery thread blocks; meanwhile the emitter's own bounded queue absorbs
    // (and then drops and counts) new batches, so the benchmark never waits.
    p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "5000");
    // A batch not acknowledged within this time is failed and counted undelivered;
    // bounded so that a dead broker cannot hold the end of the run for minutes.
    p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
    p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
    p.putAll(security(System.getenv()));
    producer = new KafkaProducer<>(p, new StringSerializer(), new ByteArraySerializer());
    topic = cfg.topic;
  }

  @Override
  public void send(String key, byte[] value, Done done) {
    try {
      producer.send(new ProducerRecord<>(topic, key, value), (meta, err) -> done.completed(err));
    } catch (RuntimeException e) {
      // Kafka calls the callback itself for most failures; send() throws only before
      // the record was accepted (metadata timeout, closed producer).
      done.completed(e);
    }
  }

  @Override
  public void sendAndWait(String key, byte[] value, Duration timeout) throws Exception {
    producer.send(new ProducerRecord<>(topic, key, value)).get(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** The topic's metadata: the producer connects to the cluster and learns the partition leaders. */
  @Override
  public void connect() {
    // Waits at most max.block.ms (5 s).
    producer.partitionsFor(topic);
  }

  @Override
  public long requests() {
    for (Map.Entry<MetricName, ? extends Metric> m : producer.metrics().entrySet()) {
      if (m.getKey().name().equals("request-total") && m.getKey().group().equals("producer-metrics")) {
        Object v = m.getValue().metricValue();
        return v instanceof Number ? ((Number) v).longValue() : -1;
      }
    }
    return -1;
  }

  @Override
  public void close(Duration timeout) {
    producer.close(timeout);
  }

  private static final Set<String> PROTOCOLS = Set.of("PLAINTEXT", "SSL", "SASL_SSL", "SASL_PLAINTEXT");
  private static final Set<String> MECHANISMS = Set.of("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN");

  /**
   * The producer's security settings from the environment, checked as
   * services/common/infra-config.ts checks them; none for PLAINTEXT. The
   * password ends up in sasl.jaas.config, which kafka-clients never logs (a
   * password-typed setting).
   */
  static Properties security(Map<String, String> env) {
    Properties p = new Properties();
    String protocol = env.getOrDefault("KAFKA_SECURITY_PROTOCOL", "").trim();
    if (protocol.isEmpty()) {
      protocol = "PLAINTEXT";
    }
    if (!PROTOCOLS.contains(protocol)) {
      throw new IllegalArgumentException("KAFKA_SECURITY_PROTOCOL must be one of " + PROTOCOLS + ", got '" + protocol + "'");
    }
    boolean tls = protocol.equals("SSL") || protocol.equals("SASL_SSL");
    boolean sasl = protocol.startsWith("SASL_");
    String ca = env.getOrDefault("KAFKA_SSL_CA_FILE", "").trim();
    String user = env.getOrDefault("KAFKA_SASL_USERNAME", "");
    String password = env.getOrDefault("KAFKA_SASL_PASSWORD", "");
    if (!sasl && (!user.isEmpty() || !password.isEmpty())) {
      throw new IllegalArgumentException("KAFKA_SASL_USERNAME/KAFKA_SASL_PASSWORD are set but KAFKA_SECURITY_PROTOCOL=" + protocol + " does not use them: set it to SASL_SSL");
    }
    if (!tls && !ca.isEmpty()) {
      throw new IllegalArgumentException("KAFKA_SSL_CA_FILE is set but KAFKA_SECURITY_PROTOCOL=" + protocol + " does not use it: set it to SSL or SASL_SSL");
    }
    if (protocol.equals("PLAINTEXT")) {
      return p;
    }
    p.put("security.protocol", protocol);
    if (tls && !ca.isEmpty()) {
      // A PEM file of CA certificates, as kafkajs and Node read it (kafka-clients 2.7+).
      p.put("ssl.truststore.type", "PEM");
      p.put("ssl.truststore.location", ca);
    }
    if (sasl) {
      if (user.isEmpty() || password.isEmpty()) {
        throw new IllegalArgumentException("KAFKA_SECURITY_PROTOCOL=" + protocol + " needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD");
      }
      String mechanism = env.getOrDefault("KAFKA_SASL_MECHANISM", "").trim();
      if (mechanism.isEmpty()) {
        mechanism = "SCRAM-SHA-512";
      }
      if (!MECHANISMS.contains(mechanism)) {
        throw new IllegalArgumentException("KAFKA_SASL_MECHANISM must be one of " + MECHANISMS + ", got '" + mechanism + "'");
      }
      String module = mechanism.equals("PLAIN")
          ? "org.apache.kafka.common.security.plain.PlainLoginModule"
          : "org.apache.kafka.common.security.scram.ScramLoginModule";
      p.put("sasl.mechanism", mechanism);
      p.put("sasl.jaas.config", module + " required username=\"" + jaasQuote(user) + "\" password=\"" + jaasQuote(password) + "\";");
    }
    return p;
  }

  /** A value inside a JAAS config's double quotes (its tokenizer reads \\ and \" as escapes). */
  private static String jaasQuote(String s) {
    return s.replace("\\", "\\\\").replace("\"", "\\\"");
  }
}

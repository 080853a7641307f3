package io.benchstream.ycsb;

import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** {@link Transport} over one Kafka producer. */
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
    // How long send() may block on metadata or a full producer buffer. Only the
    // delivery thread blocks; meanwhile the emitter's own bounded queue absorbs
    // (and then drops and counts) new batches, so the benchmark never waits.
    p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "5000");
    // A batch not acknowledged within this time is failed and counted undelivered;
    // bounded so that a dead broker cannot hold the end of the run for minutes.
    p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
    p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
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
  public void close(Duration timeout) {
    producer.close(timeout);
  }
}

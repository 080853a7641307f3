package io.benchstream.ycsb;

import java.time.Duration;

/**
 * Where sealed batches and control records go. The emitter depends only on this
 * (Kafka in production, a fake in tests), like an OpenTelemetry exporter.
 */
public interface Transport {
  /** Outcome of one asynchronous send: error is null on acknowledgement. */
  interface Done {
    void completed(Exception error);
  }

  /**
   * Sends one message without waiting for the acknowledgement. May block while
   * the transport's own buffer is full (only the delivery thread calls it);
   * {@code done} is called exactly once, also when this method throws.
   */
  void send(String key, byte[] value, Done done);

  /** Sends one message and waits for its acknowledgement at most {@code timeout}. */
  void sendAndWait(String key, byte[] value, Duration timeout) throws Exception;

  /**
   * Connects ahead of the first send (a client getting ready at a start barrier), waiting a bounded time;
   * throws when the other side does not answer. Nothing is sent.
   */
  default void connect() throws Exception {
  }

  /** Requests sent to Kafka so far (produce and metadata; the summary line names them), or -1 where unknown. */
  default long requests() {
    return -1;
  }

  /** Releases connections; what is not acknowledged after {@code timeout} is failed. */
  void close(Duration timeout);
}

package io.benchstream.ycsb;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Builds one OPS record batch (kind 1) of schemas/events.v1.ts, byte for byte as
 * the TypeScript OpsBatchWriter (services/core/event-codec.ts) writes it:
 *
 * <pre>
 *   'B' 'S' 1 1                  header (magic, schema version, kind OPS)
 *   u8 len + utf8  runId
 *   u8 len + utf8  clientId
 *   f64 LE         baseStartUs    (startUs of the batch's first event)
 *   varint         N
 *   N times: varint thread, u8 (opCode &lt;&lt; 4 | cache &lt;&lt; 2), u8 status,
 *            zigzag startUs - base, varint latencyUs, varint intendedUs - latencyUs, varint bytes
 * </pre>
 *
 * Not thread-safe: one per emitting lane. {@link #add} allocates nothing; the
 * event area grows by doubling and is kept across batches.
 */
public final class OpsBatchEncoder {
  public static final int MAGIC_0 = 0x42;
  public static final int MAGIC_1 = 0x53;
  public static final int SCHEMA_VERSION = 1;
  public static final int KIND_OPS = 1;
  public static final int KIND_RUN_LIFECYCLE = 3;

  /** Longest encoded event: thread (3) + 2 bytes + four 64-bit varints of at most 10 bytes. */
  private static final int MAX_EVENT_BYTES = 45;

  /** Header, run id and client id: the same for every batch of this encoder. */
  private final byte[] head;
  private byte[] buf;
  private int pos;
  private long baseUs;
  private int count;

  public OpsBatchEncoder(String runId, String clientId) {
    this(runId, clientId, 64 * 1024);
  }

  public OpsBatchEncoder(String runId, String clientId, int initialBytes) {
    byte[] run = runId.getBytes(StandardCharsets.UTF_8);
    byte[] client = clientId.getBytes(StandardCharsets.UTF_8);
    if (run.length > 255 || client.length > 255) {
      throw new IllegalArgumentException("run and client ids are written with a one-byte length: at most 255 bytes");
    }
    head = new byte[4 + 1 + run.length + 1 + client.length];
    int p = 0;
    head[p++] = (byte) MAGIC_0;
    head[p++] = (byte) MAGIC_1;
    head[p++] = (byte) SCHEMA_VERSION;
    head[p++] = (byte) KIND_OPS;
    head[p++] = (byte) run.length;
    System.arraycopy(run, 0, head, p, run.length);
    p += run.length;
    head[p++] = (byte) client.length;
    System.arraycopy(client, 0, head, p, client.length);
    buf = new byte[Math.max(initialBytes, 2 * MAX_EVENT_BYTES)];
  }

  /**
   * Appends one event. Codes are indexes into the schema's tables (op code = index + 1).
   * As in the TS writer, an intended latency below the latency is written as equal to it.
   */
  public void add(int thread, int opCode, int cacheIndex, int statusIndex,
                  long startUs, long latencyUs, long intendedUs, long bytes) {
    if (buf.length - pos < MAX_EVENT_BYTES) {
      buf = Arrays.copyOf(buf, buf.length * 2);
    }
    if (count == 0) {
      baseUs = startUs;
    }
    count++;
    varint(thread);
    buf[pos++] = (byte) ((opCode << 4) | (cacheIndex << 2));
    buf[pos++] = (byte) statusIndex;
    long delta = startUs - baseUs;
    varint((delta << 1) ^ (delta >> 63));
    varint(latencyUs);
    varint(intendedUs > latencyUs ? intendedUs - latencyUs : 0);
    varint(bytes);
  }

  /** Events in the unfinished batch. */
  public int count() {
    return count;
  }

  /** Encoded bytes of the events so far (without the header). */
  public int size() {
    return pos;
  }

  /** Returns the finished message and resets the encoder for the next batch. */
  public byte[] finish() {
    int countBytes = varintLength(count);
    byte[] out = new byte[head.length + 8 + countBytes + pos];
    System.arraycopy(head, 0, out, 0, head.length);
    int p = head.length;
    // The base is an f64 on the wire: exact for any µs timestamp below 2^53 (year 2255).
    long bits = Double.doubleToRawLongBits((double) baseUs);
    for (int i = 0; i < 8; i++) {
      out[p++] = (byte) (bits >>> (8 * i));
    }
    long v = count;
    while ((v & ~0x7FL) != 0) {
      out[p++] = (byte) ((v & 0x7F) | 0x80);
      v >>>= 7;
    }
    out[p++] = (byte) v;
    System.arraycopy(buf, 0, out, p, pos);
    pos = 0;
    count = 0;
    return out;
  }

  /** Unsigned LEB128 of a value read as unsigned 64 bits (callers pass non-negative values). */
  private void varint(long v) {
    while ((v & ~0x7FL) != 0) {
      buf[pos++] = (byte) ((v & 0x7F) | 0x80);
      v >>>= 7;
    }
    buf[pos++] = (byte) v;
  }

  static int varintLength(long v) {
    int n = 1;
    while ((v & ~0x7FL) != 0) {
      v >>>= 7;
      n++;
    }
    return n;
  }
}

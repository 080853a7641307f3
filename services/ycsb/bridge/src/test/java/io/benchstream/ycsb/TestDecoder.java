package io.benchstream.ycsb;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** A plain reader of OPS batches for tests (the production reader is the TS processor). */
final class TestDecoder {
  static final class Event {
    String runId;
    String clientId;
    int thread;
    int opCode;
    int cache;
    int status;
    long startUs;
    long latencyUs;
    long intendedUs;
    long bytes;
  }

  static List<Event> decode(byte[] msg) {
    ByteBuffer b = ByteBuffer.wrap(msg).order(ByteOrder.LITTLE_ENDIAN);
    if (b.get() != 0x42 || b.get() != 0x53 || b.get() != 1 || b.get() != 1) {
      throw new IllegalArgumentException("not an OPS v1 batch");
    }
    String run = id(b);
    String client = id(b);
    long base = (long) b.getDouble();
    long n = varint(b);
    List<Event> out = new ArrayList<>();
    for (long i = 0; i < n; i++) {
      Event e = new Event();
      e.runId = run;
      e.clientId = client;
      e.thread = (int) varint(b);
      int opByte = b.get() & 0xff;
      e.opCode = opByte >> 4;
      e.cache = (opByte >> 2) & 3;
      e.status = b.get() & 0xff;
      long z = varint(b);
      e.startUs = base + ((z >>> 1) ^ -(z & 1));
      e.latencyUs = varint(b);
      e.intendedUs = e.latencyUs + varint(b);
      e.bytes = varint(b);
      out.add(e);
    }
    if (b.hasRemaining()) {
      throw new IllegalArgumentException("trailing bytes");
    }
    return out;
  }

  private static String id(ByteBuffer b) {
    int len = b.get() & 0xff;
    byte[] s = new byte[len];
    b.get(s);
    return new String(s, StandardCharsets.UTF_8);
  }

  private static long varint(ByteBuffer b) {
    long v = 0;
    for (int shift = 0; ; shift += 7) {
      int x = b.get() & 0xff;
      v |= (long) (x & 0x7f) << shift;
      if (x < 0x80) {
        return v;
      }
    }
  }
}

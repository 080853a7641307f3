package io.benchstream.ycsb;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.LinkedBlockingQueue;

/** A stdin for tests: lines written by the test, then an end (sticky), never "broken" as a pipe of a dead thread is. */
final class FakeStdin extends InputStream {
  private static final int EOF = -1;
  private final LinkedBlockingQueue<Integer> bytes = new LinkedBlockingQueue<>();

  void write(String s) {
    for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
      bytes.add(b & 0xff);
    }
  }

  @Override
  public void close() {
    bytes.add(EOF);
  }

  @Override
  public int read() {
    int b;
    try {
      b = bytes.take();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return EOF;
    }
    if (b == EOF) {
      bytes.add(EOF);
    }
    return b;
  }

  /** At least one byte (or the end), then what is there: as a pipe reads. */
  @Override
  public int read(byte[] buf, int off, int len) {
    if (len == 0) {
      return 0;
    }
    int b = read();
    if (b == EOF) {
      return EOF;
    }
    buf[off] = (byte) b;
    int n = 1;
    Integer next;
    while (n < len && (next = bytes.peek()) != null && next != EOF) {
      buf[off + n++] = (byte) (int) bytes.poll();
    }
    return n;
  }
}

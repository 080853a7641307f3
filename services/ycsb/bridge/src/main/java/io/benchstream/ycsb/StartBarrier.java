package io.benchstream.ycsb;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.concurrent.CountDownLatch;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code benchstream.barrier=stdin}: the client gets ready, says so on stderr
 * ({@link #READY_LINE}), then reads one line from stdin: {@code start <ms since
 * epoch>} (start at that instant of the wall clock) or {@code abort}. The same
 * protocol as the Node driver's --barrier stdin (services/driver/main.ts
 * stdinBarrier): an experiment's agent holds every client of a run at one
 * barrier and names one instant for all of them.
 *
 * <p>After the start, stdin stays open: its end means the agent that started
 * this client is gone (its machine died, or it was killed), and the client ends
 * at once without an end record ({@link #onStdinClosed}: halt, so that no
 * shutdown hook sends one), so the run is visibly incomplete instead of
 * looking whole.
 *
 * <p>One per run: the first caller of {@link #await} does the reading and the
 * waiting, every other caller waits on one latch for the same outcome.
 */
final class StartBarrier {
  /** What a client prints on stderr once it is ready (services/driver/config.ts BARRIER_READY_LINE). */
  static final String READY_LINE = "benchstream-barrier: ready";
  /** Exit status when stdin ends after the start (as the Node driver's). */
  static final int STDIN_CLOSED_EXIT = 75;
  /** The last stretch before the instant is spun rather than slept: a sleep wakes a few ms late. */
  private static final long SPIN_NANOS = 3_000_000L;
  /** A longer line on stdin is not the protocol. */
  private static final int MAX_LINE = 256;
  private static final Pattern START = Pattern.compile("^start (\\d{12,15})$");

  // Where the protocol is read and said; tests replace them.
  static InputStream in = System.in;
  static PrintStream err = System.err;
  /** What the end of stdin after the start does: the client ends at once, no end record, no shutdown hook. */
  static Runnable onStdinClosed = () -> {
    err.println("benchstream: stdin closed (the agent that started this client is gone): ending now");
    err.flush();
    Runtime.getRuntime().halt(STDIN_CLOSED_EXIT);
  };

  /** Called once `start` is read, before the wait, with the instant as a System.nanoTime value. */
  interface OnStart {
    void starting(long startNanos);
  }

  private final CountDownLatch passed = new CountDownLatch(1);
  private boolean claimed;
  private volatile String calledOff;
  private volatile long startNanos;

  /**
   * Ready, then the start instant: returns at it (System.nanoTime of the instant), or throws
   * IllegalStateException when the run was called off (abort, stdin closed, a line that is not the protocol).
   * {@code onStart} runs once, in the caller that reads stdin, before waiting for the instant.
   */
  long await(OnStart onStart) throws InterruptedException {
    boolean first;
    synchronized (this) {
      first = !claimed;
      claimed = true;
    }
    if (first) {
      try {
        pass(onStart);
      } finally {
        passed.countDown();
      }
    } else {
      passed.await();
    }
    if (calledOff != null) {
      throw new IllegalStateException("the run was called off at its start barrier: " + calledOff);
    }
    return startNanos;
  }

  /** Calls the run off for whoever waits or comes (a client thread that could not get ready). */
  void callOff(String why) {
    synchronized (this) {
      if (claimed) {
        return;
      }
      claimed = true;
    }
    calledOff = why;
    passed.countDown();
  }

  /** Whether await has returned (or thrown) for someone: the outcome is settled. */
  boolean settled() {
    return passed.getCount() == 0;
  }

  private void pass(OnStart onStart) throws InterruptedException {
    err.println(READY_LINE);
    err.flush();
    String line;
    try {
      line = readLine();
    } catch (IOException e) {
      calledOff = "stdin could not be read: " + e.getMessage();
      return;
    }
    if (line == null) {
      calledOff = "stdin closed";
      return;
    }
    if (line.equals("abort")) {
      calledOff = "abort";
      return;
    }
    Matcher m = START.matcher(line);
    if (!m.matches()) {
      String shown = line.length() > 80 ? line.substring(0, 80) : line;
      calledOff = "'" + shown + "' on stdin, expected \"start <ms since epoch>\"";
      return;
    }
    long atMs = Long.parseLong(m.group(1));
    // One wall-clock reading, then the monotonic clock YCSB times with.
    Instant now = Instant.now();
    long nowUs = now.getEpochSecond() * 1_000_000L + now.getNano() / 1000;
    long until = System.nanoTime() + (atMs * 1000L - nowUs) * 1000L;
    onStart.starting(until);
    watchStdin();
    long sleep = until - System.nanoTime() - SPIN_NANOS;
    if (sleep > 0) {
      Thread.sleep(sleep / 1_000_000L, (int) (sleep % 1_000_000L));
    }
    while (System.nanoTime() - until < 0) {
      Thread.onSpinWait();
    }
    startNanos = until;
  }

  /** One line, without its end; null at the end of stdin before any byte of it. */
  private static String readLine() throws IOException {
    byte[] buf = new byte[MAX_LINE + 1];
    int n = 0;
    for (;;) {
      int b = in.read();
      if (b == -1) {
        return n == 0 ? null : new String(buf, 0, n, StandardCharsets.UTF_8).trim();
      }
      if (b == '\n') {
        return new String(buf, 0, n, StandardCharsets.UTF_8).trim();
      }
      if (n == MAX_LINE) {
        return new String(buf, 0, n, StandardCharsets.UTF_8) + "...";
      }
      buf[n++] = (byte) b;
    }
  }

  /** From the start on, the end of stdin ends the client (a daemon thread: it never holds the JVM). */
  private static void watchStdin() {
    Thread t = new Thread(() -> {
      try {
        byte[] sink = new byte[256];
        while (in.read(sink) != -1) {
          // nothing else is said after the start
        }
      } catch (IOException e) {
        // a broken stdin is a closed one
      }
      onStdinClosed.run();
    }, "benchstream-stdin");
    t.setDaemon(true);
    t.start();
  }
}

package io.benchstream.ycsb;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** Records what the emitter sends; acknowledges at once unless told to fail or hold. */
final class FakeTransport implements Transport {
  final List<byte[]> events = new ArrayList<>();
  final List<byte[]> control = new ArrayList<>();
  volatile boolean fail;
  /** Hold sends (not acknowledged) until released. */
  volatile boolean hold;
  private final List<Runnable> held = new ArrayList<>();
  volatile boolean closed;

  @Override
  public synchronized void send(String key, byte[] value, Done done) {
    if (key.endsWith(":ctl") && !fail) {
      // A control record sent without waiting (the start record at a barrier).
      control.add(value);
      done.completed(null);
      return;
    }
    if (fail) {
      done.completed(new RuntimeException("broker down"));
      return;
    }
    if (hold) {
      held.add(() -> {
        events.add(value);
        done.completed(null);
      });
      return;
    }
    events.add(value);
    done.completed(null);
  }

  @Override
  public synchronized void sendAndWait(String key, byte[] value, Duration timeout) throws Exception {
    if (fail) {
      throw new RuntimeException("broker down");
    }
    control.add(value);
  }

  @Override
  public synchronized void close(Duration timeout) {
    closed = true;
  }

  synchronized int heldCount() {
    return held.size();
  }
}

package io.benchstream.ycsb;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.atomic.AtomicInteger;

import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

/** A wrapped DB for tests: answers reads with two 10-byte fields, other statuses as configured. */
public class FakeDB extends DB {
  static final AtomicInteger INITS = new AtomicInteger();
  static final AtomicInteger CLEANUPS = new AtomicInteger();
  static final AtomicInteger CALLS = new AtomicInteger();
  static volatile Status updateStatus = Status.OK;
  static volatile Status insertStatus = Status.OK;
  static volatile Status deleteStatus = Status.OK;
  static volatile boolean failInit;

  @Override
  public void init() throws DBException {
    if (failInit) {
      throw new DBException("fake init failure");
    }
    INITS.incrementAndGet();
  }

  @Override
  public void cleanup() {
    CLEANUPS.incrementAndGet();
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    CALLS.incrementAndGet();
    result.put("field0", new StringByteIterator("0123456789"));
    result.put("field1", new StringByteIterator("abcdefghij"));
    return Status.OK;
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
                     Vector<HashMap<String, ByteIterator>> result) {
    CALLS.incrementAndGet();
    for (int i = 0; i < recordcount; i++) {
      HashMap<String, ByteIterator> row = new HashMap<>();
      row.put("f", new StringByteIterator("xyz"));
      result.add(row);
    }
    return Status.NOT_FOUND;
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    CALLS.incrementAndGet();
    values.values().forEach(ByteIterator::toString); // consume, as real bindings do
    return updateStatus;
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    CALLS.incrementAndGet();
    values.values().forEach(ByteIterator::toString);
    return insertStatus;
  }

  @Override
  public Status delete(String table, String key) {
    CALLS.incrementAndGet();
    return deleteStatus;
  }
}

package io.benchstream.ycsb;

import site.ycsb.Status;

/**
 * Wire codes of schemas/events.v1.ts: operation codes (index in OPERATIONS + 1),
 * status indexes (index in STATUSES) and cache outcome indexes. Never renumber:
 * they are on the wire.
 */
public final class EventCodes {
  private EventCodes() {
  }

  /** schemas/events.v1.ts OPERATIONS; the wire code of OPERATIONS[i] is i + 1. */
  public static final String[] OPERATIONS = {"READ", "UPDATE", "INSERT", "SCAN", "READ-MODIFY-WRITE", "DELETE"};
  public static final int READ = 1;
  public static final int UPDATE = 2;
  public static final int INSERT = 3;
  public static final int SCAN = 4;
  public static final int READ_MODIFY_WRITE = 5;
  public static final int DELETE = 6;

  /** schemas/events.v1.ts STATUSES (YCSB's Status names). */
  public static final String[] STATUSES = {
      "OK", "ERROR", "NOT_FOUND", "NOT_IMPLEMENTED", "UNEXPECTED_STATE",
      "BAD_REQUEST", "FORBIDDEN", "SERVICE_UNAVAILABLE", "TIMEOUT"};
  public static final int STATUS_OK = 0;
  public static final int STATUS_ERROR = 1;

  /** schemas/events.v1.ts CACHE_OUTCOMES. A wrapped YCSB binding cannot tell HIT from MISS. */
  public static final String[] CACHE_OUTCOMES = {"UNKNOWN", "HIT", "MISS"};
  public static final int CACHE_UNKNOWN = 0;

  /** Size of per-(operation, status) counter arrays indexed by {@link #cell}. */
  public static final int CELLS = 128;

  /** Counter index of an (operation code, status index) pair, as the TS sink keys them. */
  public static int cell(int opCode, int statusIndex) {
    return opCode * 16 + statusIndex;
  }

  /**
   * Benchstream status index of a YCSB Status. BATCHED_OK is a success (YCSB's
   * own {@code isOk()} says so); a name Benchstream does not know, and null, are ERROR.
   */
  public static int statusIndex(Status s) {
    // Identity first: bindings return YCSB's singletons, so the hot path is one compare.
    if (s == Status.OK || s == Status.BATCHED_OK) {
      return STATUS_OK;
    }
    if (s == null) {
      return STATUS_ERROR;
    }
    switch (s.getName()) {
      case "OK":
      case "BATCHED_OK":
        return STATUS_OK;
      case "ERROR":
        return STATUS_ERROR;
      case "NOT_FOUND":
        return 2;
      case "NOT_IMPLEMENTED":
        return 3;
      case "UNEXPECTED_STATE":
        return 4;
      case "BAD_REQUEST":
        return 5;
      case "FORBIDDEN":
        return 6;
      case "SERVICE_UNAVAILABLE":
        return 7;
      case "TIMEOUT":
        return 8;
      default:
        return STATUS_ERROR;
    }
  }

  /** Wire code of an operation name, or 0 if unknown. */
  public static int opCode(String op) {
    for (int i = 0; i < OPERATIONS.length; i++) {
      if (OPERATIONS[i].equals(op)) {
        return i + 1;
      }
    }
    return 0;
  }

  /** Index of a status name, or -1 if unknown. */
  public static int statusIndexOf(String name) {
    return indexOf(STATUSES, name);
  }

  /** Index of a cache outcome name, or -1 if unknown. */
  public static int cacheIndexOf(String name) {
    return indexOf(CACHE_OUTCOMES, name);
  }

  private static int indexOf(String[] table, String name) {
    for (int i = 0; i < table.length; i++) {
      if (table[i].equals(name)) {
        return i;
      }
    }
    return -1;
  }
}

package io.benchstream.ycsb;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * RUN_LIFECYCLE record (kind 3) of schemas/events.v1.ts: the 4-byte header and
 * the UTF-8 JSON of RunLifecycle. Keys are written in the order the TS driver
 * builds the object (services/driver/app.ts), and strings are escaped as
 * JSON.stringify escapes them, so both drivers produce the same bytes for the
 * same record (checked by schemas/test-vectors/events.v1.json).
 */
public final class LifecycleRecord {
  public String phase;
  public String runId;
  public String clientId;
  /** µs since the Unix epoch. */
  public long atUs;
  public Map<String, String> labels;
  public String workload;
  public String binding;
  public long threads;
  /** Target ops/s of this client, 0 = unthrottled. */
  public long target;
  /** On 'start': group of repetitions, or null. */
  public String group;
  /** On 'start': the run's repetition in its group, or null. */
  public Integer repeat;
  /** On 'start': how many clients the run has, or null. */
  public Integer expectedClients;
  /** On 'start': this machine's clock minus the broker's, ms, as JSON number text, or null. */
  public String clockOffsetMs;
  /** On 'end': acknowledged events by "OP/STATUS", in wire-code order; null on 'start'. */
  public Map<String, Long> sent;
  /** On 'end'. */
  public Long undelivered;
  /** On 'end'. */
  public Long runtimeMs;
  /** On 'end': when the client's first operation started, µs since the epoch, or null (none). */
  public Long firstOpUs;

  /** The Kafka message value: header then JSON. */
  public byte[] encode() {
    StringBuilder s = new StringBuilder(256);
    s.append("{\"kind\":").append(OpsBatchEncoder.KIND_RUN_LIFECYCLE);
    s.append(",\"phase\":");
    string(s, phase);
    s.append(",\"atUs\":").append(atUs);
    s.append(",\"runId\":");
    string(s, runId);
    s.append(",\"clientId\":");
    string(s, clientId);
    s.append(",\"labels\":{");
    boolean first = true;
    for (Map.Entry<String, String> e : labels.entrySet()) {
      if (!first) {
        s.append(',');
      }
      first = false;
      string(s, e.getKey());
      s.append(':');
      string(s, e.getValue());
    }
    s.append("},\"workload\":");
    string(s, workload);
    s.append(",\"binding\":");
    string(s, binding);
    s.append(",\"threads\":").append(threads);
    s.append(",\"target\":").append(target);
    // The TS driver's start record: group, repeat, properties (the bridge sends none), expectedClients, clockOffsetMs.
    if (group != null) {
      s.append(",\"group\":");
      string(s, group);
    }
    if (repeat != null) {
      s.append(",\"repeat\":").append(repeat.intValue());
    }
    if (expectedClients != null) {
      s.append(",\"expectedClients\":").append(expectedClients.intValue());
    }
    if (clockOffsetMs != null) {
      s.append(",\"clockOffsetMs\":").append(clockOffsetMs);
    }
    if (sent != null) {
      s.append(",\"sent\":{");
      first = true;
      for (Map.Entry<String, Long> e : sent.entrySet()) {
        if (!first) {
          s.append(',');
        }
        first = false;
        string(s, e.getKey());
        s.append(':').append(e.getValue().longValue());
      }
      s.append('}');
    }
    if (undelivered != null) {
      s.append(",\"undelivered\":").append(undelivered.longValue());
    }
    if (runtimeMs != null) {
      s.append(",\"runtimeMs\":").append(runtimeMs.longValue());
    }
    if (firstOpUs != null) {
      s.append(",\"firstOpUs\":").append(firstOpUs.longValue());
    }
    s.append('}');
    ByteArrayOutputStream out = new ByteArrayOutputStream(s.length() + 8);
    out.write(OpsBatchEncoder.MAGIC_0);
    out.write(OpsBatchEncoder.MAGIC_1);
    out.write(OpsBatchEncoder.SCHEMA_VERSION);
    out.write(OpsBatchEncoder.KIND_RUN_LIFECYCLE);
    byte[] json = s.toString().getBytes(StandardCharsets.UTF_8);
    out.write(json, 0, json.length);
    return out.toByteArray();
  }

  /**
   * A JSON string as ECMAScript's JSON.stringify writes it: the short escapes for
   * " \ \b \f \n \r \t, \\u00xx (lower-case hex) for other controls, lone
   * surrogates as \\udxxx, everything else as is (UTF-8 on the wire).
   */
  static void string(StringBuilder s, String v) {
    s.append('"');
    int n = v.length();
    for (int i = 0; i < n; i++) {
      char c = v.charAt(i);
      switch (c) {
        case '"':
          s.append("\\\"");
          break;
        case '\\':
          s.append("\\\\");
          break;
        case '\b':
          s.append("\\b");
          break;
        case '\f':
          s.append("\\f");
          break;
        case '\n':
          s.append("\\n");
          break;
        case '\r':
          s.append("\\r");
          break;
        case '\t':
          s.append("\\t");
          break;
        default:
          if (c < 0x20) {
            hexEscape(s, c);
          } else if (Character.isHighSurrogate(c)) {
            if (i + 1 < n && Character.isLowSurrogate(v.charAt(i + 1))) {
              s.append(c).append(v.charAt(++i));
            } else {
              hexEscape(s, c);
            }
          } else if (Character.isLowSurrogate(c)) {
            hexEscape(s, c);
          } else {
            s.append(c);
          }
      }
    }
    s.append('"');
  }

  private static void hexEscape(StringBuilder s, char c) {
    String h = Integer.toHexString(c);
    s.append("\\u");
    for (int k = h.length(); k < 4; k++) {
      s.append('0');
    }
    s.append(h);
  }
}

// A JDBC client as DBeaver, DataGrip and Metabase use it: ClickHouse's official
// driver (com.clickhouse:clickhouse-jdbc, see pom.xml) with its default settings,
// through java.sql only. Used by test/clients/clickhouse-clients.test.ts
// against Benchstream's /clickhouse endpoint.
//
//   java -cp ... benchstream.Main URL USER PASSWORD STEP...
//
// Each STEP prints one JSON object on a line of stdout:
//   meta            what a navigator reads: product name and version, driver,
//                   schemas, tables (getTables), columns (getColumns) and primary
//                   keys of op_windows, type names (getTypeInfo)
//   query:SQL       {"columns":[{"name","type"}],"rows":[[...]]}, values as
//                   getString() gives them (null for NULL)
//   typed:SQL       the same, values as getObject() gives them, printed with
//                   String.valueOf (the types the driver maps to)
//   sum:COLUMN:SQL  {"rows":N,"sum":S,"ms":T}: every row read with next(),
//                   COLUMN's values summed (getLong), nothing printed per row,
//                   T the milliseconds from executeQuery to the last row; a
//                   failure part-way prints {"error":"...","rowsBefore":N}
// A failing step prints {"error":"..."} and the next step runs (exit status 0:
// the caller checks errors). Failing to connect prints {"error":"connect: ..."}.
package benchstream;

import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

public final class Main {
  public static void main(String[] args) {
    if (args.length < 3) {
      System.err.println("usage: Main URL USER PASSWORD STEP...");
      System.exit(2);
    }
    Properties props = new Properties();
    props.setProperty("user", args[1]);
    props.setProperty("password", args[2]);
    try (Connection conn = DriverManager.getConnection(args[0], props)) {
      for (int i = 3; i < args.length; i++) {
        String step = args[i];
        try {
          if (step.equals("meta")) System.out.println(meta(conn.getMetaData()));
          else if (step.startsWith("query:")) System.out.println(query(conn, step.substring(6), false));
          else if (step.startsWith("typed:")) System.out.println(query(conn, step.substring(6), true));
          else if (step.startsWith("sum:")) System.out.println(sum(conn, step.substring(4)));
          else System.out.println(error("unknown step " + step));
        } catch (Exception e) {
          System.out.println(error(e));
        }
      }
    } catch (Exception e) {
      System.out.println(error("connect: " + describe(e)));
    }
    System.out.flush();
  }

  private static String meta(DatabaseMetaData md) throws SQLException {
    StringBuilder sb = new StringBuilder("{");
    field(sb, "product", md.getDatabaseProductName()).append(',');
    field(sb, "version", md.getDatabaseProductVersion()).append(',');
    field(sb, "driver", md.getDriverName() + " " + md.getDriverVersion()).append(',');
    field(sb, "user", md.getUserName()).append(',');
    sb.append("\"schemas\":").append(column(md.getSchemas(), "TABLE_SCHEM")).append(',');
    sb.append("\"catalogs\":").append(column(md.getCatalogs(), "TABLE_CAT")).append(',');
    sb.append("\"tables\":").append(rows(md.getTables(null, null, "%", null), "TABLE_SCHEM", "TABLE_NAME", "TABLE_TYPE"));
    sb.append(",\"columns\":").append(rows(md.getColumns(null, null, "op_windows", "%"), "COLUMN_NAME", "TYPE_NAME", "DATA_TYPE", "IS_NULLABLE"));
    sb.append(",\"primaryKeys\":").append(rows(md.getPrimaryKeys(null, null, "op_windows"), "COLUMN_NAME"));
    sb.append(",\"types\":").append(column(md.getTypeInfo(), "TYPE_NAME"));
    return sb.append('}').toString();
  }

  private static String query(Connection conn, String sql, boolean typed) throws SQLException {
    try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(sql)) {
      ResultSetMetaData m = rs.getMetaData();
      StringBuilder sb = new StringBuilder("{\"columns\":[");
      for (int c = 1; c <= m.getColumnCount(); c++) {
        if (c > 1) sb.append(',');
        sb.append("{\"name\":").append(quote(m.getColumnLabel(c))).append(",\"type\":").append(quote(m.getColumnTypeName(c))).append('}');
      }
      sb.append("],\"rows\":[");
      boolean first = true;
      while (rs.next()) {
        if (!first) sb.append(',');
        first = false;
        sb.append('[');
        for (int c = 1; c <= m.getColumnCount(); c++) {
          if (c > 1) sb.append(',');
          Object v = typed ? rs.getObject(c) : rs.getString(c);
          sb.append(v == null ? "null" : quote(String.valueOf(v)));
        }
        sb.append(']');
      }
      sb.append(']');
      SQLException w = st.getWarnings();
      if (w != null) sb.append(",\"warning\":").append(quote(w.getMessage()));
      return sb.append('}').toString();
    }
  }

  private static String sum(Connection conn, String step) throws SQLException {
    int colon = step.indexOf(':');
    String column = step.substring(0, colon);
    long rows = 0;
    long sum = 0;
    long t0 = System.nanoTime();
    try (Statement st = conn.createStatement(); ResultSet rs = st.executeQuery(step.substring(colon + 1))) {
      int c = rs.findColumn(column);
      while (rs.next()) {
        rows++;
        sum += rs.getLong(c);
      }
    } catch (Exception e) {
      return "{\"error\":" + quote(describe(e)) + ",\"rowsBefore\":" + rows + "}";
    }
    return "{\"rows\":" + rows + ",\"sum\":" + sum + ",\"ms\":" + (System.nanoTime() - t0) / 1_000_000 + "}";
  }

  private static String column(ResultSet rs, String name) throws SQLException {
    List<String> out = new ArrayList<>();
    try (rs) {
      while (rs.next()) out.add(quote(rs.getString(name)));
    }
    return "[" + String.join(",", out) + "]";
  }

  private static String rows(ResultSet rs, String... names) throws SQLException {
    List<String> out = new ArrayList<>();
    try (rs) {
      while (rs.next()) {
        List<String> row = new ArrayList<>();
        for (String n : names) row.add(quote(rs.getString(n)));
        out.add("[" + String.join(",", row) + "]");
      }
    }
    return "[" + String.join(",", out) + "]";
  }

  private static StringBuilder field(StringBuilder sb, String name, String value) {
    return sb.append(quote(name)).append(':').append(quote(value));
  }

  private static String error(Exception e) {
    return error(describe(e));
  }

  private static String error(String message) {
    return "{\"error\":" + quote(message) + "}";
  }

  /** The message of an exception and of its causes: the driver wraps the server's text. */
  private static String describe(Throwable e) {
    StringBuilder sb = new StringBuilder(e.getClass().getSimpleName() + ": " + e.getMessage());
    for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause())
      sb.append(" <- ").append(c.getClass().getSimpleName()).append(": ").append(c.getMessage());
    return sb.toString();
  }

  private static String quote(String s) {
    if (s == null) return "null";
    StringBuilder sb = new StringBuilder("\"");
    for (char ch : s.toCharArray()) {
      switch (ch) {
        case '"' -> sb.append("\\\"");
        case '\\' -> sb.append("\\\\");
        case '\n' -> sb.append("\\n");
        case '\r' -> sb.append("\\r");
        case '\t' -> sb.append("\\t");
        default -> {
          if (ch < 0x20) sb.append(String.format("\\u%04x", (int) ch));
          else sb.append(ch);
        }
      }
    }
    return sb.append('"').toString();
  }
}

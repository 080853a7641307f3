package io.benchstream.ycsb.redis;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;

import redis.clients.jedis.Connection;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.UnifiedJedis;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

/**
 * YCSB binding for Redis (jedis), written for Benchstream because YCSB's own
 * Redis binding ({@code site.ycsb.db.RedisClient}) is not published to Maven
 * Central. It keeps that binding's data layout and command sequence, so data
 * loaded by either can be run by the other and the figures compare:
 *
 * <ul>
 *   <li>a record is a hash at its key (HMSET / HGETALL / HMGET);</li>
 *   <li>every inserted key is also a member of the sorted set {@code _indices}
 *       with score {@code key.hashCode()}; a scan is ZRANGEBYSCORE from
 *       hash(startkey) to +inf, LIMIT 0 recordcount, then one read per key.
 *       (Hash order is not key order: that is how YCSB's binding scans.)</li>
 *   <li>the table name is ignored (one keyspace), as in YCSB's binding.</li>
 * </ul>
 *
 * Properties: redis.host (default localhost), redis.port (6379), redis.password,
 * redis.timeout (socket and connect timeout, ms; default jedis' 2000),
 * redis.cluster (true: JedisCluster seeded with host:port; the sorted set then
 * lives in one slot, as with YCSB's binding). One connection per client thread.
 */
public final class RedisClient extends DB {
  public static final String HOST_PROPERTY = "redis.host";
  public static final String PORT_PROPERTY = "redis.port";
  public static final String PASSWORD_PROPERTY = "redis.password";
  public static final String CLUSTER_PROPERTY = "redis.cluster";
  public static final String TIMEOUT_PROPERTY = "redis.timeout";
  /** Name of the sorted set of all keys, as in YCSB's binding. */
  public static final String INDEX_KEY = "_indices";

  private UnifiedJedis jedis;

  @Override
  public void init() throws DBException {
    Properties props = getProperties();
    String host = props.getProperty(HOST_PROPERTY, Protocol.DEFAULT_HOST);
    int port = intProperty(props, PORT_PROPERTY, Protocol.DEFAULT_PORT);
    DefaultJedisClientConfig.Builder config = DefaultJedisClientConfig.builder();
    if (props.getProperty(TIMEOUT_PROPERTY) != null) {
      config.timeoutMillis(intProperty(props, TIMEOUT_PROPERTY, Protocol.DEFAULT_TIMEOUT));
    }
    String password = props.getProperty(PASSWORD_PROPERTY);
    if (password != null) {
      config.password(password);
    }
    JedisClientConfig cfg = config.build();
    try {
      if (Boolean.parseBoolean(props.getProperty(CLUSTER_PROPERTY))) {
        Set<HostAndPort> seeds = new HashSet<>();
        seeds.add(new HostAndPort(host, port));
        jedis = new JedisCluster(seeds, cfg);
      } else {
        // A single connection, like YCSB's binding (one Jedis per thread), not a pool.
        jedis = new UnifiedJedis(new Connection(new HostAndPort(host, port), cfg));
      }
    } catch (RuntimeException e) {
      throw new DBException("redis: cannot connect to " + host + ":" + port + ": " + e.getMessage(), e);
    }
  }

  @Override
  public void cleanup() throws DBException {
    if (jedis != null) {
      try {
        jedis.close();
      } catch (RuntimeException e) {
        throw new DBException("redis: closing the connection failed: " + e.getMessage(), e);
      }
    }
  }

  /** Score of a key in {@value #INDEX_KEY}: YCSB's binding uses String.hashCode(). */
  static double hash(String key) {
    return key.hashCode();
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    if (fields == null) {
      for (Map.Entry<String, String> e : jedis.hgetAll(key).entrySet()) {
        result.put(e.getKey(), new StringByteIterator(e.getValue()));
      }
      // As YCSB's binding: a missing key (empty HGETALL) is ERROR, not NOT_FOUND.
      return result.isEmpty() ? Status.ERROR : Status.OK;
    }
    String[] names = fields.toArray(new String[0]);
    List<String> values = jedis.hmget(key, names);
    Iterator<String> v = values.iterator();
    boolean answered = false;
    for (int i = 0; i < names.length && v.hasNext(); i++) {
      String value = v.next();
      answered = true;
      // HMGET answers nil for a missing field (or key). YCSB's binding stores a
      // StringByteIterator over null there, which fails when read; we leave the
      // field out but return the status YCSB's binding returns: OK whenever
      // HMGET answered, even for a missing key.
      if (value != null) {
        result.put(names[i], new StringByteIterator(value));
      }
    }
    return answered || !result.isEmpty() ? Status.OK : Status.ERROR;
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    if ("OK".equals(jedis.hmset(key, StringByteIterator.getStringMap(values)))) {
      jedis.zadd(INDEX_KEY, hash(key), key);
      return Status.OK;
    }
    return Status.ERROR;
  }

  @Override
  public Status delete(String table, String key) {
    // Exactly YCSB's sequence, quirk included: ZREM runs only when DEL removed
    // nothing (its "del == 0 && zrem == 0" short-circuits), so a deleted key stays
    // in _indices and later scans read it as an empty record. CoreWorkload never
    // deletes, so the standard workloads do not meet this.
    return jedis.del(key) == 0 && jedis.zrem(INDEX_KEY, key) == 0 ? Status.ERROR : Status.OK;
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    return "OK".equals(jedis.hmset(key, StringByteIterator.getStringMap(values))) ? Status.OK : Status.ERROR;
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
                     Vector<HashMap<String, ByteIterator>> result) {
    List<String> keys = jedis.zrangeByScore(INDEX_KEY, hash(startkey), Double.POSITIVE_INFINITY, 0, recordcount);
    for (String key : keys) {
      HashMap<String, ByteIterator> values = new HashMap<>();
      read(table, key, fields, values);
      result.add(values);
    }
    return Status.OK;
  }

  private static int intProperty(Properties props, String name, int dflt) throws DBException {
    String s = props.getProperty(name);
    if (s == null) {
      return dflt;
    }
    try {
      return Integer.parseInt(s.trim());
    } catch (NumberFormatException e) {
      throw new DBException("redis: " + name + " must be a whole number, got '" + s + "'");
    }
  }
}

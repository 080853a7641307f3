package io.benchstream.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Properties;

import org.junit.jupiter.api.Test;

/** The producer's TLS and SASL settings from the environment (KafkaTransport.security). */
class KafkaTransportTest {
  @Test
  void plaintextByDefault() {
    assertTrue(KafkaTransport.security(Map.of()).isEmpty());
    assertTrue(KafkaTransport.security(Map.of("KAFKA_SECURITY_PROTOCOL", "PLAINTEXT")).isEmpty());
  }

  @Test
  void saslSslWithScramAndAPemCa() {
    Properties p = KafkaTransport.security(Map.of(
        "KAFKA_SECURITY_PROTOCOL", "SASL_SSL",
        "KAFKA_SASL_USERNAME", "bench",
        "KAFKA_SASL_PASSWORD", "p\"w\\d",
        "KAFKA_SSL_CA_FILE", "/etc/ca.pem"));
    assertEquals("SASL_SSL", p.getProperty("security.protocol"));
    assertEquals("SCRAM-SHA-512", p.getProperty("sasl.mechanism"));
    assertEquals("PEM", p.getProperty("ssl.truststore.type"));
    assertEquals("/etc/ca.pem", p.getProperty("ssl.truststore.location"));
    assertEquals(
        "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"bench\" password=\"p\\\"w\\\\d\";",
        p.getProperty("sasl.jaas.config"));
  }

  @Test
  void settingsTheProtocolIgnoresAreRefused() {
    assertThrows(IllegalArgumentException.class, () -> KafkaTransport.security(Map.of("KAFKA_SASL_PASSWORD", "x")));
    assertThrows(IllegalArgumentException.class, () -> KafkaTransport.security(Map.of("KAFKA_SSL_CA_FILE", "/ca.pem")));
    assertThrows(IllegalArgumentException.class,
        () -> KafkaTransport.security(Map.of("KAFKA_SECURITY_PROTOCOL", "SASL_SSL", "KAFKA_SASL_USERNAME", "u")));
    assertThrows(IllegalArgumentException.class, () -> KafkaTransport.security(Map.of("KAFKA_SECURITY_PROTOCOL", "TLS")));
  }
}

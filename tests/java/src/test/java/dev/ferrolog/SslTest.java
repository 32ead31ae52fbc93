package dev.ferrolog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.SslAuthenticationException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.Test;

/**
 * The Java client (3.9 and 4.4) over SSL, with stores made by Java's own
 * keytool as a Kafka operator makes them: a PKCS12 keystore for the broker,
 * PKCS12 truststores, and for mutual TLS a client key whose certificate's
 * subject becomes the principal the ACLs name.
 */
class SslTest {
    private static final String PASSWORD = "store-secret";

    private static void keytool(Path dir, String... args) throws Exception {
        List<String> command = new java.util.ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes());
        assertTrue(process.waitFor(60, TimeUnit.SECONDS), "keytool finished");
        assertEquals(0, process.exitValue(), "keytool " + String.join(" ", args) + ": " + output);
    }

    /** A key pair for `dname` in `<alias>.p12`, its certificate in `<alias>.pem`. */
    private static void keyPair(Path dir, String alias, String dname) throws Exception {
        keytool(dir, "-genkeypair", "-alias", alias, "-keyalg", "RSA", "-keysize", "2048", "-validity", "2",
                "-dname", dname, "-ext", "SAN=ip:127.0.0.1,dns:localhost", "-storetype", "PKCS12",
                "-keystore", alias + ".p12", "-storepass", PASSWORD);
        keytool(dir, "-exportcert", "-rfc", "-alias", alias, "-keystore", alias + ".p12", "-storepass", PASSWORD,
                "-file", alias + ".pem");
    }

    /** `<store>.p12` trusting the certificates of `aliases`. */
    private static void trust(Path dir, String store, String... aliases) throws Exception {
        for (String alias : aliases) {
            keytool(dir, "-importcert", "-noprompt", "-alias", alias, "-file", alias + ".pem", "-storetype",
                    "PKCS12", "-keystore", store + ".p12", "-storepass", PASSWORD);
        }
    }

    private static Map<String, Object> ssl(Path dir, String truststore, String keystore) {
        Map<String, Object> config = new HashMap<>();
        config.put("security.protocol", "SSL");
        config.put("ssl.truststore.type", "PKCS12");
        config.put("ssl.truststore.location", dir.resolve(truststore + ".p12").toString());
        config.put("ssl.truststore.password", PASSWORD);
        if (keystore != null) {
            config.put("ssl.keystore.type", "PKCS12");
            config.put("ssl.keystore.location", dir.resolve(keystore + ".p12").toString());
            config.put("ssl.keystore.password", PASSWORD);
        }
        return config;
    }

    /**
     * A broker whose SSL listener has a keytool PKCS12 keystore: the Java
     * admin creates a topic over TLS (hostname checked against the
     * certificate's SAN), the idempotent producer writes at 0..9 and the
     * consumer reads all ten back in order, every fetch copied through TLS.
     */
    @Test
    void theJavaClientProducesAndConsumesOverSsl() throws Exception {
        Path dir = Files.createTempDirectory("ssl-java");
        keyPair(dir, "broker", "CN=localhost");
        trust(dir, "client-trust", "broker");
        try (Ferrolog broker = Ferrolog.start("listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
                "ssl.keystore.type=PKCS12", "ssl.keystore.location=" + dir.resolve("broker.p12"),
                "ssl.keystore.password=" + PASSWORD)) {
            String address = broker.listenerAddress("SSL");
            Map<String, Object> config = ssl(dir, "client-trust", null);
            java.util.Properties adminProps = new java.util.Properties();
            adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, address);
            adminProps.putAll(config);
            try (Admin admin = Admin.create(adminProps)) {
                Clients.createTopic(admin, "secure-events", 1);
            }
            try (KafkaProducer<String, String> producer = Clients.producer(address, config)) {
                for (int i = 0; i < 10; i++) {
                    assertEquals(i,
                            producer.send(new ProducerRecord<>("secure-events", "k", "v-" + i)).get().offset());
                }
            }
            List<ConsumerRecord<String, String>> records =
                    Clients.readAll(address, Clients.partitionsOf("secure-events", 1), config);
            assertEquals(10, records.size());
            for (int i = 0; i < 10; i++) {
                assertEquals(i, records.get(i).offset());
                assertEquals("v-" + i, records.get(i).value());
            }
        }
    }

    /**
     * ssl.client.auth=required with a keytool truststore holding alice's
     * certificate: CN=alice maps to User:alice, whose ACL lets her write;
     * a client whose certificate the broker does not trust gets
     * SslAuthenticationException.
     */
    @Test
    void mutualTlsNamesThePrincipalTheAclsAuthorize() throws Exception {
        Path dir = Files.createTempDirectory("mtls-java");
        keyPair(dir, "broker", "CN=localhost");
        keyPair(dir, "alice", "CN=alice,OU=eng,O=ferrolog");
        keyPair(dir, "mallory", "CN=mallory,OU=eng,O=ferrolog");
        trust(dir, "client-trust", "broker");
        trust(dir, "broker-trust", "alice");
        try (Ferrolog broker = Ferrolog.start("listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
                "ssl.keystore.type=PKCS12", "ssl.keystore.location=" + dir.resolve("broker.p12"),
                "ssl.keystore.password=" + PASSWORD, "ssl.truststore.type=PKCS12",
                "ssl.truststore.location=" + dir.resolve("broker-trust.p12"), "ssl.truststore.password=" + PASSWORD,
                "ssl.client.auth=required", "ssl.principal.mapping.rules=RULE:^CN=([^,]*),.*$/$1/",
                "authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
                "super.users=User:ANONYMOUS")) {
            String address = broker.listenerAddress("SSL");
            try (Admin admin = Clients.admin(broker.bootstrap())) {
                Clients.createTopic(admin, "audited", 1);
                ResourcePattern topic = new ResourcePattern(ResourceType.TOPIC, "audited", PatternType.LITERAL);
                admin.createAcls(List.of(
                        new AclBinding(topic, new AccessControlEntry("User:alice", "*", AclOperation.WRITE,
                                AclPermissionType.ALLOW)))).all().get();
            }
            Map<String, Object> alice = ssl(dir, "client-trust", "alice");
            try (KafkaProducer<String, String> producer = Clients.producer(address, alice)) {
                for (int i = 0; i < 3; i++) {
                    assertEquals(i, producer.send(new ProducerRecord<>("audited", "k", "alice-" + i)).get().offset());
                }
            }
            Map<String, Object> mallory = ssl(dir, "client-trust", "mallory");
            mallory.put("max.block.ms", 15000);
            try (KafkaProducer<String, String> producer = Clients.producer(address, mallory)) {
                ExecutionException failed = assertThrows(ExecutionException.class,
                        () -> producer.send(new ProducerRecord<>("audited", "k", "v")).get());
                assertTrue(failed.getCause() instanceof SslAuthenticationException, failed.toString());
            }
        }
    }
}

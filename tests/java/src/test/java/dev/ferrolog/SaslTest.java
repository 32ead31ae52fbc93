package dev.ferrolog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.Test;

/**
 * The Java client (3.9 and 4.4) on a SASL_PLAINTEXT listener with
 * SASL/PLAIN, and the ACLs naming the user it authenticated as.
 */
class SaslTest {
    /** Whether a send to `topic` is refused for authorization. */
    private static boolean refused(KafkaProducer<String, String> producer, String topic) throws Exception {
        try {
            producer.send(new ProducerRecord<>(topic, "k", "v")).get();
            return false;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof TopicAuthorizationException) {
                return true;
            }
            throw e;
        }
    }

    private static Map<String, Object> sasl(String user, String password) {
        Map<String, Object> config = new HashMap<>();
        config.put("security.protocol", "SASL_PLAINTEXT");
        config.put("sasl.mechanism", "PLAIN");
        config.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required username=\""
                + user + "\" password=\"" + password + "\";");
        return config;
    }

    /**
     * The Java client on a SASL_PLAINTEXT listener with SASL/PLAIN: the
     * admin (a super user) creates a topic and alice's ACLs with the admin
     * API; alice's default (idempotent) producer writes at 0..9 and her
     * consumer reads them back; bob gets TopicAuthorizationException and
     * writes nothing; a wrong password gets SaslAuthenticationException.
     */
    @Test
    void theJavaClientAuthenticatesWithSaslPlainAndAclsNameItsUser() throws Exception {
        try (Ferrolog broker = Ferrolog.start("listeners=SASL_PLAINTEXT://127.0.0.1:0",
                "sasl.enabled.mechanisms=PLAIN",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain."
                        + "PlainLoginModule required user_admin=\"admin-secret\" user_alice=\"alice-secret\" "
                        + "user_bob=\"bob-secret\";",
                "authorizer.class.name=kafka.security.authorizer.AclAuthorizer", "super.users=User:admin")) {
            Properties adminProps = new Properties();
            adminProps.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
            adminProps.putAll(sasl("admin", "admin-secret"));
            try (Admin admin = Admin.create(adminProps)) {
                Clients.createTopic(admin, "payments", 1);
                ResourcePattern topic = new ResourcePattern(ResourceType.TOPIC, "payments", PatternType.LITERAL);
                admin.createAcls(List.of(
                        new AclBinding(topic, new AccessControlEntry("User:alice", "*", AclOperation.WRITE,
                                AclPermissionType.ALLOW)),
                        new AclBinding(topic, new AccessControlEntry("User:alice", "*", AclOperation.READ,
                                AclPermissionType.ALLOW)))).all().get();
                assertEquals(2, admin.describeAcls(org.apache.kafka.common.acl.AclBindingFilter.ANY).values().get()
                        .size());
            }
            Map<String, Object> alice = new HashMap<>(sasl("alice", "alice-secret"));
            try (KafkaProducer<String, String> producer = Clients.producer(broker.bootstrap(), alice)) {
                for (int i = 0; i < 10; i++) {
                    assertEquals(i, producer.send(new ProducerRecord<>("payments", "k", "alice-" + i)).get().offset());
                }
            }
            Map<String, Object> reader = new HashMap<>(alice);
            try (KafkaConsumer<String, String> consumer = Clients.consumer(broker.bootstrap(), reader)) {
                TopicPartition partition = new TopicPartition("payments", 0);
                consumer.assign(List.of(partition));
                consumer.seekToBeginning(List.of(partition));
                List<String> values = new java.util.ArrayList<>();
                Instant deadline = Instant.now().plus(Duration.ofSeconds(30));
                while (values.size() < 10 && Instant.now().isBefore(deadline)) {
                    for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                        values.add(record.value());
                    }
                }
                assertEquals(10, values.size(), values.toString());
                assertEquals("alice-9", values.get(9));
            }
            Map<String, Object> bob = new HashMap<>(sasl("bob", "bob-secret"));
            bob.put("enable.idempotence", false);
            bob.put("max.block.ms", 20000);
            try (KafkaProducer<String, String> producer = Clients.producer(broker.bootstrap(), bob)) {
                assertTrue(refused(producer, "payments"));
            }
            Map<String, Object> wrong = new HashMap<>(sasl("alice", "not-her-password"));
            wrong.put("max.block.ms", 20000);
            try (KafkaProducer<String, String> producer = Clients.producer(broker.bootstrap(), wrong)) {
                ExecutionException failed = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                        () -> producer.send(new ProducerRecord<>("payments", "k", "v")).get());
                assertTrue(failed.getCause() instanceof SaslAuthenticationException, failed.toString());
            }
        }
    }

    /**
     * Kafka 3.9's kafka-configs creates a SCRAM-SHA-512 user over the admin
     * API (AlterUserScramCredentials, as the PLAIN admin through
     * --command-config) and describes it; the Java client then logs in with
     * SCRAM-SHA-512 and writes; a wrong password gets
     * SaslAuthenticationException; after --delete-config the user is gone.
     */
    @Test
    void kafkaConfigsCreatesScramUsersTheJavaClientLogsInAs() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(KafkaTool.classpath() != null, "no -Dkafka.tools.classpath");
        try (Ferrolog broker = Ferrolog.start("listeners=SASL_PLAINTEXT://127.0.0.1:0",
                "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain."
                        + "PlainLoginModule required user_admin=\"admin-secret\";")) {
            java.nio.file.Path adminConfig = java.nio.file.Files.createTempFile("admin", ".properties");
            java.nio.file.Files.writeString(adminConfig, "security.protocol=SASL_PLAINTEXT\n"
                    + "sasl.mechanism=PLAIN\n"
                    + "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
                    + "username=\"admin\" password=\"admin-secret\";\n");
            KafkaTool.run(KafkaTool.CONFIGS, null, "--bootstrap-server", broker.bootstrap(), "--command-config",
                    adminConfig.toString(), "--alter", "--add-config",
                    "SCRAM-SHA-512=[iterations=8192,password=dana-secret]", "--entity-type", "users",
                    "--entity-name", "dana").ok();
            String described = KafkaTool.run(KafkaTool.CONFIGS, null, "--bootstrap-server", broker.bootstrap(),
                    "--command-config", adminConfig.toString(), "--describe", "--entity-type", "users",
                    "--entity-name", "dana").ok().stdout();
            assertTrue(described.contains("SCRAM-SHA-512=iterations=8192"), described);
            Map<String, Object> dana = new HashMap<>(sasl("dana", "dana-secret"));
            dana.put("sasl.mechanism", "SCRAM-SHA-512");
            dana.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required "
                    + "username=\"dana\" password=\"dana-secret\";");
            try (KafkaProducer<String, String> producer = Clients.producer(broker.bootstrap(), dana)) {
                assertEquals(0, producer.send(new ProducerRecord<>("scram-topic", "k", "v")).get().offset());
            }
            Map<String, Object> wrong = new HashMap<>(dana);
            wrong.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required "
                    + "username=\"dana\" password=\"guess\";");
            wrong.put("max.block.ms", 20000);
            try (KafkaProducer<String, String> producer = Clients.producer(broker.bootstrap(), wrong)) {
                ExecutionException failed = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                        () -> producer.send(new ProducerRecord<>("scram-topic", "k", "v")).get());
                assertTrue(failed.getCause() instanceof SaslAuthenticationException, failed.toString());
            }
            KafkaTool.run(KafkaTool.CONFIGS, null, "--bootstrap-server", broker.bootstrap(), "--command-config",
                    adminConfig.toString(), "--alter", "--delete-config", "SCRAM-SHA-512", "--entity-type", "users",
                    "--entity-name", "dana").ok();
            described = KafkaTool.run(KafkaTool.CONFIGS, null, "--bootstrap-server", broker.bootstrap(),
                    "--command-config", adminConfig.toString(), "--describe", "--entity-type", "users").ok().stdout();
            assertTrue(!described.contains("SCRAM-SHA-512"), described);
            java.nio.file.Files.deleteIfExists(adminConfig);
        }
    }

    /**
     * Kafka 3.9's kafka-configs --zookeeper writes a SCRAM-SHA-512 user
     * straight into ZooKeeper (/config/users/erin); a ZooKeeper-mode broker
     * with a SASL_PLAINTEXT listener beside its PLAINTEXT inter-broker one
     * logs the Java client in with it, and refuses a wrong password.
     */
    @Test
    void kafkaConfigsThroughZooKeeperCreatesScramUsersAClusterBrokerAccepts() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(KafkaTool.classpath() != null, "no -Dkafka.tools.classpath");
        try (ZooKeeper zk = ZooKeeper.start();
                Ferrolog broker = Ferrolog.start("zookeeper.connect=" + zk.connectString(), "broker.id=0",
                        "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                        "sasl.enabled.mechanisms=SCRAM-SHA-512")) {
            KafkaTool.run(KafkaTool.CONFIGS, null, "--zookeeper", zk.connectString(), "--alter", "--add-config",
                    "SCRAM-SHA-512=[iterations=4096,password=erin-secret]", "--entity-type", "users",
                    "--entity-name", "erin").ok();
            String sasl = broker.listenerAddress("SASL_PLAINTEXT");
            Map<String, Object> erin = new HashMap<>(sasl("erin", "erin-secret"));
            erin.put("sasl.mechanism", "SCRAM-SHA-512");
            erin.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required "
                    + "username=\"erin\" password=\"erin-secret\";");
            try (KafkaProducer<String, String> producer = Clients.producer(sasl, erin)) {
                assertEquals(0, producer.send(new ProducerRecord<>("zk-scram", "k", "v")).get().offset());
            }
            Map<String, Object> wrong = new HashMap<>(erin);
            wrong.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required "
                    + "username=\"erin\" password=\"guess\";");
            wrong.put("max.block.ms", 20000);
            try (KafkaProducer<String, String> producer = Clients.producer(sasl, wrong)) {
                ExecutionException failed = org.junit.jupiter.api.Assertions.assertThrows(ExecutionException.class,
                        () -> producer.send(new ProducerRecord<>("zk-scram", "k", "v")).get());
                assertTrue(failed.getCause() instanceof SaslAuthenticationException, failed.toString());
            }
        }
    }
}

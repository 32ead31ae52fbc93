package dev.ferrolog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * ferrolog's own tools (`ferrolog topics`, `ferrolog cluster`) against
 * Apache Kafka 3.9 itself: they speak only the Kafka protocol, so what they
 * create, grow and delete on a real Kafka broker is checked with the Java
 * Admin client, and their failures carry Kafka's error and exit code 1.
 */
class CliTest {
    @BeforeAll
    static void needsTheTools() {
        Assumptions.assumeTrue(KafkaTool.classpath() != null, "no -Dkafka.tools.classpath");
    }

    /** The exit code, stdout and stderr of `ferrolog args...`. */
    private record Run(int code, String out, String err) {}

    private static Run ferrolog(String... args) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(System.getProperty("ferrolog.bin"));
        command.addAll(List.of(args));
        Path out = Files.createTempFile("cli-out", ".txt");
        Path err = Files.createTempFile("cli-err", ".txt");
        Process process = new ProcessBuilder(command)
                .redirectOutput(out.toFile())
                .redirectError(err.toFile())
                .start();
        if (!process.waitFor(120, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("ferrolog " + String.join(" ", args) + " did not finish");
        }
        Run run = new Run(process.exitValue(), Files.readString(out), Files.readString(err));
        Files.deleteIfExists(out);
        Files.deleteIfExists(err);
        return run;
    }

    @Test
    void topicsAndClusterWorkAgainstKafka39() throws Exception {
        Path dir = Files.createTempDirectory("kafka39-cli");
        int port = Clients.freePort();
        String topic = "made-by-ferrolog";
        try (ZooKeeper zk = ZooKeeper.start()) {
            Process kafka = KafkaBroker.start(zk, "/cli", dir, port);
            try {
                KafkaBroker.awaitStarted(dir, kafka);
                String bootstrap = "127.0.0.1:" + port;
                Run created = ferrolog("topics", "create", "--topic", topic, "--partitions", "3",
                        "--replication-factor", "1", "--config", "retention.ms=3600000",
                        "--bootstrap-server", bootstrap);
                assertEquals(0, created.code(), created.err());
                try (Admin admin = Clients.admin(bootstrap)) {
                    assertEquals(3, admin.describeTopics(List.of(topic)).allTopicNames().get()
                            .get(topic).partitions().size());
                    Config config = admin.describeConfigs(List.of(
                            new ConfigResource(ConfigResource.Type.TOPIC, topic))).all().get()
                            .values().iterator().next();
                    assertEquals("3600000", config.get("retention.ms").value());
                }
                Run again = ferrolog("topics", "create", "--topic", topic, "--bootstrap-server", bootstrap);
                assertEquals(1, again.code(), again.err());
                assertTrue(again.err().contains("TopicAlreadyExists (36)"), again.err());

                Run listed = ferrolog("topics", "list", "--json", "--bootstrap-server", bootstrap);
                assertEquals(0, listed.code(), listed.err());
                assertTrue(listed.out().contains("\"" + topic + "\""), listed.out());

                Run grown = ferrolog("topics", "alter", "--topic", topic, "--partitions", "5",
                        "--bootstrap-server", bootstrap);
                assertEquals(0, grown.code(), grown.err());
                Run described = ferrolog("topics", "describe", "--topic", topic, "--json",
                        "--bootstrap-server", bootstrap);
                assertEquals(0, described.code(), described.err());
                assertTrue(described.out().contains("\"partition\": 4"), described.out());

                Run cluster = ferrolog("cluster", "--json", "--bootstrap-server", bootstrap);
                assertEquals(0, cluster.code(), cluster.err());
                assertTrue(cluster.out().contains("\"port\": " + port), cluster.out());
                assertTrue(cluster.out().contains("\"controller\": 0"), cluster.out());

                // A group with committed offsets and no members: Kafka's own
                // coordinator answers, and the lag comes from its log ends.
                try (KafkaProducer<String, String> producer = Clients.producer(bootstrap, Map.of())) {
                    for (int i = 0; i < 5; i++) {
                        producer.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i)).get();
                    }
                }
                try (Admin admin = Clients.admin(bootstrap)) {
                    admin.alterConsumerGroupOffsets("cli-group", Map.of(
                            new TopicPartition(topic, 0), new OffsetAndMetadata(2))).all().get();
                }
                Run groups = ferrolog("groups", "list", "--json", "--bootstrap-server", bootstrap);
                assertEquals(0, groups.code(), groups.err());
                assertTrue(groups.out().contains("\"cli-group\""), groups.out());
                Run group = ferrolog("groups", "describe", "--group", "cli-group", "--json",
                        "--bootstrap-server", bootstrap);
                assertEquals(0, group.code(), group.err());
                String compact = group.out().replaceAll("\\s", "");
                assertTrue(compact.contains("\"current_offset\":2,\"log_end_offset\":5,\"lag\":3"),
                        group.out());

                Run deleted = ferrolog("topics", "delete", "--topic", topic, "--bootstrap-server", bootstrap);
                assertEquals(0, deleted.code(), deleted.err());
                try (Admin admin = Clients.admin(bootstrap)) {
                    Instant deadline = Instant.now().plus(Duration.ofSeconds(60));
                    while (admin.listTopics().names().get().contains(topic)) {
                        assertTrue(Instant.now().isBefore(deadline), "Kafka never dropped " + topic);
                        Thread.sleep(200);
                    }
                }
                Run gone = ferrolog("topics", "describe", "--topic", topic, "--bootstrap-server", bootstrap);
                assertEquals(1, gone.code(), gone.err());
            } finally {
                kafka.destroy();
                kafka.waitFor(60, TimeUnit.SECONDS);
            }
        }
    }
}

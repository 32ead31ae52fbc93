package dev.ferrolog;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A broker's data written by Kafka 3.9 is taken over by ferrolog: Kafka's
 * broker 0 writes a topic and stops; ferrolog starts as broker 0 on the
 * same ZooKeeper with Kafka's log directory, loads Kafka's segments,
 * indexes, checkpoints and producer snapshots, and serves every record at
 * the offset Kafka gave it, and the offsets a group committed in Kafka's
 * __consumer_offsets.
 */
class KafkaDataTest {
    private static final String GROUP = "migrated-group";

    @BeforeAll
    static void needsTheTools() {
        Assumptions.assumeTrue(KafkaTool.classpath() != null, "no -Dkafka.tools.classpath");
    }

    @Test
    void ferrologServesALogDirectoryKafkaWrote() throws Exception {
        Path kafkaDir = Files.createTempDirectory("kafka39-data");
        int port = Clients.freePort();
        String topic = "migrated";
        int partitions = 3;
        Map<TopicPartition, Map<Long, String>> written = new HashMap<>();
        try (ZooKeeper zk = ZooKeeper.start()) {
            Process kafka = KafkaBroker.start(zk, "/migrate", kafkaDir, port);
            try {
                KafkaBroker.awaitStarted(kafkaDir, kafka);
                String bootstrap = "127.0.0.1:" + port;
                try (Admin admin = Clients.admin(bootstrap)) {
                    admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
                }
                // Idempotent and compressed, in several batches per partition.
                try (KafkaProducer<String, String> producer = Clients.producer(bootstrap,
                        Map.of("compression.type", "lz4", "linger.ms", "0", "batch.size", "4096"))) {
                    for (int i = 0; i < 3000; i++) {
                        String value = "kafka-wrote-" + i;
                        var metadata = producer.send(new ProducerRecord<>(topic, i % partitions, "k" + i, value))
                                .get();
                        written.computeIfAbsent(new TopicPartition(topic, metadata.partition()),
                                k -> new HashMap<>()).put(metadata.offset(), value);
                    }
                }
                // A group's committed offsets, in Kafka's __consumer_offsets.
                try (Admin admin = Clients.admin(bootstrap)) {
                    admin.alterConsumerGroupOffsets(GROUP, Map.of(
                            new TopicPartition(topic, 0), new OffsetAndMetadata(7, "seven"),
                            new TopicPartition(topic, 2), new OffsetAndMetadata(11))).all().get();
                }
            } finally {
                // A clean shutdown, as an operator stops a broker to replace it.
                kafka.destroy();
                kafka.waitFor(60, TimeUnit.SECONDS);
            }
            Path logs = kafkaDir.resolve("logs");
            try (Ferrolog ferrolog = Ferrolog.startIn(logs, "127.0.0.1:0",
                    "zookeeper.connect=" + zk.connectString() + "/migrate", "broker.id=0")) {
                List<ConsumerRecord<String, String>> read = Clients.readAll(ferrolog.bootstrap(),
                        Clients.partitionsOf(topic, partitions), Map.of());
                assertEquals(3000, read.size(), "every record Kafka wrote");
                for (ConsumerRecord<String, String> record : read) {
                    TopicPartition tp = new TopicPartition(record.topic(), record.partition());
                    assertEquals(written.get(tp).get(record.offset()), record.value(),
                            tp + "@" + record.offset());
                }
                try (Admin admin = Clients.admin(ferrolog.bootstrap())) {
                    Map<TopicPartition, OffsetAndMetadata> committed =
                            admin.listConsumerGroupOffsets(GROUP).partitionsToOffsetAndMetadata().get();
                    assertEquals(7, committed.get(new TopicPartition(topic, 0)).offset());
                    assertEquals("seven", committed.get(new TopicPartition(topic, 0)).metadata());
                    assertEquals(11, committed.get(new TopicPartition(topic, 2)).offset());
                    assertEquals(2, committed.size(), "the group's offsets Kafka stored: " + committed);
                }
                // And it goes on writing after Kafka's offsets.
                try (KafkaProducer<String, String> producer = Clients.producer(ferrolog.bootstrap(), Map.of())) {
                    var next = producer.send(new ProducerRecord<>(topic, 0, "k", "ferrolog-wrote")).get();
                    assertEquals(written.get(new TopicPartition(topic, 0)).size(), next.offset());
                }
            }
        } finally {
            Clients.deleteTree(kafkaDir);
        }
    }
}

package dev.ferrolog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A broker's data changes hands between Kafka 3.9 and ferrolog, both ways.
 * Kafka's broker 0 writes a topic and stops; ferrolog starts as broker 0 on
 * the same ZooKeeper with Kafka's log directory, loads Kafka's segments,
 * indexes, checkpoints and producer snapshots, and serves every record at
 * the offset Kafka gave it, and the offsets a group committed in Kafka's
 * __consumer_offsets. And the other way: Kafka loads a log directory
 * ferrolog wrote (segments, indexes, producer snapshots, the broker's
 * checkpoints and each partition's leader-epoch-checkpoint) and serves it.
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

    @Test
    void kafkaServesALogDirectoryFerrologWrote() throws Exception {
        Path dir = Files.createTempDirectory("ferrolog-data");
        Path logs = dir.resolve("logs");
        String topic = "handed-over";
        int partitions = 3;
        Map<TopicPartition, Map<Long, String>> written = new HashMap<>();
        try (ZooKeeper zk = ZooKeeper.start()) {
            String zookeeper = "zookeeper.connect=" + zk.connectString() + "/reverse";
            // Two ferrolog brokers, RF=2 with broker 0 preferred, and three
            // leader epochs: 0 on broker 0, 1 on broker 1 while broker 0 is
            // stopped, 2 on broker 0 again after a preferred election.
            Ferrolog zero = Ferrolog.startIn(logs, "127.0.0.1:0", zookeeper, "broker.id=0");
            Ferrolog one = Ferrolog.startIn(dir.resolve("logs-1"), "127.0.0.1:0", zookeeper, "broker.id=1");
            try {
                try (Admin admin = Clients.admin(one.bootstrap())) {
                    Map<Integer, List<Integer>> assignment = new HashMap<>();
                    for (int p = 0; p < partitions; p++) {
                        assignment.put(p, List.of(0, 1));
                    }
                    admin.createTopics(List.of(new NewTopic(topic, assignment))).all().get();
                    produce(one.bootstrap(), topic, partitions, "term-0", written);
                    zero.stop();
                    produce(one.bootstrap(), topic, partitions, "term-1", written);
                    zero = Ferrolog.startIn(logs, "127.0.0.1:0", zookeeper, "broker.id=0");
                    awaitIsr(admin, topic, 2);
                    admin.electLeaders(ElectionType.PREFERRED, null).partitions().get();
                    produce(one.bootstrap(), topic, partitions, "term-2", written);
                }
            } finally {
                // Broker 1 first, so that broker 0 stays the leader Kafka takes over.
                one.close();
                zero.close();
            }
            Path partitionZero = logs.resolve(topic + "-0");
            List<String> ferrologEpochs = epochEntries(partitionZero);
            assertTrue(ferrologEpochs.size() >= 3, "ferrolog's three epochs: " + ferrologEpochs);
            assertEquals("0 0", ferrologEpochs.get(0));

            int port = Clients.freePort();
            Process kafka = KafkaBroker.start(zk, "/reverse", dir, port);
            try {
                KafkaBroker.awaitStarted(dir, kafka);
                String bootstrap = "127.0.0.1:" + port;
                List<ConsumerRecord<String, String>> read = Clients.readAll(bootstrap,
                        Clients.partitionsOf(topic, partitions), Map.of());
                assertEquals(3 * 900, read.size(), "every record ferrolog wrote");
                for (ConsumerRecord<String, String> record : read) {
                    TopicPartition tp = new TopicPartition(record.topic(), record.partition());
                    assertEquals(written.get(tp).get(record.offset()), record.value(),
                            tp + "@" + record.offset());
                }
                long next;
                try (KafkaProducer<String, String> producer = Clients.producer(bootstrap, Map.of())) {
                    next = producer.send(new ProducerRecord<>(topic, 0, "k", "kafka-wrote")).get().offset();
                }
                assertEquals(written.get(new TopicPartition(topic, 0)).size(), next, "Kafka appends after ferrolog");
                // Kafka kept ferrolog's epochs; any of its own begins where
                // ferrolog's log ended.
                List<String> kafkaEpochs = epochEntries(partitionZero);
                assertEquals(ferrologEpochs, kafkaEpochs.subList(0, Math.min(ferrologEpochs.size(),
                        kafkaEpochs.size())), "Kafka's leader-epoch-checkpoint: " + kafkaEpochs);
                for (String own : kafkaEpochs.subList(ferrologEpochs.size(), kafkaEpochs.size())) {
                    assertTrue(own.endsWith(" " + next), "Kafka's epoch " + own + " starts at " + next);
                }
                // Kafka read every file without a complaint about any of them.
                List<String> complaints = new ArrayList<>();
                for (String line : Files.readAllLines(dir.resolve("kafka.log"))) {
                    if ((line.contains("WARN") || line.contains("ERROR") || line.contains("Corrupt")
                            || line.contains("Error")) && (line.contains(topic) || line.contains(logs.toString()))) {
                        complaints.add(line);
                    }
                }
                assertEquals(List.of(), complaints, "Kafka's complaints about ferrolog's files");
            } finally {
                kafka.destroy();
                kafka.waitFor(60, TimeUnit.SECONDS);
            }
        } finally {
            Clients.deleteTree(dir);
        }
    }

    /** 900 records, 300 per partition, each acknowledged and remembered at its offset. */
    private static void produce(String bootstrap, String topic, int partitions, String term,
            Map<TopicPartition, Map<Long, String>> written) throws Exception {
        try (KafkaProducer<String, String> producer = Clients.producer(bootstrap,
                Map.of("compression.type", "lz4", "linger.ms", "0", "batch.size", "4096"))) {
            for (int i = 0; i < 900; i++) {
                String value = "ferrolog-wrote-" + term + "-" + i;
                var metadata = producer.send(new ProducerRecord<>(topic, i % partitions, "k" + i, value)).get();
                written.computeIfAbsent(new TopicPartition(topic, metadata.partition()),
                        k -> new HashMap<>()).put(metadata.offset(), value);
            }
        }
    }

    /** Waits (60 s at most) until every partition of the topic has `size` in-sync replicas. */
    private static void awaitIsr(Admin admin, String topic, int size) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            var description = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            if (description.partitions().stream().allMatch(p -> p.isr().size() == size)) {
                return;
            }
            assertTrue(System.nanoTime() < deadline, "ISR of " + size + ": " + description);
            Thread.sleep(200);
        }
    }

    /** The "epoch startOffset" lines of a partition's leader-epoch-checkpoint (version 0). */
    private static List<String> epochEntries(Path partitionDir) throws Exception {
        List<String> lines = Files.readAllLines(partitionDir.resolve("leader-epoch-checkpoint"));
        assertEquals("0", lines.get(0), "checkpoint version");
        int count = Integer.parseInt(lines.get(1));
        assertEquals(count, lines.size() - 2, "entry count line");
        return lines.subList(2, lines.size());
    }
}

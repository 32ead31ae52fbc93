package dev.ferrolog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.junit.jupiter.api.Test;

/** The Java client against a 3-broker ferrolog cluster on a real ZooKeeper. */
class ClusterTest {
    private static final int BROKERS = 3;

    private static List<Ferrolog> startCluster(ZooKeeper zk, List<Path> dirs) throws Exception {
        List<Ferrolog> brokers = new ArrayList<>();
        for (int id = 0; id < BROKERS; id++) {
            Path dir = Files.createTempDirectory("ferrolog-cluster-" + id);
            dirs.add(dir);
            brokers.add(Ferrolog.startIn(dir, "127.0.0.1:0",
                    "zookeeper.connect=" + zk.connectString() + "/cluster",
                    "broker.id=" + id,
                    "zookeeper.session.timeout.ms=4000",
                    "group.initial.rebalance.delay.ms=0"));
        }
        return brokers;
    }

    private static String bootstrap(List<Ferrolog> brokers) {
        return brokers.stream().map(Ferrolog::bootstrap).collect(Collectors.joining(","));
    }

    private static void waitForLeaders(Admin admin, String topic, int partitions) throws Exception {
        Instant deadline = Instant.now().plus(Clients.WAIT);
        while (Instant.now().isBefore(deadline)) {
            try {
                TopicDescription described = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
                if (described.partitions().size() == partitions && described.partitions().stream()
                        .allMatch(p -> p.leader() != null && p.isr().size() == BROKERS)) {
                    return;
                }
            } catch (Exception notYet) {
                // Metadata not propagated yet.
            }
            Thread.sleep(100);
        }
        throw new AssertionError(topic + " has no leader and full ISR for every partition");
    }

    /**
     * The default Java producer (idempotent, acks=all, 5 in flight) writes
     * while the leader of partition 0 is SIGKILLed and later restarted:
     * every record is acknowledged once, in order, and read back exactly at
     * its acknowledged offset, with no duplicate.
     */
    @Test
    void theDefaultProducerLosesNothingAndDuplicatesNothingWhenALeaderIsKilled() throws Exception {
        List<Path> dirs = new ArrayList<>();
        try (ZooKeeper zk = ZooKeeper.start()) {
            List<Ferrolog> brokers = startCluster(zk, dirs);
            try {
                String topic = Clients.unique("cluster-kill");
                int partitions = 6;
                int count = 30_000;
                try (Admin admin = Clients.admin(bootstrap(brokers))) {
                    admin.createTopics(List.of(new NewTopic(topic, partitions, (short) BROKERS)
                            .configs(Map.of("min.insync.replicas", "2")))).all().get();
                    waitForLeaders(admin, topic, partitions);
                    TopicPartitionInfo first = admin.describeTopics(List.of(topic)).allTopicNames().get()
                            .get(topic).partitions().get(0);
                    int victim = first.leader().id();
                    Acknowledgements acks = new Acknowledgements();
                    try (KafkaProducer<String, String> producer = Clients.producer(bootstrap(brokers), Map.of(
                            ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "120000",
                            ProducerConfig.LINGER_MS_CONFIG, "5"))) {
                        for (int i = 0; i < count; i++) {
                            String value = "record-" + i;
                            producer.send(new ProducerRecord<>(topic, "key-" + i, value), acks.callback(i, value));
                            if (i == count / 3) {
                                // Mid-run: what has been sent is partly acknowledged.
                                producer.flush();
                                brokers.get(victim).kill();
                            }
                            if (i == 2 * count / 3) {
                                brokers.get(victim).restart();
                            }
                            if (i % 100 == 0) {
                                Thread.sleep(2); // spread the run over the kill
                            }
                        }
                        producer.flush();
                    }
                    acks.verifyAcknowledged(count);
                    waitForLeaders(admin, topic, partitions);
                    TopicPartitionInfo after = admin.describeTopics(List.of(topic)).allTopicNames().get()
                            .get(topic).partitions().get(0);
                    assertTrue(after.leader() != null, "partition 0 has a leader again");
                    acks.verifyRead(Clients.readAll(bootstrap(brokers),
                            Clients.partitionsOf(topic, partitions), Map.of()));
                    assertNotEquals(-1, victim);
                }
            } finally {
                for (Ferrolog broker : brokers) {
                    broker.close();
                }
            }
        } finally {
            dirs.forEach(Clients::deleteTree);
        }
    }
}

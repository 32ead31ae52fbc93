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
import org.apache.kafka.clients.admin.DescribeClusterOptions;
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
        waitForLeaders(admin, topic, partitions, BROKERS);
    }

    private static void waitForLeaders(Admin admin, String topic, int partitions, int isr) throws Exception {
        Instant deadline = Instant.now().plus(Clients.WAIT);
        while (Instant.now().isBefore(deadline)) {
            try {
                TopicDescription described = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
                if (described.partitions().size() == partitions && described.partitions().stream()
                        .allMatch(p -> p.leader() != null && p.isr().size() == isr)) {
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

    /** The controller as an admin client bootstrapped on `broker` alone sees it; -1 on no answer. */
    private static int controllerSeenBy(Ferrolog broker) {
        try (Admin admin = Clients.admin(broker.bootstrap())) {
            var controller = admin.describeCluster(new DescribeClusterOptions().timeoutMs(3000))
                    .controller().get();
            return controller == null ? -1 : controller.id();
        } catch (Exception noAnswer) {
            return -1;
        }
    }

    /**
     * An admin client whose metadata names an old controller creates a
     * topic: the old controller (SIGSTOPped past its ZooKeeper session,
     * then resumed as a standby) answers NOT_CONTROLLER, as Kafka does,
     * and the Java client finds the new controller and asks it.
     */
    @Test
    void anAdminClientWithAStaleControllerCreatesTopicsAtTheNewOne() throws Exception {
        List<Path> dirs = new ArrayList<>();
        try (ZooKeeper zk = ZooKeeper.start()) {
            List<Ferrolog> brokers = startCluster(zk, dirs);
            try (Admin admin = Clients.admin(bootstrap(brokers))) {
                int old = admin.describeCluster().controller().get().id();
                Ferrolog stale = brokers.get(old);
                Ferrolog other = brokers.get((old + 1) % BROKERS);
                stale.pause();
                int next = -1;
                Instant deadline = Instant.now().plus(Clients.WAIT);
                while (next == -1 || next == old) {
                    assertTrue(Instant.now().isBefore(deadline), "no broker took over from controller " + old);
                    Thread.sleep(200);
                    next = controllerSeenBy(other);
                }
                stale.resume();
                while (controllerSeenBy(stale) != next) {
                    assertTrue(Instant.now().isBefore(deadline), "broker " + old + " never named controller " + next);
                    Thread.sleep(200);
                }
                String topic = Clients.unique("stale-controller");
                admin.createTopics(List.of(new NewTopic(topic, 2, (short) 2))).all().get();
                waitForLeaders(admin, topic, 2, 2);
                assertNotEquals(old, next);
                // Whether the client asked the old controller first is its own
                // choice (a metadata refresh in between skips it); print it.
                System.out.println("stale controller " + old + " refused a CreateTopics: "
                        + stale.logged("refused: this broker is not the controller"));
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

package dev.ferrolog;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Kafka 3.9's zookeeper-shell reads ferrolog's znodes as Kafka writes
 * them: a real Kafka 3.9 broker and a ferrolog broker on one ZooKeeper
 * (each under its own chroot) get the same topic, and every znode Kafka
 * writes for it is compared field by field with ferrolog's.
 */
class ZnodeLayoutTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @BeforeAll
    static void needsTheTools() {
        Assumptions.assumeTrue(KafkaTool.classpath() != null, "no -Dkafka.tools.classpath");
    }

    /** A znode's data as zookeeper-shell prints it (its JSON line). */
    private static JsonNode get(ZooKeeper zk, String path) throws Exception {
        KafkaTool.Outcome out = KafkaTool.run("org.apache.zookeeper.ZooKeeperMainWithTlsSupportForKafka", null,
                "-server", zk.connectString(), "get", path).ok();
        String line = out.stdout().lines().filter(l -> l.startsWith("{") || l.matches("-?\\d+"))
                .reduce((a, b) -> b).orElseThrow(() -> new AssertionError(path + ": " + out.stdout()));
        return JSON.readTree(line);
    }

    private static TreeSet<String> fields(JsonNode node) {
        TreeSet<String> names = new TreeSet<>();
        Iterator<String> it = node.fieldNames();
        it.forEachRemaining(names::add);
        return names;
    }

    /** Same fields; the same value in each of `same`. */
    private static void compare(String path, JsonNode kafka, JsonNode ferrolog, String... same) {
        assertEquals(fields(kafka), fields(ferrolog), path + ": the fields. Kafka " + kafka + ", ferrolog " + ferrolog);
        for (String field : same) {
            assertEquals(kafka.get(field), ferrolog.get(field), path + " ." + field + ": Kafka " + kafka
                    + ", ferrolog " + ferrolog);
        }
    }

    @Test
    void ferrologsZnodesHaveKafkasFieldsAndValues() throws Exception {
        Path kafkaDir = Files.createTempDirectory("kafka39");
        int kafkaPort = Clients.freePort();
        try (ZooKeeper zk = ZooKeeper.start()) {
            // The chroots must exist before the brokers connect.
            Process kafka = KafkaBroker.start(zk, "/kafka", kafkaDir, kafkaPort);
            Path ferrologDir = Files.createTempDirectory("ferrolog-znodes");
            try (Ferrolog ferrolog = Ferrolog.startIn(ferrologDir, "127.0.0.1:0",
                    "zookeeper.connect=" + zk.connectString() + "/ferrolog", "broker.id=0")) {
                KafkaBroker.awaitStarted(kafkaDir, kafka);
                for (String bootstrap : List.of("127.0.0.1:" + kafkaPort, ferrolog.bootstrap())) {
                    try (Admin admin = Clients.admin(bootstrap)) {
                        admin.createTopics(List.of(new NewTopic("layout", 2, (short) 1)
                                .configs(Map.of("retention.ms", "3600000")))).all().get();
                    }
                }
                // An idempotent producer on each claims a producer id block.
                for (String bootstrap : List.of("127.0.0.1:" + kafkaPort, ferrolog.bootstrap())) {
                    try (var producer = Clients.producer(bootstrap, Map.of())) {
                        producer.send(new org.apache.kafka.clients.producer.ProducerRecord<>("layout", "k", "v"))
                                .get();
                    }
                }
                JsonNode k = get(zk, "/kafka/brokers/ids/0");
                JsonNode f = get(zk, "/ferrolog/brokers/ids/0");
                compare("/brokers/ids/0", k, f, "version", "jmx_port", "listener_security_protocol_map", "rack");
                compare("/brokers/topics/layout", get(zk, "/kafka/brokers/topics/layout"),
                        get(zk, "/ferrolog/brokers/topics/layout"), "version", "partitions", "adding_replicas",
                        "removing_replicas");
                for (int p = 0; p < 2; p++) {
                    String state = "/brokers/topics/layout/partitions/" + p + "/state";
                    compare(state, get(zk, "/kafka" + state), get(zk, "/ferrolog" + state),
                            "version", "leader", "leader_epoch", "isr", "controller_epoch");
                }
                compare("/config/topics/layout", get(zk, "/kafka/config/topics/layout"),
                        get(zk, "/ferrolog/config/topics/layout"), "version", "config");
                compare("/controller", get(zk, "/kafka/controller"), get(zk, "/ferrolog/controller"),
                        "version", "brokerid");
                assertEquals(get(zk, "/kafka/controller_epoch"), get(zk, "/ferrolog/controller_epoch"));
                compare("/cluster/id", get(zk, "/kafka/cluster/id"), get(zk, "/ferrolog/cluster/id"), "version");
                compare("/latest_producer_id_block", get(zk, "/kafka/latest_producer_id_block"),
                        get(zk, "/ferrolog/latest_producer_id_block"), "version");
            } finally {
                kafka.destroy();
                if (!kafka.waitFor(30, TimeUnit.SECONDS)) {
                    kafka.destroyForcibly();
                }
                Clients.deleteTree(ferrologDir);
            }
        } finally {
            Clients.deleteTree(kafkaDir);
        }
    }
}

package dev.ferrolog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Kafka 3.9's kafka-configs sets client quotas on ferrolog both ways it
 * can: over the admin API (--bootstrap-server: AlterClientQuotas and
 * DescribeClientQuotas, for client ids, users, user+client-id and the
 * defaults); a quota set through one broker reaches the other through
 * ZooKeeper (/config/clients and a change notification) and is applied
 * there: the Java producer is throttled (its produce-throttle-time-max
 * metric) and every record is still acknowledged, once, in order.
 */
class QuotaTest {
    @BeforeAll
    static void needsTheTools() {
        Assumptions.assumeTrue(KafkaTool.classpath() != null, "no -Dkafka.tools.classpath");
    }

    private static String configs(String... args) throws Exception {
        return KafkaTool.run(KafkaTool.CONFIGS, null, args).ok().stdout();
    }

    private static double metric(KafkaProducer<?, ?> producer, String name) {
        for (Map.Entry<MetricName, ? extends Metric> m : producer.metrics().entrySet()) {
            if (m.getKey().name().equals(name) && m.getKey().group().equals("producer-metrics")) {
                Object value = m.getValue().metricValue();
                return value instanceof Double ? (Double) value : 0.0;
            }
        }
        return 0.0;
    }

    @Test
    void kafkaConfigsSetsQuotasOverTheAdminApiAndZooKeeperAndTheBrokerThrottles() throws Exception {
        try (ZooKeeper zk = ZooKeeper.start();
                Ferrolog broker = Ferrolog.start("zookeeper.connect=" + zk.connectString(), "broker.id=0",
                        "quota.window.num=3", "quota.window.size.seconds=1");
                Ferrolog other = Ferrolog.start("zookeeper.connect=" + zk.connectString(), "broker.id=1",
                        "quota.window.num=3", "quota.window.size.seconds=1")) {
            String bootstrap = broker.bootstrap();
            configs("--bootstrap-server", bootstrap, "--alter", "--add-config",
                    "producer_byte_rate=1024,consumer_byte_rate=2048", "--entity-type", "clients",
                    "--entity-name", "app");
            String app = configs("--bootstrap-server", bootstrap, "--describe", "--entity-type", "clients",
                    "--entity-name", "app");
            assertTrue(app.contains("producer_byte_rate=1024") && app.contains("consumer_byte_rate=2048"), app);
            configs("--bootstrap-server", bootstrap, "--alter", "--add-config", "request_percentage=50",
                    "--entity-type", "users", "--entity-default");
            configs("--bootstrap-server", bootstrap, "--alter", "--add-config", "producer_byte_rate=4096",
                    "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients",
                    "--entity-name", "app");
            String users = configs("--bootstrap-server", bootstrap, "--describe", "--entity-type", "users");
            assertTrue(users.contains("request_percentage=50"), users);
            String aliceApp = configs("--bootstrap-server", bootstrap, "--describe", "--entity-type", "users",
                    "--entity-name", "alice", "--entity-type", "clients", "--entity-name", "app");
            assertTrue(aliceApp.contains("producer_byte_rate=4096"), aliceApp);
            configs("--bootstrap-server", bootstrap, "--alter", "--delete-config", "producer_byte_rate",
                    "--entity-type", "clients", "--entity-name", "app");
            app = configs("--bootstrap-server", bootstrap, "--describe", "--entity-type", "clients",
                    "--entity-name", "app");
            assertTrue(!app.contains("producer_byte_rate") && app.contains("consumer_byte_rate=2048"), app);

            // Set through broker 0, applied by broker 1, which leads the
            // partition: the quota travels through ZooKeeper's
            // /config/clients and /config/changes. (Kafka 3.9's
            // kafka-configs --zookeeper takes only SCRAM credentials.)
            configs("--bootstrap-server", bootstrap, "--alter", "--add-config", "producer_byte_rate=50000",
                    "--entity-type", "clients", "--entity-name", "zk-throttled");
            String fromOther = configs("--bootstrap-server", other.bootstrap(), "--describe", "--entity-type",
                    "clients", "--entity-name", "zk-throttled");
            assertTrue(fromOther.contains("producer_byte_rate=50000"), fromOther);
            try (Admin admin = Clients.admin(bootstrap)) {
                admin.createTopics(List.of(new org.apache.kafka.clients.admin.NewTopic("quota-java",
                        Map.of(0, List.of(1))))).all().get();
            }
            String value = "q".repeat(10_000);
            try (KafkaProducer<String, String> producer = Clients.producer(other.bootstrap(),
                    Map.of("client.id", "zk-throttled", "delivery.timeout.ms", 120000, "linger.ms", 5))) {
                List<Long> offsets = new ArrayList<>();
                Instant deadline = Instant.now().plus(Duration.ofSeconds(60));
                // 300 kB at a time against 50 kB/s (100 kB allowed at once)
                // until the producer has been told to wait (the metric is NaN
                // before any throttle).
                while (!(metric(producer, "produce-throttle-time-max") > 0) && Instant.now().isBefore(deadline)) {
                    List<Future<RecordMetadata>> sends = new ArrayList<>();
                    for (int i = 0; i < 30; i++) {
                        sends.add(producer.send(new ProducerRecord<>("quota-java", "k", value)));
                    }
                    for (Future<RecordMetadata> send : sends) {
                        offsets.add(send.get().offset());
                    }
                }
                assertTrue(metric(producer, "produce-throttle-time-max") > 0,
                        "the Java producer was never throttled in 60 s");
                for (int i = 0; i < offsets.size(); i++) {
                    assertEquals((long) i, offsets.get(i), "acknowledged once, in order");
                }
            }
        }
    }
}

package dev.ferrolog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Kafka's dynamic broker configs (KIP-226) through the AdminClient and
 * Kafka 3.9's kafka-configs: per broker and cluster default, Kafka's
 * sources and synonyms, applied without a restart. A class of its own: it
 * changes its broker's defaults.
 */
class DynamicBrokerConfigTest extends OneBroker {
    private static final ConfigResource BROKER = new ConfigResource(ConfigResource.Type.BROKER, "0");
    private static final ConfigResource DEFAULT = new ConfigResource(ConfigResource.Type.BROKER, "");

    private static Map<String, ConfigEntry> describe(ConfigResource resource) throws Exception {
        Config config = admin.describeConfigs(List.of(resource), new DescribeConfigsOptions().includeSynonyms(true))
                .all().get().get(resource);
        return config.entries().stream().collect(Collectors.toMap(ConfigEntry::name, e -> e));
    }

    private static void alter(ConfigResource resource, AlterConfigOp... ops) throws Exception {
        admin.incrementalAlterConfigs(Map.of(resource, List.of(ops))).all().get();
    }

    private static AlterConfigOp set(String key, String value) {
        return new AlterConfigOp(new ConfigEntry(key, value), AlterConfigOp.OpType.SET);
    }

    private static AlterConfigOp delete(String key) {
        return new AlterConfigOp(new ConfigEntry(key, ""), AlterConfigOp.OpType.DELETE);
    }

    private static void send(String topic, int size) throws Exception {
        try (KafkaProducer<String, String> producer = Clients.producer(broker.bootstrap(),
                Map.of(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 10_000_000,
                        ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 10_000,
                        ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000))) {
            producer.send(new ProducerRecord<>(topic, "k", "v".repeat(size))).get();
        }
    }

    @Test
    void perBrokerAndDefaultConfigsLayerWithKafkasSourcesAndApplyAtOnce() throws Exception {
        String topic = Clients.unique("dynamic");
        Clients.createTopic(admin, topic, 1);
        send(topic, 50_000);

        alter(DEFAULT, set("message.max.bytes", "20000"), set("log.retention.ms", "7200000"));
        alter(BROKER, set("message.max.bytes", "30000"));
        Map<String, ConfigEntry> brokerConfig = describe(BROKER);
        ConfigEntry maxBytes = brokerConfig.get("message.max.bytes");
        assertEquals("30000", maxBytes.value());
        assertEquals(ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG, maxBytes.source());
        assertFalse(maxBytes.isReadOnly(), "message.max.bytes can change at run time");
        // Kafka's order: this broker's, the cluster default, the file's
        // (server.properties sets it here), Kafka's default.
        assertEquals(List.of(ConfigEntry.ConfigSource.DYNAMIC_BROKER_CONFIG,
                        ConfigEntry.ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
                        ConfigEntry.ConfigSource.STATIC_BROKER_CONFIG, ConfigEntry.ConfigSource.DEFAULT_CONFIG),
                maxBytes.synonyms().stream().map(ConfigEntry.ConfigSynonym::source).toList(),
                "synonyms in Kafka's order");
        assertEquals(List.of("30000", "20000"), maxBytes.synonyms().stream().limit(2)
                .map(ConfigEntry.ConfigSynonym::value).toList());
        assertTrue(brokerConfig.get("broker.id").isReadOnly(), "broker.id needs a restart");
        assertEquals(ConfigEntry.ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
                brokerConfig.get("log.retention.ms").source());
        Map<String, ConfigEntry> defaults = describe(DEFAULT);
        assertEquals(Map.of("message.max.bytes", "20000", "log.retention.ms", "7200000"),
                defaults.values().stream().collect(Collectors.toMap(ConfigEntry::name, ConfigEntry::value)),
                "the default resource lists the dynamic defaults");

        // Applied without a restart: the topic without overrides takes them.
        ConfigResource topicResource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Map<String, ConfigEntry> topicConfig = describe(topicResource);
        assertEquals("30000", topicConfig.get("max.message.bytes").value());
        assertEquals("7200000", topicConfig.get("retention.ms").value());
        ExecutionException tooLarge = assertThrows(ExecutionException.class, () -> send(topic, 50_000));
        assertInstanceOf(RecordTooLargeException.class, tooLarge.getCause());

        // Deleting the per-broker value falls back to the cluster default.
        alter(BROKER, delete("message.max.bytes"));
        assertEquals("20000", describe(BROKER).get("message.max.bytes").value());
        alter(DEFAULT, delete("message.max.bytes"), delete("log.retention.ms"));
        assertEquals(ConfigEntry.ConfigSource.STATIC_BROKER_CONFIG, describe(BROKER).get("message.max.bytes").source(),
                "back to server.properties");
        send(topic, 50_000);
    }

    @Test
    void keysThatNeedARestartAreRefused() throws Exception {
        ExecutionException refused = assertThrows(ExecutionException.class,
                () -> alter(BROKER, set("log.dirs", "/elsewhere")));
        assertInstanceOf(InvalidRequestException.class, refused.getCause());
        // (Another broker's resource: the AdminClient sends it to that
        // broker; tests/zookeeper_mode.rs sends one here raw.)
        assertEquals(ConfigEntry.ConfigSource.STATIC_BROKER_CONFIG, describe(BROKER).get("log.dirs").source());
    }

    @Test
    void kafkaConfigsAltersAndDescribesBrokerConfigs() throws Exception {
        Assumptions.assumeTrue(KafkaTool.classpath() != null, "no -Dkafka.tools.classpath");
        tool("--entity-type", "brokers", "--entity-default", "--alter",
                "--add-config", "log.cleaner.backoff.ms=20000").ok();
        tool("--entity-type", "brokers", "--entity-name", "0", "--alter",
                "--add-config", "log.cleaner.backoff.ms=25000").ok();
        String perBroker = tool("--entity-type", "brokers", "--entity-name", "0", "--describe").ok().stdout();
        assertTrue(perBroker.contains("log.cleaner.backoff.ms=25000"), perBroker);
        assertTrue(perBroker.contains("DYNAMIC_BROKER_CONFIG:log.cleaner.backoff.ms=25000"), perBroker);
        assertTrue(perBroker.contains("DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.backoff.ms=20000"), perBroker);
        String clusterDefault = tool("--entity-type", "brokers", "--entity-default", "--describe").ok().stdout();
        assertTrue(clusterDefault.contains("log.cleaner.backoff.ms=20000"), clusterDefault);
        tool("--entity-type", "brokers", "--entity-name", "0", "--alter",
                "--delete-config", "log.cleaner.backoff.ms").ok();
        tool("--entity-type", "brokers", "--entity-default", "--alter",
                "--delete-config", "log.cleaner.backoff.ms").ok();
        assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG,
                describe(BROKER).get("log.cleaner.backoff.ms").source());
    }

    private static KafkaTool.Outcome tool(String... args) throws Exception {
        String[] all = Arrays.copyOf(new String[] {"--bootstrap-server", broker.bootstrap()}, 2 + args.length);
        System.arraycopy(args, 0, all, 2, args.length);
        return KafkaTool.run(KafkaTool.CONFIGS, null, all);
    }
}

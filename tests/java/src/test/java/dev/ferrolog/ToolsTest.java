package dev.ferrolog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Kafka 3.9's own command-line tools against ferrolog. */
class ToolsTest extends OneBroker {
    @BeforeAll
    static void needsTheTools() {
        // scripts/test.sh hands the tools' classpath to the kafka-clients
        // 3.9 run only: the tools are the same whichever client is tested.
        Assumptions.assumeTrue(KafkaTool.classpath() != null, "no -Dkafka.tools.classpath");
    }

    private static KafkaTool.Outcome tool(String mainClass, String... args) throws Exception {
        return KafkaTool.run(mainClass, null, args);
    }

    private static String[] withBootstrap(String... args) {
        String[] all = Arrays.copyOf(new String[] {"--bootstrap-server", broker.bootstrap()}, 2 + args.length);
        System.arraycopy(args, 0, all, 2, args.length);
        return all;
    }

    private static void produce(String topic, int partitions, int count) throws Exception {
        try (KafkaProducer<String, String> producer = Clients.producer(broker.bootstrap(), Map.of())) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, i % partitions, "k" + i, "v" + i));
            }
            producer.flush();
        }
    }

    @Test
    void kafkaTopicsCreatesListsDescribesAltersAndDeletes() throws Exception {
        String topic = Clients.unique("tool-topics");
        tool(KafkaTool.TOPICS, withBootstrap("--create", "--topic", topic, "--partitions", "3",
                "--replication-factor", "1", "--config", "retention.ms=3600000")).ok();
        assertTrue(tool(KafkaTool.TOPICS, withBootstrap("--list")).ok().stdout().lines()
                .anyMatch(topic::equals));
        String described = tool(KafkaTool.TOPICS, withBootstrap("--describe", "--topic", topic)).ok().stdout();
        assertTrue(described.contains("PartitionCount: 3"), described);
        assertTrue(described.contains("retention.ms=3600000"), described);
        assertEquals(3, described.lines().filter(l -> l.contains("Leader: 0")).count(), described);
        tool(KafkaTool.TOPICS, withBootstrap("--alter", "--topic", topic, "--partitions", "5")).ok();
        described = tool(KafkaTool.TOPICS, withBootstrap("--describe", "--topic", topic)).ok().stdout();
        assertTrue(described.contains("PartitionCount: 5"), described);
        tool(KafkaTool.TOPICS, withBootstrap("--delete", "--topic", topic)).ok();
        Instant deadline = Instant.now().plus(Clients.WAIT);
        boolean listed = true;
        while (listed && Instant.now().isBefore(deadline)) {
            listed = tool(KafkaTool.TOPICS, withBootstrap("--list")).ok().stdout().lines().anyMatch(topic::equals);
        }
        assertFalse(listed, "deleted topics are not listed");
    }

    @Test
    void kafkaConfigsAltersAndDescribesTopicsAndDescribesBrokers() throws Exception {
        String topic = Clients.unique("tool-configs");
        Clients.createTopic(admin, topic, 1);
        tool(KafkaTool.CONFIGS, withBootstrap("--entity-type", "topics", "--entity-name", topic, "--alter",
                "--add-config", "retention.ms=5000,cleanup.policy=[delete,compact]")).ok();
        String described = tool(KafkaTool.CONFIGS, withBootstrap("--entity-type", "topics",
                "--entity-name", topic, "--describe")).ok().stdout();
        assertTrue(described.contains("retention.ms=5000"), described);
        assertTrue(described.contains("cleanup.policy=delete,compact"), described);
        tool(KafkaTool.CONFIGS, withBootstrap("--entity-type", "topics", "--entity-name", topic, "--alter",
                "--delete-config", "retention.ms")).ok();
        described = tool(KafkaTool.CONFIGS, withBootstrap("--entity-type", "topics",
                "--entity-name", topic, "--describe")).ok().stdout();
        assertFalse(described.contains("retention.ms=5000"), described);
        String brokers = tool(KafkaTool.CONFIGS, withBootstrap("--entity-type", "brokers",
                "--entity-name", "0", "--describe", "--all")).ok().stdout();
        assertTrue(brokers.contains("message.max.bytes=1048588"), brokers);
    }

    @Test
    void consoleProducerConsoleConsumerAndConsumerGroups() throws Exception {
        String topic = Clients.unique("tool-console");
        String group = Clients.unique("tool-group");
        Clients.createTopic(admin, topic, 1);
        String lines = "a:one\nb:two\nc:three\n";
        KafkaTool.run(KafkaTool.CONSOLE_PRODUCER, lines, withBootstrap("--topic", topic,
                "--property", "parse.key=true", "--property", "key.separator=:")).ok();
        String consumed = tool(KafkaTool.CONSOLE_CONSUMER, withBootstrap("--topic", topic, "--group", group,
                "--from-beginning", "--max-messages", "3", "--property", "print.key=true",
                "--property", "key.separator=:", "--timeout-ms", "60000")).ok().stdout();
        assertEquals(lines, consumed);

        assertTrue(tool(KafkaTool.CONSUMER_GROUPS, withBootstrap("--list")).ok().stdout().lines()
                .anyMatch(group::equals));
        String described = tool(KafkaTool.CONSUMER_GROUPS, withBootstrap("--describe", "--group", group))
                .ok().stdout();
        // GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...
        assertTrue(described.lines().anyMatch(l -> l.matches(group + "\\s+" + topic + "\\s+0\\s+3\\s+3\\s+0\\s.*")),
                described);
        tool(KafkaTool.CONSUMER_GROUPS, withBootstrap("--reset-offsets", "--group", group, "--topic", topic,
                "--to-earliest", "--execute")).ok();
        described = tool(KafkaTool.CONSUMER_GROUPS, withBootstrap("--describe", "--group", group)).ok().stdout();
        assertTrue(described.lines().anyMatch(l -> l.matches(group + "\\s+" + topic + "\\s+0\\s+0\\s+3\\s+3\\s.*")),
                described);
        tool(KafkaTool.CONSUMER_GROUPS, withBootstrap("--reset-offsets", "--group", group, "--topic", topic,
                "--to-datetime", "2000-01-01T00:00:00.000", "--execute")).ok();
        tool(KafkaTool.CONSUMER_GROUPS, withBootstrap("--reset-offsets", "--group", group, "--topic", topic,
                "--to-latest", "--execute")).ok();
        described = tool(KafkaTool.CONSUMER_GROUPS, withBootstrap("--describe", "--group", group)).ok().stdout();
        assertTrue(described.lines().anyMatch(l -> l.matches(group + "\\s+" + topic + "\\s+0\\s+3\\s+3\\s+0\\s.*")),
                described);
        String deleted = tool(KafkaTool.CONSUMER_GROUPS, withBootstrap("--delete", "--group", group)).ok().stdout();
        assertTrue(deleted.contains("successful"), deleted);
    }

    @Test
    void getOffsetsDeleteRecordsAndLeaderElection() throws Exception {
        String topic = Clients.unique("tool-offsets");
        Clients.createTopic(admin, topic, 2);
        produce(topic, 2, 10);
        String latest = tool(KafkaTool.GET_OFFSETS, withBootstrap("--topic", topic)).ok().stdout();
        assertEquals(List.of(topic + ":0:5", topic + ":1:5"), latest.lines().sorted().collect(Collectors.toList()));
        Path json = Files.createTempFile("delete-records", ".json");
        Files.writeString(json, "{\"partitions\":[{\"topic\":\"" + topic + "\",\"partition\":0,\"offset\":2}],"
                + "\"version\":1}");
        String deleted = tool(KafkaTool.DELETE_RECORDS, withBootstrap("--offset-json-file", json.toString()))
                .ok().stdout();
        assertTrue(deleted.contains("low_watermark: 2"), deleted);
        String earliest = tool(KafkaTool.GET_OFFSETS, withBootstrap("--topic", topic, "--time", "-2")).ok().stdout();
        assertEquals(List.of(topic + ":0:2", topic + ":1:0"), earliest.lines().sorted().collect(Collectors.toList()));
        String elected = tool(KafkaTool.LEADER_ELECTION, withBootstrap("--election-type", "preferred",
                "--topic", topic, "--partition", "0")).ok().stdout();
        assertTrue(elected.contains("Valid replica already elected for partitions " + topic + "-0"), elected);
    }

    @Test
    void kafkaLogDirsDescribesEachReplica() throws Exception {
        String topic = Clients.unique("tool-logdirs");
        Clients.createTopic(admin, topic, 2);
        produce(topic, 2, 20);
        String out = tool(KafkaTool.LOG_DIRS, withBootstrap("--describe", "--topic-list", topic)).ok().stdout();
        String json = out.lines().filter(l -> l.startsWith("{")).findFirst().orElseThrow(() -> new AssertionError(out));
        assertTrue(json.contains("\"logDir\":\"" + broker.logDir() + "\""), json);
        assertTrue(json.contains("\"error\":null"), json);
        for (int p = 0; p < 2; p++) {
            long size = Files.size(broker.logDir().resolve(topic + "-" + p).resolve("00000000000000000000.log"));
            assertTrue(json.contains("{\"partition\":\"" + topic + "-" + p + "\",\"size\":" + size
                    + ",\"offsetLag\":0,\"isFuture\":false}"), json);
        }
    }

    @Test
    void producerPerfTestAndTheVerifiableClients() throws Exception {
        String topic = Clients.unique("tool-perf");
        Clients.createTopic(admin, topic, 2);
        String perf = tool(KafkaTool.PRODUCER_PERF_TEST, "--topic", topic, "--num-records", "20000",
                "--record-size", "100", "--throughput", "-1", "--producer-props",
                "bootstrap.servers=" + broker.bootstrap(), "acks=all").ok().stdout();
        assertTrue(perf.contains("20000 records sent"), perf);

        String verified = Clients.unique("tool-verifiable");
        Clients.createTopic(admin, verified, 2);
        String produced = tool(KafkaTool.VERIFIABLE_PRODUCER, withBootstrap("--topic", verified,
                "--max-messages", "1000", "--acks", "-1")).ok().stdout();
        long sent = produced.lines().filter(l -> l.contains("\"name\":\"producer_send_success\"")).count();
        assertEquals(1000, sent, "each record acknowledged: " + tail(produced));
        assertTrue(produced.contains("\"acked\":1000"), tail(produced));
        String consumed = tool(KafkaTool.VERIFIABLE_CONSUMER, withBootstrap("--topic", verified,
                "--group-id", Clients.unique("verifiable"), "--max-messages", "1000", "--reset-policy", "earliest"))
                .ok().stdout();
        long count = consumed.lines().filter(l -> l.contains("\"name\":\"records_consumed\""))
                .mapToLong(l -> Long.parseLong(l.replaceAll(".*\"count\":(\\d+).*", "$1"))).sum();
        assertEquals(1000, count, tail(consumed));
        assertTrue(consumed.contains("\"name\":\"offsets_committed\""), tail(consumed));
        assertFalse(consumed.contains("\"success\":false"), tail(consumed));
    }

    private static String tail(String output) {
        List<String> lines = output.lines().collect(Collectors.toList());
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 10), lines.size()));
    }

    /**
     * Kafka's DumpLogSegments reads ferrolog's segment, index, time index
     * and producer snapshot files, verifying the indexes against the log.
     */
    @Test
    void kafkaDumpLogReadsFerrologsFiles() throws Exception {
        String topic = Clients.unique("tool-dump");
        int count = 3000;
        try (Ferrolog own = Ferrolog.start()) {
            try (var ownAdmin = Clients.admin(own.bootstrap())) {
                Clients.createTopic(ownAdmin, topic, 1);
            }
            // Idempotent (the default), so there is producer state to
            // snapshot; small lz4 batches, so the indexes have entries.
            try (KafkaProducer<String, String> producer = Clients.producer(own.bootstrap(),
                    Map.of("batch.size", "2000", "linger.ms", "0", "compression.type", "lz4"))) {
                for (int i = 0; i < count; i++) {
                    producer.send(new ProducerRecord<>(topic, "key" + i, "value-" + "x".repeat(i % 50)));
                }
                producer.flush();
            }
            // A clean shutdown writes the producer snapshot and trims the indexes.
            own.stop();
            Path dir = own.logDir().resolve(topic + "-0");
            List<Path> files;
            try (Stream<Path> listing = Files.list(dir)) {
                files = listing.sorted().collect(Collectors.toList());
            }
            Path log = only(files, ".log");
            String dumped = tool(KafkaTool.DUMP_LOG, "--files", log.toString(), "--deep-iteration",
                    "--print-data-log").ok().stdout();
            assertEquals(count, dumped.lines().filter(l -> l.contains("| offset: ")).count(),
                    "every record, decompressed: " + tail(dumped));
            assertTrue(dumped.contains("key: key2999"), tail(dumped));
            assertTrue(dumped.contains("compresscodec: lz4"), tail(dumped));
            assertFalse(dumped.contains("rror"), tail(dumped));
            for (String suffix : List.of(".index", ".timeindex")) {
                String index = tool(KafkaTool.DUMP_LOG, "--files", only(files, suffix).toString()).ok().stdout();
                assertTrue(index.lines().filter(l -> l.startsWith("offset:") || l.startsWith("timestamp:")).count() > 1,
                        suffix + " has entries: " + index);
                assertFalse(index.contains("Mismatches") || index.contains("rror"), suffix + ": " + index);
            }
            String snapshot = tool(KafkaTool.DUMP_LOG, "--files", only(files, ".snapshot").toString()).ok().stdout();
            assertTrue(snapshot.contains("producerId:"), snapshot);
            assertTrue(snapshot.contains("lastSequence: " + (count - 1)), snapshot);
        }
    }

    private static Path only(List<Path> files, String suffix) {
        List<Path> matching = files.stream().filter(f -> f.toString().endsWith(suffix)).collect(Collectors.toList());
        assertEquals(1, matching.size(), "one " + suffix + " in " + files);
        return matching.get(0);
    }
}

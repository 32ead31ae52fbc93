package dev.ferrolog;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Produced;
import org.junit.jupiter.api.Test;

/** Kafka Streams (at-least-once) against ferrolog: a word count. */
class StreamsTest extends OneBroker {
    private static final List<String> WORDS = List.of("alpha", "beta", "gamma", "delta", "epsilon", "zeta",
            "eta", "theta", "iota", "kappa", "lambda", "mu");

    /** Writes `lines` lines of five words each; adds each word's count to `totals`. */
    private static void writeLines(String topic, int from, int lines, Map<String, Long> totals) throws Exception {
        try (KafkaProducer<String, String> producer = Clients.producer(broker.bootstrap(), Map.of())) {
            for (int i = from; i < from + lines; i++) {
                StringBuilder line = new StringBuilder();
                for (int w = 0; w < 5; w++) {
                    String word = WORDS.get((i * 7 + w * 3) % WORDS.size());
                    line.append(w == 0 ? "" : " ").append(word);
                    totals.merge(word, 1L, Long::sum);
                }
                producer.send(new ProducerRecord<>(topic, "line-" + i, line.toString()));
            }
            producer.flush();
        }
    }

    /** The output topic's last count per word, read from the beginning. */
    private static Map<String, Long> latestCounts(String topic) {
        Map<String, Object> config = Map.of(
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, LongDeserializer.class.getName());
        Map<String, Long> latest = new HashMap<>();
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        props.putAll(config);
        try (KafkaConsumer<String, Long> consumer = new KafkaConsumer<>(props)) {
            List<TopicPartition> partitions = consumer.partitionsFor(topic).stream()
                    .map(p -> new TopicPartition(topic, p.partition())).collect(Collectors.toList());
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> end = consumer.endOffsets(partitions);
            Instant deadline = Instant.now().plus(Clients.WAIT);
            while (Instant.now().isBefore(deadline)
                    && !end.entrySet().stream().allMatch(e -> consumer.position(e.getKey()) >= e.getValue())) {
                for (ConsumerRecord<String, Long> record : consumer.poll(Duration.ofMillis(200))) {
                    latest.put(record.key(), record.value());
                }
            }
        }
        return latest;
    }

    private static void awaitCounts(String output, Map<String, Long> expected) throws InterruptedException {
        Instant deadline = Instant.now().plus(Duration.ofSeconds(120));
        Map<String, Long> seen = Map.of();
        while (Instant.now().isBefore(deadline)) {
            seen = latestCounts(output);
            if (seen.equals(expected)) {
                return;
            }
            Thread.sleep(500);
        }
        assertEquals(expected, seen, "the word counts in " + output);
    }

    @Test
    void aWordCountSurvivesABrokerRestartWithCorrectTotals() throws Exception {
        String input = Clients.unique("streams-in");
        String output = Clients.unique("streams-out");
        Clients.createTopic(admin, input, 2);
        Clients.createTopic(admin, output, 2);
        String application = Clients.unique("wordcount");
        Path state = Files.createTempDirectory("streams-state");
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, application);
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        props.put(StreamsConfig.STATE_DIR_CONFIG, state.toString());
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");

        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream(input)
                .flatMapValues(line -> Arrays.asList(line.split(" ")))
                // Re-keyed by word: a repartition topic; counted: a changelog.
                .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
                .count()
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));

        Map<String, Long> totals = new HashMap<>();
        writeLines(input, 0, 1000, totals);
        try (KafkaStreams streams = new KafkaStreams(builder.build(), props)) {
            streams.start();
            awaitCounts(output, totals);
            Set<String> topics = admin.listTopics().names().get();
            assertEquals(2, topics.stream().filter(t -> t.startsWith(application + "-")).count(),
                    "the repartition and changelog topics: " + topics);

            // The broker is SIGKILLed and comes back on the same port; the
            // application rides through and keeps counting.
            broker.kill();
            Thread.sleep(2000);
            broker.restart();
            writeLines(input, 1000, 1000, totals);
            awaitCounts(output, totals);
            assertEquals(KafkaStreams.State.RUNNING, streams.state());
        }
    }
}

package dev.ferrolog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The Java producer against one ferrolog broker. */
class ProducerTest extends OneBroker {
    /**
     * Sends `count` records spread by key over `topics`, and checks every
     * acknowledgement: each record acknowledged once, each partition's
     * offsets 0, 1, 2, ... in send order; then reads everything back and
     * checks each record is at the offset it was acknowledged at.
     */
    private static void sendAndCheck(List<String> topics, int partitions, int count, Map<String, Object> config)
            throws Exception {
        for (String topic : topics) {
            Clients.createTopic(admin, topic, partitions);
        }
        Acknowledgements acks = new Acknowledgements();
        try (KafkaProducer<String, String> producer = Clients.producer(broker.bootstrap(), config)) {
            for (int i = 0; i < count; i++) {
                String topic = topics.get(i % topics.size());
                String value = topic + "-" + i;
                producer.send(new ProducerRecord<>(topic, "key-" + (i % 97), value), acks.callback(i, value));
            }
            producer.flush();
        }
        acks.verifyAcknowledged(count);
        List<TopicPartition> all = new ArrayList<>();
        for (String topic : topics) {
            all.addAll(Clients.partitionsOf(topic, partitions));
        }
        acks.verifyRead(Clients.readAll(broker.bootstrap(), all, Map.of()));
    }

    @Test
    void theDefaultProducerWritesEveryRecordOnceAndInOrder() throws Exception {
        // Kafka's defaults: idempotence on, acks=all, 5 requests in flight;
        // three topics of four partitions share each request.
        List<String> topics = List.of(Clients.unique("defaults-a"), Clients.unique("defaults-b"),
                Clients.unique("defaults-c"));
        sendAndCheck(topics, 4, 6000, Map.of(ProducerConfig.LINGER_MS_CONFIG, "5"));
    }

    @Test
    void aNonIdempotentProducerWithOneRequestInFlight() throws Exception {
        sendAndCheck(List.of(Clients.unique("plain")), 3, 2000, Map.of(
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false",
                ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1",
                ProducerConfig.ACKS_CONFIG, "1"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"gzip", "snappy", "lz4", "zstd"})
    void compressedBatches(String codec) throws Exception {
        sendAndCheck(List.of(Clients.unique("compressed-" + codec)), 2, 3000, Map.of(
                ProducerConfig.COMPRESSION_TYPE_CONFIG, codec,
                ProducerConfig.LINGER_MS_CONFIG, "20"));
    }

    @Test
    void headersAndNullsRoundTrip() throws Exception {
        String topic = Clients.unique("headers");
        Clients.createTopic(admin, topic, 1);
        List<Header> headers = List.of(
                new RecordHeader("trace", "abc".getBytes(StandardCharsets.UTF_8)),
                new RecordHeader("empty", new byte[0]),
                new RecordHeader("null", null),
                new RecordHeader("trace", "second".getBytes(StandardCharsets.UTF_8)));
        try (KafkaProducer<String, String> producer = Clients.producer(broker.bootstrap(), Map.of())) {
            producer.send(new ProducerRecord<>(topic, 0, 1_700_000_000_000L, "k", "v", headers)).get();
            producer.send(new ProducerRecord<>(topic, 0, null, null, (String) null)).get();
        }
        List<ConsumerRecord<String, String>> read =
                Clients.readAll(broker.bootstrap(), List.of(new TopicPartition(topic, 0)), Map.of());
        assertEquals(2, read.size());
        ConsumerRecord<String, String> first = read.get(0);
        assertEquals("k", first.key());
        assertEquals("v", first.value());
        assertEquals(1_700_000_000_000L, first.timestamp());
        List<Header> got = new ArrayList<>();
        first.headers().forEach(got::add);
        assertEquals(4, got.size(), "headers, duplicates kept, in order");
        for (int i = 0; i < headers.size(); i++) {
            assertEquals(headers.get(i).key(), got.get(i).key());
            if (headers.get(i).value() == null) {
                assertNull(got.get(i).value());
            } else {
                assertEquals(new String(headers.get(i).value(), StandardCharsets.UTF_8),
                        new String(got.get(i).value(), StandardCharsets.UTF_8));
            }
        }
        assertNull(read.get(1).key());
        assertNull(read.get(1).value());
    }

    @Test
    void recordsUpToMessageMaxBytesAndMessageTooLargeBeyond() throws Exception {
        String topic = Clients.unique("large");
        Clients.createTopic(admin, topic, 1);
        // The producer's own limit is raised so the broker's
        // message.max.bytes (1048588 by default) is the one that decides.
        Map<String, Object> config = Map.of(
                ProducerConfig.MAX_REQUEST_SIZE_CONFIG, "4194304",
                ProducerConfig.BUFFER_MEMORY_CONFIG, "16777216",
                ProducerConfig.BATCH_SIZE_CONFIG, "16384",
                ProducerConfig.LINGER_MS_CONFIG, "0");
        String fits = "x".repeat(1_048_588 - 200);
        String tooLarge = "y".repeat(1_048_588 + 1000);
        try (KafkaProducer<String, String> producer = Clients.producer(broker.bootstrap(), config)) {
            RecordMetadata written = producer.send(new ProducerRecord<>(topic, 0, null, fits)).get();
            assertEquals(0, written.offset());
            Future<RecordMetadata> refused = producer.send(new ProducerRecord<>(topic, 0, null, tooLarge));
            ExecutionException error = assertThrows(ExecutionException.class, refused::get);
            assertInstanceOf(RecordTooLargeException.class, error.getCause(),
                    "MESSAGE_TOO_LARGE from the broker: " + error.getCause());
            RecordMetadata after = producer.send(new ProducerRecord<>(topic, 0, null, "small")).get();
            assertEquals(1, after.offset(), "the refused record took no offset");
        }
        List<ConsumerRecord<String, String>> read = Clients.readAll(broker.bootstrap(),
                List.of(new TopicPartition(topic, 0)),
                Map.of("max.partition.fetch.bytes", "2097152"));
        assertEquals(2, read.size());
        assertEquals(fits, read.get(0).value());
        assertEquals("small", read.get(1).value());
    }
}

package dev.ferrolog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.common.TopicPartition;

/**
 * What a producer's callbacks acknowledged, record by record, and the
 * checks over it: each record acknowledged once; each partition's offsets
 * 0, 1, 2, ... in send order; and, against what is read back, every
 * acknowledged record at its offset and nothing else (no loss, no
 * duplicate).
 */
final class Acknowledgements {
    private final Map<TopicPartition, List<Long>> offsets = new HashMap<>();
    private final Map<TopicPartition, List<Integer>> order = new HashMap<>();
    private final Map<TopicPartition, Map<Long, String>> values = new HashMap<>();
    private final List<Exception> failures = Collections.synchronizedList(new ArrayList<>());
    private int acknowledged;

    /** The callback for the `sent`-th record, whose value is `value`. */
    Callback callback(int sent, String value) {
        return (metadata, error) -> {
            if (error != null) {
                failures.add(error);
                return;
            }
            TopicPartition tp = new TopicPartition(metadata.topic(), metadata.partition());
            // Callbacks run on the producer's I/O thread, a partition's in
            // acknowledgement order.
            synchronized (this) {
                offsets.computeIfAbsent(tp, k -> new ArrayList<>()).add(metadata.offset());
                order.computeIfAbsent(tp, k -> new ArrayList<>()).add(sent);
                String before = values.computeIfAbsent(tp, k -> new HashMap<>()).put(metadata.offset(), value);
                if (before != null) {
                    failures.add(new IllegalStateException(tp + "@" + metadata.offset() + " acknowledged twice"));
                }
                acknowledged++;
            }
        };
    }

    synchronized int acknowledged() {
        return acknowledged;
    }

    /** Every one of `count` records acknowledged, in order, without gaps. */
    synchronized void verifyAcknowledged(int count) {
        assertTrue(failures.isEmpty(), "failed deliveries: " + failures);
        int total = 0;
        for (Map.Entry<TopicPartition, List<Long>> entry : offsets.entrySet()) {
            List<Long> partitionOffsets = entry.getValue();
            for (int i = 0; i < partitionOffsets.size(); i++) {
                assertEquals((long) i, partitionOffsets.get(i),
                        entry.getKey() + ": offsets in send order, from 0, no gap");
            }
            List<Integer> sent = order.get(entry.getKey());
            for (int i = 1; i < sent.size(); i++) {
                assertTrue(sent.get(i - 1) < sent.get(i), entry.getKey() + ": acknowledged in send order");
            }
            total += partitionOffsets.size();
        }
        assertEquals(count, total, "every record acknowledged once");
    }

    /** `read` holds each acknowledged record at its offset, once, and nothing else. */
    synchronized void verifyRead(List<ConsumerRecord<String, String>> read) {
        assertEquals(acknowledged, read.size(), "every acknowledged record read once, nothing else");
        for (ConsumerRecord<String, String> record : read) {
            TopicPartition tp = new TopicPartition(record.topic(), record.partition());
            assertEquals(values.getOrDefault(tp, Map.of()).get(record.offset()), record.value(),
                    tp + "@" + record.offset() + " holds what was acknowledged there");
        }
    }
}

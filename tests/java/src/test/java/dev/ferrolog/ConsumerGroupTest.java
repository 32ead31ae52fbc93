package dev.ferrolog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Java consumers, in groups and alone, against one ferrolog broker. */
class ConsumerGroupTest extends OneBroker {
    /** Produces `count` records to `topic` round robin over its partitions; answers the values per partition. */
    private static void produce(String topic, int partitions, int from, int count) throws Exception {
        try (KafkaProducer<String, String> producer = Clients.producer(broker.bootstrap(), Map.of())) {
            for (int i = from; i < from + count; i++) {
                producer.send(new ProducerRecord<>(topic, i % partitions, "k" + i, "v" + i));
            }
            producer.flush();
        }
    }

    /**
     * One member of a group: polls, records each record it processed,
     * commits synchronously after each poll and on revocation, so that
     * nothing is processed twice across rebalances.
     */
    private static final class Member implements Runnable {
        final KafkaConsumer<String, String> consumer;
        final String topic;
        final Map<String, Integer> processed;
        final AtomicBoolean stop = new AtomicBoolean();
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final Set<TopicPartition> owned = ConcurrentHashMap.newKeySet();
        final Map<TopicPartition, OffsetAndMetadata> pending = new HashMap<>();
        final Thread thread;

        Member(String group, String topic, String assignor, Map<String, Integer> processed, String instanceId) {
            Map<String, Object> config = new HashMap<>();
            config.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            config.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignor);
            config.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "50");
            if (instanceId != null) {
                config.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instanceId);
                config.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
            }
            this.consumer = Clients.consumer(broker.bootstrap(), config);
            this.topic = topic;
            this.processed = processed;
            this.thread = new Thread(this, "member-" + group);
        }

        void start() {
            thread.start();
        }

        private void commitPending() {
            if (!pending.isEmpty()) {
                consumer.commitSync(new HashMap<>(pending));
                pending.clear();
            }
        }

        @Override
        public void run() {
            try {
                consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                    @Override
                    public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                        commitPending();
                        owned.removeAll(partitions);
                    }

                    @Override
                    public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                        owned.addAll(partitions);
                    }

                    @Override
                    public void onPartitionsLost(Collection<TopicPartition> partitions) {
                        pending.keySet().removeAll(partitions);
                        owned.removeAll(partitions);
                    }
                });
                while (!stop.get()) {
                    ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(100));
                    for (ConsumerRecord<String, String> record : records) {
                        processed.merge(record.value(), 1, Integer::sum);
                        pending.put(new TopicPartition(record.topic(), record.partition()),
                                new OffsetAndMetadata(record.offset() + 1));
                    }
                    commitPending();
                }
                commitPending();
            } catch (Throwable e) {
                failure.set(e);
            } finally {
                consumer.close();
            }
        }

        void leave() throws InterruptedException {
            stop.set(true);
            thread.join(60_000);
            assertFalse(thread.isAlive(), "the member closed");
            if (failure.get() != null) {
                throw new AssertionError("member failed", failure.get());
            }
        }
    }

    private static void waitFor(String what, java.util.function.BooleanSupplier condition) throws InterruptedException {
        Instant deadline = Instant.now().plus(Clients.WAIT);
        while (!condition.getAsBoolean()) {
            if (Instant.now().isAfter(deadline)) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(50);
        }
    }

    @ParameterizedTest
    @ValueSource(classes = {RangeAssignor.class, RoundRobinAssignor.class, CooperativeStickyAssignor.class})
    void membersJoinAndLeaveUnderLoadAndEveryRecordIsProcessedOnce(Class<?> assignor) throws Exception {
        String topic = Clients.unique("group-" + assignor.getSimpleName());
        String group = Clients.unique("g");
        int partitions = 6;
        Clients.createTopic(admin, topic, partitions);
        Map<String, Integer> processed = new ConcurrentHashMap<>();
        int batches = 6;
        int perBatch = 300;
        produce(topic, partitions, 0, perBatch);
        Member first = new Member(group, topic, assignor.getName(), processed, null);
        first.start();
        waitFor("the first member owns every partition", () -> first.owned.size() == partitions);
        List<Member> members = new ArrayList<>(List.of(first));
        for (int batch = 1; batch < batches; batch++) {
            produce(topic, partitions, batch * perBatch, perBatch);
            if (batch <= 2) {
                Member joining = new Member(group, topic, assignor.getName(), processed, null);
                joining.start();
                members.add(joining);
            } else if (batch == 4) {
                members.remove(0).leave();
            }
            Thread.sleep(300);
        }
        int total = batches * perBatch;
        waitFor("every record processed", () -> processed.size() == total);
        waitFor("the remaining members share the partitions",
                () -> members.stream().mapToInt(m -> m.owned.size()).sum() == partitions);
        for (Member member : members) {
            member.leave();
        }
        for (int i = 0; i < total; i++) {
            assertEquals(1, processed.getOrDefault("v" + i, 0), "v" + i + " processed exactly once");
        }
        Map<TopicPartition, OffsetAndMetadata> committed =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        assertEquals(partitions, committed.size());
        for (OffsetAndMetadata offset : committed.values()) {
            assertEquals(total / partitions, offset.offset(), "committed up to the end");
        }
    }

    @Test
    void aStaticMemberRejoinsWithItsAssignmentAndExpiresAfterItsSession() throws Exception {
        String topic = Clients.unique("static");
        String group = Clients.unique("g-static");
        Clients.createTopic(admin, topic, 4);
        produce(topic, 4, 0, 40);
        Map<String, Integer> processed = new ConcurrentHashMap<>();
        Member a = new Member(group, topic, RangeAssignor.class.getName(), processed, "instance-a");
        Member b = new Member(group, topic, RangeAssignor.class.getName(), processed, "instance-b");
        a.start();
        b.start();
        waitFor("two static members share 4 partitions",
                () -> a.owned.size() == 2 && b.owned.size() == 2);
        Set<TopicPartition> ownedByA = new HashSet<>(a.owned);
        a.leave();
        // A static member's close sends no LeaveGroup: within its session
        // it comes back to the same partitions, with no rebalance.
        Member again = new Member(group, topic, RangeAssignor.class.getName(), processed, "instance-a");
        again.start();
        waitFor("the returning member owns partitions", () -> again.owned.size() == 2);
        assertEquals(ownedByA, again.owned, "same instance id, same partitions");
        assertEquals(2, b.owned.size());
        again.leave();
        b.leave();
        waitFor("every record processed", () -> processed.size() == 40);
        // Kafka removes static members whose session timed out; then the
        // group is empty and can be deleted.
        Instant deadline = Instant.now().plus(Duration.ofSeconds(30));
        Throwable last = null;
        while (Instant.now().isBefore(deadline)) {
            try {
                admin.deleteConsumerGroups(List.of(group)).all().get();
                last = null;
                break;
            } catch (Exception e) {
                last = e;
                Thread.sleep(500);
            }
        }
        assertEquals(null, last, "the group is deleted once its static members' sessions ended");
    }

    @Test
    void commitSyncCommitAsyncSeekAndPause() throws Exception {
        String topic = Clients.unique("positions");
        Clients.createTopic(admin, topic, 2);
        long base = System.currentTimeMillis() - 100_000;
        try (KafkaProducer<String, String> producer = Clients.producer(broker.bootstrap(), Map.of())) {
            for (int i = 0; i < 100; i++) {
                // Timestamps one second apart, so offsetsForTimes has steps.
                producer.send(new ProducerRecord<>(topic, i % 2, base + i * 1000L, "k", "v" + i));
            }
            producer.flush();
        }
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);
        String group = Clients.unique("g-positions");
        Map<String, Object> config = Map.of(ConsumerConfig.GROUP_ID_CONFIG, group,
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        try (KafkaConsumer<String, String> consumer = Clients.consumer(broker.bootstrap(), config)) {
            consumer.assign(List.of(p0, p1));
            consumer.commitSync(Map.of(p0, new OffsetAndMetadata(10, "meta")));
            CountDownLatch asyncDone = new CountDownLatch(1);
            AtomicReference<Exception> asyncError = new AtomicReference<>();
            consumer.commitAsync(Map.of(p1, new OffsetAndMetadata(20)), (offsets, error) -> {
                asyncError.set(error);
                asyncDone.countDown();
            });
            Instant deadline = Instant.now().plus(Clients.WAIT);
            while (asyncDone.getCount() > 0 && Instant.now().isBefore(deadline)) {
                consumer.poll(Duration.ofMillis(50)); // runs the callback
            }
            assertEquals(0, asyncDone.getCount(), "commitAsync's callback ran");
            assertEquals(null, asyncError.get());
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(Set.of(p0, p1));
            assertEquals(10, committed.get(p0).offset());
            assertEquals("meta", committed.get(p0).metadata());
            assertEquals(20, committed.get(p1).offset());

            consumer.seekToEnd(List.of(p0));
            assertEquals(50, consumer.position(p0));
            consumer.seekToBeginning(List.of(p0));
            assertEquals(0, consumer.position(p0));
            consumer.seek(p0, 42);
            assertEquals(42, consumer.position(p0));

            // Record 2k is partition 0's k-th, at base + 2k seconds.
            Map<TopicPartition, OffsetAndTimestamp> found =
                    consumer.offsetsForTimes(Map.of(p0, base + 10_500L, p1, base + 1_000_000L));
            assertEquals(6, found.get(p0).offset(), "first record at or after the time");
            assertEquals(base + 12_000L, found.get(p0).timestamp());
            assertEquals(null, found.get(p1), "no record that late");

            // Paused, a partition returns nothing; resumed, it goes on.
            consumer.seek(p1, 0);
            consumer.pause(List.of(p1));
            int fromP1 = 0;
            int fromP0 = 0;
            deadline = Instant.now().plus(Clients.WAIT);
            while (fromP0 < 8 && Instant.now().isBefore(deadline)) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                    if (r.partition() == 1) {
                        fromP1++;
                    } else {
                        fromP0++;
                    }
                }
            }
            assertEquals(8, fromP0, "partition 0 from offset 42 to its end");
            assertEquals(0, fromP1, "nothing from a paused partition");
            consumer.resume(List.of(p1));
            deadline = Instant.now().plus(Clients.WAIT);
            while (fromP1 < 50 && Instant.now().isBefore(deadline)) {
                fromP1 += consumer.poll(Duration.ofMillis(100)).records(p1).size();
            }
            assertEquals(50, fromP1, "resumed from where it was");
            assertNotNull(consumer.groupMetadata());
        }
    }

    /**
     * Cooperative-sticky rebalancing callback by callback, as Kafka 3.9
     * makes them (the Rust test
     * `groups.rs::cooperative_sticky_second_member_costs_two_rounds_as_in_kafka`
     * checks the same with librdkafka, whose run against Kafka 3.9 gave
     * these calls): member 1 takes all four partitions; member 2's join
     * costs two rounds, the first revoking two partitions from member 1, the
     * second giving them to member 2. onPartitionsAssigned is called after
     * every round a member completes, even with nothing new. Checked against
     * Kafka 3.9.1 with the same delay of 0 (member 2 missed the second round
     * in 4 runs of 4 there, and in 3 of 4 here).
     */
    @Test
    void aCooperativeSecondMemberCostsTwoRoundsAsInKafka() throws Exception {
        String topic = Clients.unique("coop");
        Clients.createTopic(admin, topic, 4);
        String group = Clients.unique("coop-group");
        Map<String, Object> config = Map.of(ConsumerConfig.GROUP_ID_CONFIG, group,
                ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, CooperativeStickyAssignor.class.getName());
        List<String> first = new ArrayList<>();
        List<String> second = new ArrayList<>();
        try (KafkaConsumer<String, String> one = Clients.consumer(broker.bootstrap(), config);
                KafkaConsumer<String, String> two = Clients.consumer(broker.bootstrap(), config)) {
            one.subscribe(List.of(topic), recording(first));
            Instant deadline = Instant.now().plus(Clients.WAIT);
            while (one.assignment().size() != 4) {
                one.poll(Duration.ofMillis(100));
                assertTrue(Instant.now().isBefore(deadline), "member 1 takes every partition: " + first);
            }
            two.subscribe(List.of(topic), recording(second));
            while (two.assignment().size() != 2 || one.assignment().size() != 2) {
                one.poll(Duration.ofMillis(100));
                two.poll(Duration.ofMillis(100));
                assertTrue(Instant.now().isBefore(deadline), "two each: " + first + " " + second);
            }
            // A few more heartbeats: no third round.
            for (int i = 0; i < 10; i++) {
                one.poll(Duration.ofMillis(100));
                two.poll(Duration.ofMillis(100));
            }
            List<Integer> moved = two.assignment().stream().map(TopicPartition::partition).sorted().toList();
            assertEquals(List.of("assigned [0, 1, 2, 3]", "revoked " + moved, "assigned []", "assigned []"),
                    first, "member 1's callbacks");
            // Member 2 completes the second round only if its SyncGroup
            // beats member 1's rejoin; Kafka 3.9 gives either sequence, so
            // the test allows both but nothing else: no revocation, and
            // the moved partitions assigned once, last.
            assertTrue(second.equals(List.of("assigned []", "assigned " + moved))
                    || second.equals(List.of("assigned " + moved)), "member 2's callbacks: " + second);
        }
    }

    /** A listener that writes each call, partitions sorted, to `events`. */
    private static ConsumerRebalanceListener recording(List<String> events) {
        return new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                events.add("revoked " + partitions.stream().map(TopicPartition::partition).sorted().toList());
            }

            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                events.add("assigned " + partitions.stream().map(TopicPartition::partition).sorted().toList());
            }
        };
    }
}

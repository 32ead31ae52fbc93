package dev.ferrolog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.DescribeReplicaLogDirsResult;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.junit.jupiter.api.Test;

/** Every AdminClient call ferrolog implements, against one broker. */
class AdminTest extends OneBroker {
    private static Map<String, ConfigEntry> topicConfig(String topic) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Config config = admin.describeConfigs(List.of(resource)).all().get().get(resource);
        return config.entries().stream().collect(Collectors.toMap(ConfigEntry::name, e -> e));
    }

    private static void produce(String topic, int partition, int count, long timestamp) throws Exception {
        try (KafkaProducer<String, String> producer = Clients.producer(broker.bootstrap(), Map.of())) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, partition, timestamp + i, "k", "v" + i));
            }
            producer.flush();
        }
    }

    @Test
    void topicsAreCreatedListedDescribedGrownAndDeleted() throws Exception {
        String plain = Clients.unique("admin-plain");
        String placed = Clients.unique("admin-placed");
        NewTopic withConfigs = new NewTopic(plain, 3, (short) 1)
                .configs(Map.of("retention.ms", "3600000", "cleanup.policy", "compact"));
        NewTopic withAssignment = new NewTopic(placed, Map.of(0, List.of(0), 1, List.of(0)));
        admin.createTopics(List.of(withConfigs, withAssignment)).all().get();
        ExecutionException again = assertThrows(ExecutionException.class,
                () -> admin.createTopics(List.of(new NewTopic(plain, 1, (short) 1))).all().get());
        assertInstanceOf(TopicExistsException.class, again.getCause());

        Set<String> names = admin.listTopics().names().get();
        assertTrue(names.containsAll(List.of(plain, placed)), "listed: " + names);

        Map<String, TopicDescription> described = admin.describeTopics(List.of(plain, placed)).allTopicNames().get();
        assertEquals(3, described.get(plain).partitions().size());
        assertEquals(2, described.get(placed).partitions().size());
        assertEquals(0, described.get(placed).partitions().get(1).leader().id());
        assertNotNull(described.get(plain).topicId());
        assertFalse(described.get(plain).isInternal());

        Map<String, ConfigEntry> config = topicConfig(plain);
        assertEquals("3600000", config.get("retention.ms").value());
        assertEquals(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG, config.get("retention.ms").source());
        assertEquals("compact", config.get("cleanup.policy").value());
        assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG, config.get("preallocate").source());
        // Every key has its effective value (these two were once empty).
        assertEquals("producer", config.get("compression.type").value());
        assertEquals("false", config.get("unclean.leader.election.enable").value());
        for (ConfigEntry entry : config.values()) {
            if (entry.value() != null && entry.value().isEmpty()) {
                assertTrue(Set.of("leader.replication.throttled.replicas",
                        "follower.replication.throttled.replicas").contains(entry.name()),
                        entry.name() + " has an empty value");
            }
        }
        // config/server.properties sets log.segment.bytes: Kafka names the
        // broker's static config as the source.
        assertEquals(ConfigEntry.ConfigSource.STATIC_BROKER_CONFIG, config.get("segment.bytes").source());

        admin.createPartitions(Map.of(plain, NewPartitions.increaseTo(5))).all().get();
        assertEquals(5, admin.describeTopics(List.of(plain)).allTopicNames().get().get(plain).partitions().size());

        admin.deleteTopics(List.of(plain, placed)).all().get();
        ExecutionException gone = assertThrows(ExecutionException.class,
                () -> admin.describeTopics(List.of(plain)).allTopicNames().get());
        assertInstanceOf(UnknownTopicOrPartitionException.class, gone.getCause());
    }

    @Test
    void describeClusterNamesThisBroker() throws Exception {
        DescribeClusterResult cluster = admin.describeCluster();
        Collection<Node> nodes = cluster.nodes().get();
        assertEquals(1, nodes.size());
        assertEquals(0, cluster.controller().get().id());
        assertNotNull(cluster.clusterId().get());
        String port = broker.bootstrap().split(":")[1];
        assertEquals(Integer.parseInt(port), nodes.iterator().next().port());
    }

    @Test
    void incrementalAlterConfigsSetsDeletesAppendsAndSubtracts() throws Exception {
        String topic = Clients.unique("admin-configs");
        Clients.createTopic(admin, topic, 1);
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        admin.incrementalAlterConfigs(Map.of(resource, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "60000"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("max.message.bytes", "2000000"), AlterConfigOp.OpType.SET))))
                .all().get();
        assertEquals("60000", topicConfig(topic).get("retention.ms").value());
        admin.incrementalAlterConfigs(Map.of(resource, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", ""), AlterConfigOp.OpType.DELETE)))).all().get();
        Map<String, ConfigEntry> after = topicConfig(topic);
        assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG, after.get("retention.ms").source());
        assertEquals("2000000", after.get("max.message.bytes").value(), "the other override stays");

        // APPEND and SUBTRACT work on list keys (cleanup.policy), from the
        // default when there is no override, as Kafka's ConfigAdminManager does.
        admin.incrementalAlterConfigs(Map.of(resource, List.of(
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND))))
                .all().get();
        assertEquals("delete,compact", topicConfig(topic).get("cleanup.policy").value());
        admin.incrementalAlterConfigs(Map.of(resource, List.of(
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "delete"), AlterConfigOp.OpType.SUBTRACT))))
                .all().get();
        assertEquals("compact", topicConfig(topic).get("cleanup.policy").value());
        // ... and on no other kind of key.
        ExecutionException refused = assertThrows(ExecutionException.class, () -> admin.incrementalAlterConfigs(
                Map.of(resource, List.of(new AlterConfigOp(new ConfigEntry("retention.ms", "1"),
                        AlterConfigOp.OpType.APPEND)))).all().get());
        assertInstanceOf(InvalidConfigurationException.class, refused.getCause());

        // validateOnly changes nothing.
        admin.incrementalAlterConfigs(Map.of(resource, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "5000"), AlterConfigOp.OpType.SET))),
                new org.apache.kafka.clients.admin.AlterConfigsOptions().validateOnly(true)).all().get();
        assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG, topicConfig(topic).get("retention.ms").source());
    }

    /** The legacy AlterConfigs (replace all overrides): in the 3.x client only (4.0 removed it). */
    @Test
    void legacyAlterConfigsReplacesTheOverrides() throws Exception {
        Method alterConfigs;
        try {
            alterConfigs = Admin.class.getMethod("alterConfigs", Map.class);
        } catch (NoSuchMethodException e) {
            org.junit.jupiter.api.Assumptions.abort("this client has no alterConfigs (removed in Kafka 4.0)");
            return;
        }
        String topic = Clients.unique("admin-legacy");
        admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1).configs(Map.of("retention.ms", "1000"))))
                .all().get();
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Object result = alterConfigs.invoke(admin,
                Map.of(resource, new Config(List.of(new ConfigEntry("segment.ms", "100000")))));
        Object all = result.getClass().getMethod("all").invoke(result);
        ((org.apache.kafka.common.KafkaFuture<?>) all).get();
        Map<String, ConfigEntry> config = topicConfig(topic);
        assertEquals("100000", config.get("segment.ms").value());
        assertEquals(ConfigEntry.ConfigSource.DEFAULT_CONFIG, config.get("retention.ms").source(),
                "AlterConfigs replaces every override");
    }

    @Test
    void brokerConfigsAreDescribed() throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.BROKER, "0");
        Config config = admin.describeConfigs(List.of(resource)).all().get().get(resource);
        Map<String, ConfigEntry> entries =
                config.entries().stream().collect(Collectors.toMap(ConfigEntry::name, e -> e));
        assertEquals("1048588", entries.get("message.max.bytes").value());
        assertTrue(entries.containsKey("log.retention.hours"));
    }

    @Test
    void listOffsetsEarliestLatestMaxTimestampAndForATime() throws Exception {
        String topic = Clients.unique("admin-offsets");
        Clients.createTopic(admin, topic, 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        long base = System.currentTimeMillis() - 60_000;
        produce(topic, 0, 20, base);
        Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> earliest =
                admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).all().get();
        assertEquals(0, earliest.get(tp).offset());
        assertEquals(20, admin.listOffsets(Map.of(tp, OffsetSpec.latest())).all().get().get(tp).offset());
        ListOffsetsResult.ListOffsetsResultInfo max =
                admin.listOffsets(Map.of(tp, OffsetSpec.maxTimestamp())).all().get().get(tp);
        assertEquals(19, max.offset());
        assertEquals(base + 19, max.timestamp());
        assertEquals(7, admin.listOffsets(Map.of(tp, OffsetSpec.forTimestamp(base + 7))).all().get().get(tp).offset());

        // deleteRecords answers the new low watermark and moves the log start.
        assertEquals(5, admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(5)))
                .lowWatermarks().get(tp).get().lowWatermark());
        assertEquals(5, admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).all().get().get(tp).offset());
    }

    @Test
    void consumerGroupsAreListedDescribedAlteredAndDeleted() throws Exception {
        String topic = Clients.unique("admin-groups");
        String group = Clients.unique("admin-g");
        Clients.createTopic(admin, topic, 2);
        produce(topic, 0, 10, System.currentTimeMillis());
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);
        Map<String, Object> config = Map.of(ConsumerConfig.GROUP_ID_CONFIG, group,
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        try (KafkaConsumer<String, String> consumer = Clients.consumer(broker.bootstrap(), config)) {
            consumer.subscribe(List.of(topic));
            java.time.Instant deadline = java.time.Instant.now().plus(Clients.WAIT);
            while (consumer.assignment().size() < 2 && java.time.Instant.now().isBefore(deadline)) {
                consumer.poll(java.time.Duration.ofMillis(100));
            }
            consumer.commitSync(Map.of(p0, new OffsetAndMetadata(4)));

            Collection<ConsumerGroupListing> listed = admin.listConsumerGroups().all().get();
            assertTrue(listed.stream().anyMatch(g -> g.groupId().equals(group)), "listed: " + listed);
            ConsumerGroupDescription described =
                    admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            assertEquals(1, described.members().size());
            assertEquals(Set.of(p0, p1), described.members().iterator().next().assignment().topicPartitions());
            assertEquals("range", described.partitionAssignor());

            ExecutionException busy = assertThrows(ExecutionException.class,
                    () -> admin.deleteConsumerGroups(List.of(group)).all().get());
            assertInstanceOf(GroupNotEmptyException.class, busy.getCause());
        }
        Map<TopicPartition, OffsetAndMetadata> offsets =
                admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        assertEquals(4, offsets.get(p0).offset());
        admin.alterConsumerGroupOffsets(group, Map.of(p0, new OffsetAndMetadata(8), p1, new OffsetAndMetadata(0)))
                .all().get();
        offsets = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        assertEquals(8, offsets.get(p0).offset());
        assertEquals(0, offsets.get(p1).offset());
        admin.deleteConsumerGroupOffsets(group, Set.of(p1)).all().get();
        offsets = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
        assertFalse(offsets.containsKey(p1), "p1's offset deleted: " + offsets);
        admin.deleteConsumerGroups(List.of(group)).all().get();
        assertFalse(admin.listConsumerGroups().all().get().stream().anyMatch(g -> g.groupId().equals(group)));
    }

    @Test
    void electLeadersAnswersElectionNotNeededForAPreferredLeader() throws Exception {
        String topic = Clients.unique("admin-elect");
        Clients.createTopic(admin, topic, 1);
        TopicPartition tp = new TopicPartition(topic, 0);
        Map<TopicPartition, Optional<Throwable>> result =
                admin.electLeaders(ElectionType.PREFERRED, Set.of(tp)).partitions().get();
        assertInstanceOf(ElectionNotNeededException.class, result.get(tp).orElseThrow());
    }

    @Test
    void describeLogDirsGivesEachReplicasDirectorySizeAndLag() throws Exception {
        String topic = Clients.unique("admin-logdirs");
        Clients.createTopic(admin, topic, 2);
        produce(topic, 0, 50, System.currentTimeMillis());
        Map<Integer, Map<String, LogDirDescription>> all =
                admin.describeLogDirs(List.of(0)).allDescriptions().get();
        Map<String, LogDirDescription> dirs = all.get(0);
        assertEquals(Set.of(broker.logDir().toString()), dirs.keySet(), "the one log.dirs entry");
        LogDirDescription dir = dirs.get(broker.logDir().toString());
        assertEquals(null, dir.error());
        TopicPartition p0 = new TopicPartition(topic, 0);
        TopicPartition p1 = new TopicPartition(topic, 1);
        ReplicaInfo written = dir.replicaInfos().get(p0);
        Path segment = broker.logDir().resolve(topic + "-0").resolve("00000000000000000000.log");
        assertEquals(Files.size(segment), written.size(), "the segment's bytes");
        assertEquals(0, written.offsetLag());
        assertFalse(written.isFuture());
        assertEquals(0, dir.replicaInfos().get(p1).size());
        assertTrue(dir.totalBytes().orElseThrow() > 0);
        assertTrue(dir.usableBytes().orElseThrow() > 0);
        assertTrue(dir.totalBytes().orElseThrow() >= dir.usableBytes().orElseThrow());
        // Asked for one partition (describeReplicaLogDirs), one answer.
        TopicPartitionReplica replica = new TopicPartitionReplica(topic, 0, 0);
        DescribeReplicaLogDirsResult.ReplicaLogDirInfo info =
                admin.describeReplicaLogDirs(List.of(replica)).all().get().get(replica);
        assertEquals(broker.logDir().toString(), info.getCurrentReplicaLogDir());
        assertEquals(null, info.getFutureReplicaLogDir());
    }

    @Test
    void describeLogDirsNamesEachDirectoryWithTheReplicasInIt() throws Exception {
        Path first = Files.createTempDirectory("ferrolog-dir-a");
        Path second = Files.createTempDirectory("ferrolog-dir-b");
        String topic = Clients.unique("admin-two-dirs");
        try (Ferrolog two = Ferrolog.start("log.dirs=" + first + "," + second);
                Admin twoAdmin = Clients.admin(two.bootstrap())) {
            Clients.createTopic(twoAdmin, topic, 4);
            Map<String, LogDirDescription> dirs =
                    twoAdmin.describeLogDirs(List.of(0)).allDescriptions().get().get(0);
            assertEquals(Set.of(first.toString(), second.toString()), dirs.keySet());
            int replicas = 0;
            for (Map.Entry<String, LogDirDescription> dir : dirs.entrySet()) {
                for (TopicPartition tp : dir.getValue().replicaInfos().keySet()) {
                    assertTrue(Files.isDirectory(Path.of(dir.getKey(), tp.topic() + "-" + tp.partition())),
                            tp + " is where it is said to be");
                    replicas++;
                }
                assertFalse(dir.getValue().replicaInfos().isEmpty(), "new partitions go to both dirs");
            }
            assertEquals(4, replicas);
        }
    }

    /**
     * Calls ferrolog does not implement yet must fail cleanly with
     * UNSUPPORTED_VERSION, and the connection must stay usable.
     */
    @Test
    void unimplementedCallsAnswerUnsupportedVersion() throws Exception {
        ExecutionException acls = assertThrows(ExecutionException.class, () -> admin.describeAcls(
                org.apache.kafka.common.acl.AclBindingFilter.ANY).values().get());
        // Served, and without an authorizer Kafka's answer: SECURITY_DISABLED.
        assertInstanceOf(org.apache.kafka.common.errors.SecurityDisabledException.class, acls.getCause(),
                "DescribeAcls");
        ExecutionException reassign = assertThrows(ExecutionException.class,
                () -> admin.listPartitionReassignments().reassignments().get());
        assertInstanceOf(UnsupportedVersionException.class, reassign.getCause(), "ListPartitionReassignments");
        // Still served.
        assertEquals(1, admin.describeCluster().nodes().get().size());
    }
}

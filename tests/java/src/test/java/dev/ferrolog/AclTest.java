package dev.ferrolog;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Kafka 3.9's kafka-acls against ferrolog's AclAuthorizer: ACLs written
 * straight into ZooKeeper by the tool's own AclAuthorizer
 * (--authorizer-properties zookeeper.connect=...) are enforced by the
 * broker through the change notification, and ACLs added, listed and
 * removed over the admin API (--bootstrap-server) are what the tool reads
 * back from ZooKeeper. The Java producer sees TopicAuthorizationException.
 */
class AclTest {
    private static final String ACLS = "kafka.admin.AclCommand";

    @BeforeAll
    static void needsTheTools() {
        Assumptions.assumeTrue(KafkaTool.classpath() != null, "no -Dkafka.tools.classpath");
    }

    private static KafkaTool.Outcome acls(String... args) throws Exception {
        return KafkaTool.run(ACLS, null, args).ok();
    }

    /** Whether a send to `topic` is refused for authorization. */
    private static boolean refused(KafkaProducer<String, String> producer, String topic) throws Exception {
        try {
            producer.send(new ProducerRecord<>(topic, "k", "v")).get();
            return false;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof TopicAuthorizationException) {
                return true;
            }
            throw e;
        }
    }

    @Test
    void kafkaAclsWritesZooKeeperAndTheAdminApiAndTheBrokerEnforcesBoth() throws Exception {
        try (ZooKeeper zk = ZooKeeper.start();
                Ferrolog broker = Ferrolog.start("zookeeper.connect=" + zk.connectString(), "broker.id=0",
                        "authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
                        "allow.everyone.if.no.acl.found=true")) {
            String zkProps = "zookeeper.connect=" + zk.connectString();
            try (Admin admin = Clients.admin(broker.bootstrap())) {
                Clients.createTopic(admin, "acl-open", 1);
                Clients.createTopic(admin, "acl-guarded", 1);
            }
            try (KafkaProducer<String, String> producer = Clients.producer(broker.bootstrap(),
                    Map.of("max.block.ms", 20000, "delivery.timeout.ms", 20000, "request.timeout.ms", 10000))) {
                assertTrue(!refused(producer, "acl-guarded"));
                // The tool's own AclAuthorizer writes /kafka-acl and a change
                // notification; the broker picks it up without a restart.
                acls("--authorizer-properties", zkProps, "--add", "--deny-principal", "User:ANONYMOUS",
                        "--operation", "Write", "--topic", "acl-guarded");
                Instant deadline = Instant.now().plus(Duration.ofSeconds(30));
                boolean enforced = false;
                while (!enforced && Instant.now().isBefore(deadline)) {
                    enforced = refused(producer, "acl-guarded");
                    if (!enforced) {
                        Thread.sleep(200);
                    }
                }
                assertTrue(enforced, "the DENY written to ZooKeeper by kafka-acls was not enforced in 30 s");
                assertTrue(!refused(producer, "acl-open"));

                // Over the admin API: listed, added to, read back from ZooKeeper.
                String listed = acls("--bootstrap-server", broker.bootstrap(), "--list", "--topic",
                        "acl-guarded").stdout();
                assertTrue(listed.contains("principal=User:ANONYMOUS") && listed.contains("operation=WRITE")
                        && listed.contains("permissionType=DENY"), listed);
                acls("--bootstrap-server", broker.bootstrap(), "--add", "--allow-principal", "User:alice",
                        "--operation", "Read", "--group", "acl-", "--resource-pattern-type", "prefixed");
                String fromZooKeeper = acls("--authorizer-properties", zkProps, "--list").stdout();
                assertTrue(fromZooKeeper.contains("name=acl-, patternType=PREFIXED")
                        && fromZooKeeper.contains("principal=User:alice"), fromZooKeeper);

                // Removed over the admin API: writes go through again.
                acls("--bootstrap-server", broker.bootstrap(), "--remove", "--force", "--topic", "acl-guarded");
                deadline = Instant.now().plus(Duration.ofSeconds(30));
                while (refused(producer, "acl-guarded")) {
                    assertTrue(Instant.now().isBefore(deadline), "the removal was not enforced in 30 s");
                    Thread.sleep(200);
                }
                String remaining = acls("--authorizer-properties", zkProps, "--list").stdout();
                assertTrue(!remaining.contains("acl-guarded"), remaining);
                assertEquals(1, remaining.lines().filter(l -> l.contains("principal=User:alice")).count(),
                        remaining);
            }
        }
    }
}

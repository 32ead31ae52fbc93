package dev.ferrolog;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;

/**
 * A real Kafka 3.9 broker (id 0) in ZooKeeper mode, run from the Maven jars
 * of -Dkafka.tools.classpath, with its data under `dir/logs` and its log in
 * `dir/kafka.log`.
 */
final class KafkaBroker {
    private KafkaBroker() {}

    static Process start(ZooKeeper zk, String chroot, Path dir, int port) throws IOException {
        Path config = dir.resolve("server.properties");
        Files.writeString(config, String.join("\n",
                "broker.id=0",
                "listeners=PLAINTEXT://127.0.0.1:" + port,
                "log.dirs=" + dir.resolve("logs"),
                "zookeeper.connect=" + zk.connectString() + chroot,
                "offsets.topic.replication.factor=1",
                "group.initial.rebalance.delay.ms=0") + "\n");
        Path log4j = dir.resolve("log4j.properties");
        Files.writeString(log4j, "log4j.rootLogger=INFO, stdout\n"
                + "log4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
                + "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
                + "log4j.appender.stdout.layout.ConversionPattern=%p %m%n\n");
        return new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx512m", "-Dlog4j.configuration=file:" + log4j, "-cp", KafkaTool.classpath(),
                "kafka.Kafka", config.toString())
                .redirectErrorStream(true)
                .redirectOutput(dir.resolve("kafka.log").toFile())
                .start();
    }

    /** Waits (90 s at most) for Kafka's start-up line. */
    static void awaitStarted(Path dir, Process kafka) throws Exception {
        Path log = dir.resolve("kafka.log");
        Instant deadline = Instant.now().plus(Duration.ofSeconds(90));
        while (Instant.now().isBefore(deadline)) {
            if (Files.exists(log) && Files.readString(log).contains("[KafkaServer id=0] started")) {
                return;
            }
            if (!kafka.isAlive()) {
                throw new AssertionError("Kafka exited: " + Files.readString(log));
            }
            Thread.sleep(200);
        }
        throw new AssertionError("Kafka did not start: " + Files.readString(log));
    }
}

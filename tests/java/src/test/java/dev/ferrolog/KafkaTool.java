package dev.ferrolog;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One of Kafka's own command-line tools (the class a bin/kafka-*.sh script
 * runs), as `java -cp <kafka 3.9's jars> <class> <args>`: the classpath
 * comes from -Dkafka.tools.classpath, which scripts/test.sh writes with
 * Maven from tests/java/tools/pom.xml.
 */
final class KafkaTool {
    static final String TOPICS = "org.apache.kafka.tools.TopicCommand";
    static final String CONFIGS = "kafka.admin.ConfigCommand";
    static final String CONSUMER_GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand";
    static final String CONSOLE_PRODUCER = "kafka.tools.ConsoleProducer";
    static final String CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer";
    static final String GET_OFFSETS = "org.apache.kafka.tools.GetOffsetShell";
    static final String DELETE_RECORDS = "org.apache.kafka.tools.DeleteRecordsCommand";
    static final String LEADER_ELECTION = "org.apache.kafka.tools.LeaderElectionCommand";
    static final String LOG_DIRS = "org.apache.kafka.tools.LogDirsCommand";
    static final String PRODUCER_PERF_TEST = "org.apache.kafka.tools.ProducerPerformance";
    static final String VERIFIABLE_PRODUCER = "org.apache.kafka.tools.VerifiableProducer";
    static final String VERIFIABLE_CONSUMER = "org.apache.kafka.tools.VerifiableConsumer";
    static final String DUMP_LOG = "kafka.tools.DumpLogSegments";

    /** What a tool printed and how it exited. */
    record Outcome(int exitCode, String stdout, String stderr) {
        Outcome ok() {
            if (exitCode != 0) {
                throw new AssertionError("exit " + exitCode + "\nstdout:\n" + stdout + "\nstderr:\n" + stderr);
            }
            return this;
        }
    }

    private KafkaTool() {}

    static String classpath() {
        return System.getProperty("kafka.tools.classpath");
    }

    static Outcome run(String mainClass, String stdin, String... args) throws IOException, InterruptedException {
        Path log4j = Files.createTempFile("tool-log4j", ".properties");
        Files.writeString(log4j, "log4j.rootLogger=WARN, stderr\n"
                + "log4j.appender.stderr=org.apache.log4j.ConsoleAppender\n"
                + "log4j.appender.stderr.Target=System.err\n"
                + "log4j.appender.stderr.layout=org.apache.log4j.PatternLayout\n"
                + "log4j.appender.stderr.layout.ConversionPattern=[%p] %m (%c)%n\n");
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx512m", "-Dlog4j.configuration=file:" + log4j, "-cp", classpath(), mainClass));
        command.addAll(List.of(args));
        Path out = Files.createTempFile("tool-out", ".txt");
        Path err = Files.createTempFile("tool-err", ".txt");
        Process process = new ProcessBuilder(command)
                .redirectOutput(out.toFile())
                .redirectError(err.toFile())
                .start();
        try (OutputStream input = process.getOutputStream()) {
            if (stdin != null) {
                input.write(stdin.getBytes(StandardCharsets.UTF_8));
            }
        }
        if (!process.waitFor(180, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError(mainClass + " did not finish within 180 s: " + Files.readString(err));
        }
        Outcome outcome = new Outcome(process.exitValue(), Files.readString(out), Files.readString(err));
        Files.deleteIfExists(out);
        Files.deleteIfExists(err);
        Files.deleteIfExists(log4j);
        return outcome;
    }
}

package dev.ferrolog;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.TimeUnit;

/**
 * A real ZooKeeper server: Debian's `zookeeper` package (the jar the Rust
 * tests use too), standalone on a free 127.0.0.1 port with a temporary
 * data dir and a short tick. close() SIGKILLs it.
 */
final class ZooKeeper implements AutoCloseable {
    private static final String JAR = "/usr/share/java/zookeeper.jar";

    private final Path dir;
    private final int port;
    private final Process process;

    private ZooKeeper(Path dir, int port, Process process) {
        this.dir = dir;
        this.port = port;
        this.process = process;
    }

    static ZooKeeper start() throws IOException, InterruptedException {
        if (!Files.exists(Path.of(JAR))) {
            throw new IllegalStateException("ZooKeeper is not installed: run ./scripts/test.sh");
        }
        Path dir = Files.createTempDirectory("zookeeper");
        int port;
        try (ServerSocket socket = new ServerSocket(0)) {
            port = socket.getLocalPort();
        }
        Path data = Files.createDirectories(dir.resolve("data"));
        Path config = dir.resolve("zoo.cfg");
        Files.writeString(config, "tickTime=500\ndataDir=" + data + "\nclientPort=" + port
                + "\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\nminSessionTimeout=1000\n"
                + "maxSessionTimeout=60000\n");
        Process process = new ProcessBuilder(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx256m", "-Dzookeeper.admin.enableServer=false",
                "-cp", "/etc/zookeeper/conf:" + JAR,
                "org.apache.zookeeper.server.quorum.QuorumPeerMain", config.toString())
                .redirectErrorStream(true)
                .redirectOutput(dir.resolve("server.log").toFile())
                .start();
        ZooKeeper server = new ZooKeeper(dir, port, process);
        Instant deadline = Instant.now().plus(Duration.ofSeconds(60));
        while (true) {
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress("127.0.0.1", port), 500);
                return server;
            } catch (IOException notYet) {
                if (Instant.now().isAfter(deadline) || !process.isAlive()) {
                    server.close();
                    throw new IOException("ZooKeeper did not listen on " + port + ": "
                            + Files.readString(dir.resolve("server.log")));
                }
                Thread.sleep(50);
            }
        }
    }

    String connectString() {
        return "127.0.0.1:" + port;
    }

    @Override
    public void close() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
        Clients.deleteTree(dir);
    }
}

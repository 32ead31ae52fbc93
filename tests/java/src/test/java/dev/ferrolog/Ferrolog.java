package dev.ferrolog;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A real ferrolog broker process (the binary named by -Dferrolog.bin),
 * on an ephemeral 127.0.0.1 port with its own log directory, as the Rust
 * tests' BrokerProcess starts it. SIGKILL with {@link #kill()}; close()
 * shuts it down with SIGTERM and removes its directory.
 */
final class Ferrolog implements AutoCloseable {
    private static final Duration START_TIMEOUT = Duration.ofSeconds(60);

    private final Path logDir;
    private final boolean ownsDir;
    private final List<String> overrides;
    private Process process;
    private String bootstrap;
    private final Deque<String> lastLines = new ArrayDeque<>();

    private Ferrolog(Path logDir, boolean ownsDir, List<String> overrides) {
        this.logDir = logDir;
        this.ownsDir = ownsDir;
        this.overrides = overrides;
    }

    /** A single broker on the embedded store, with these key=value overrides. */
    static Ferrolog start(String... overrides) throws IOException {
        Path dir = Files.createTempDirectory("ferrolog-java");
        Ferrolog broker = new Ferrolog(dir, true, List.of(overrides));
        broker.launch(null);
        return broker;
    }

    /** A broker in `dir` (kept on close), e.g. one of a cluster. */
    static Ferrolog startIn(Path dir, String listener, String... overrides) throws IOException {
        Ferrolog broker = new Ferrolog(dir, false, List.of(overrides));
        broker.launch(listener);
        return broker;
    }

    private void launch(String listener) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(System.getProperty("ferrolog.bin"));
        command.add("--config");
        command.add(System.getProperty("ferrolog.config"));
        command.add("--override");
        command.add("log.dirs=" + logDir);
        command.add("--override");
        command.add("listeners=PLAINTEXT://" + (listener == null ? "127.0.0.1:0" : listener));
        // Brokers run side by side: none may take http.listener's 9644.
        command.add("--override");
        command.add("http.listener=http://127.0.0.1:0");
        for (String o : overrides) {
            command.add("--override");
            command.add(o);
        }
        ProcessBuilder builder = new ProcessBuilder(command)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD);
        builder.environment().put("RUST_LOG", "info");
        process = builder.start();
        LinkedBlockingQueue<String> lines = new LinkedBlockingQueue<>();
        Thread drain = new Thread(() -> {
            try (BufferedReader reader = new BufferedReader(
                    new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = reader.readLine()) != null) {
                    if (System.getenv("FERROLOG_TEST_ECHO") != null) {
                        System.err.println("[broker] " + line);
                    }
                    synchronized (lastLines) {
                        lastLines.addLast(line);
                        if (lastLines.size() > 200) {
                            lastLines.removeFirst();
                        }
                    }
                    lines.add(line);
                }
            } catch (IOException e) {
                // The process ended.
            }
        }, "ferrolog-stderr");
        drain.setDaemon(true);
        drain.start();
        Instant deadline = Instant.now().plus(START_TIMEOUT);
        while (Instant.now().isBefore(deadline)) {
            String line;
            try {
                line = lines.poll(100, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while the broker starts", e);
            }
            if (line != null && line.contains("started: listening on ")) {
                String rest = line.substring(line.indexOf("listening on ") + "listening on ".length());
                bootstrap = rest.split(",")[0].trim();
                return;
            }
            if (line == null && !process.isAlive()) {
                throw new IOException("ferrolog exited (" + process.exitValue() + "): " + recentLog());
            }
        }
        process.destroyForcibly();
        throw new IOException("ferrolog did not start within " + START_TIMEOUT + ": " + recentLog());
    }

    String bootstrap() {
        return bootstrap;
    }

    Path logDir() {
        return logDir;
    }

    String recentLog() {
        synchronized (lastLines) {
            return String.join("\n", lastLines);
        }
    }

    /** The address listener `name` is bound to ("listener NAME (...) bound to ADDRESS"). */
    String listenerAddress(String name) {
        synchronized (lastLines) {
            return lastLines.stream()
                    .filter(l -> l.contains("listener " + name + " (") && l.contains("bound to "))
                    .map(l -> l.substring(l.lastIndexOf("bound to ") + "bound to ".length()).trim())
                    .findFirst()
                    .orElseThrow(() -> new AssertionError("no listener " + name + ": " + recentLog()));
        }
    }

    /** Whether the broker logged a line containing `needle` (of the last 200). */
    boolean logged(String needle) {
        synchronized (lastLines) {
            return lastLines.stream().anyMatch(l -> l.contains(needle));
        }
    }

    /** SIGKILL, and wait for the process to be gone. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }

    /** SIGSTOP: the process stands still, its sockets and ZooKeeper session open. */
    void pause() throws IOException, InterruptedException {
        signal("STOP");
    }

    /** SIGCONT after {@link #pause}. */
    void resume() throws IOException, InterruptedException {
        signal("CONT");
    }

    private void signal(String name) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
        if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
            throw new IOException("kill -" + name + " " + process.pid() + " failed");
        }
    }

    /** Starts the broker again on the same port and directory. */
    void restart() throws IOException {
        launch(bootstrap);
    }

    boolean isAlive() {
        return process.isAlive();
    }

    /** A clean shutdown (SIGTERM), keeping the log directory. */
    void stop() throws InterruptedException {
        if (process.isAlive()) {
            process.destroy();
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    @Override
    public void close() throws IOException, InterruptedException {
        stop();
        if (ownsDir) {
            Clients.deleteTree(logDir);
        }
    }
}

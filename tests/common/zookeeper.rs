//! A real ZooKeeper server for tests: Debian's `zookeeper` package run as a
//! standalone server on a free 127.0.0.1 port with a temporary data dir.
//! Dropping it SIGKILLs the JVM.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The jar Debian's package installs; its manifest names its dependencies.
const ZOOKEEPER_JAR: &str = "/usr/share/java/zookeeper.jar";

pub struct ZooKeeperServer {
    child: Option<Child>,
    dir: tempfile::TempDir,
    pub port: u16,
}

impl ZooKeeperServer {
    /// Starts a server and waits until it accepts connections.
    pub fn start() -> ZooKeeperServer {
        assert!(
            Path::new(ZOOKEEPER_JAR).exists(),
            "ZooKeeper is not installed: run ./scripts/test.sh, which runs \
             `apt-get install zookeeper`"
        );
        let dir = tempfile::tempdir().expect("tempdir");
        let port = free_port();
        let mut server = ZooKeeperServer {
            child: None,
            dir,
            port,
        };
        server.write_config();
        server.resume();
        server
    }

    /// `127.0.0.1:<port>`.
    pub fn connect_string(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// SIGKILLs the server, keeping its data for [`Self::resume`].
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// SIGSTOPs the server: connections stay open and nothing answers, as
    /// with a server stuck in a long GC pause.
    pub fn freeze(&self) {
        self.signal("-STOP");
    }

    /// SIGCONTs a frozen server.
    pub fn thaw(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let child = self.child.as_ref().expect("running");
        let status = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill {signal} failed");
    }

    /// Starts the server again on the same port and data.
    pub fn resume(&mut self) {
        assert!(self.child.is_none(), "already running");
        let log = std::fs::File::create(self.dir.path().join("server.log")).expect("log file");
        let child = Command::new("java")
            .args([
                "-Xmx256m",
                "-Dzookeeper.admin.enableServer=false",
                "-cp",
                &format!("/etc/zookeeper/conf:{ZOOKEEPER_JAR}"),
                "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            ])
            .arg(self.config_path())
            .stdout(Stdio::from(log.try_clone().expect("log")))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("java runs (default-jre-headless is a dependency of zookeeper)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "ZooKeeper did not listen on {} within 60 s; its log:\n{}",
                self.port,
                std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn config_path(&self) -> PathBuf {
        self.dir.path().join("zoo.cfg")
    }

    fn write_config(&self) {
        let data = self.dir.path().join("data");
        std::fs::create_dir_all(&data).expect("data dir");
        // A short tick lets tests use session timeouts down to 1 s.
        std::fs::write(
            self.config_path(),
            format!(
                "tickTime=500\ndataDir={}\nclientPort={}\nclientPortAddress=127.0.0.1\n\
                 admin.enableServer=false\nminSessionTimeout=1000\nmaxSessionTimeout=60000\n\
                 4lw.commands.whitelist=*\n",
                data.display(),
                self.port
            ),
        )
        .expect("zoo.cfg");
    }
}

impl Drop for ZooKeeperServer {
    fn drop(&mut self) {
        self.kill();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Expires `store`'s session from outside, as ZooKeeper's and Kafka's
/// tests do: a second handle joins the session and closes it. The store
/// reconnects at once when the twin takes its connection over and can take
/// it back before the twin's close lands, so this tries again until the
/// store reports a new session. `connect` is the store's connect string.
pub async fn expire_session(connect: &str, store: &ferrolog::metadata::ZooKeeperStore) {
    use ferrolog::metadata::{MetadataStore, ZooKeeperStore};
    let mut sessions = store.sessions();
    sessions.borrow_and_update();
    let (id, password) = store.session_credentials();
    for _ in 0..10 {
        let twin = ZooKeeperStore::connect_as(
            connect,
            Duration::from_secs(6),
            Duration::from_secs(20),
            Some((id, password.clone())),
        )
        .await
        .expect("join the session");
        let _ = twin.close().await;
        if tokio::time::timeout(Duration::from_secs(5), sessions.changed())
            .await
            .is_ok()
        {
            return;
        }
    }
    panic!("the session never expired");
}

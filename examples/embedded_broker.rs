//! Run a ferrolog broker inside your own program through the library API:
//!
//! ```text
//! cargo run --example embedded_broker -- [--log-dir DIR] [--port P] [--seconds N] [--set key=value]...
//! ```
//!
//! The configuration is built in code with
//! `BrokerConfig::from_properties`: `listeners=PLAINTEXT://127.0.0.1:<port>`
//! (port 0, the default, picks a free one), `log.dirs` the given directory or
//! a fresh temporary one (deleted on exit), plus any `--set key=value` (the
//! same Kafka keys as `server.properties`). `Broker::start` runs inside an
//! `actix_rt::System`; once it listens the example prints
//! `listening on <host:port>` on stdout, which is the address to give
//! clients. It then runs until SIGTERM or SIGINT, or for `--seconds N`, and
//! stops with `BrokerHandle::shutdown`, the clean stop (logs flushed,
//! checkpoints and the clean-shutdown marker written). The exit status is 0
//! after a clean shutdown.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use ferrolog::broker::Broker;
use ferrolog::config::BrokerConfig;
use tokio::signal::unix::{signal, SignalKind};

#[derive(Parser, Debug)]
#[command(about = "An in-process ferrolog broker on 127.0.0.1")]
struct Args {
    /// Where partition logs go; a temporary directory when absent.
    #[arg(long, value_name = "DIR")]
    log_dir: Option<PathBuf>,
    /// Port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Stop by itself after this many seconds (default: run until a signal).
    #[arg(long, value_name = "N")]
    seconds: Option<u64>,
    /// Any broker setting, as `key=value` with Kafka's names.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    settings: Vec<String>,
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args = Args::parse();

    // Keep the temporary directory alive until the broker has shut down.
    let (log_dir, _temporary) = match &args.log_dir {
        Some(dir) => (dir.clone(), None),
        None => match tempfile::tempdir() {
            Ok(dir) => (dir.path().to_path_buf(), Some(dir)),
            Err(e) => {
                eprintln!("embedded_broker: cannot create a temporary log dir: {e}");
                return ExitCode::FAILURE;
            }
        },
    };
    let mut overrides = vec![
        format!("listeners=PLAINTEXT://127.0.0.1:{}", args.port),
        format!("log.dirs={}", log_dir.display()),
        "broker.id=0".to_string(),
    ];
    overrides.extend(args.settings.iter().cloned());
    let config = match BrokerConfig::from_properties("", &overrides) {
        Ok((config, warnings)) => {
            for warning in warnings {
                eprintln!("embedded_broker: warning: {warning}");
            }
            config
        }
        Err(e) => {
            eprintln!("embedded_broker: bad configuration: {e}");
            return ExitCode::from(2);
        }
    };

    let system = actix_rt::System::new();
    let outcome = system.block_on(async move {
        // Install the handlers first: a signal during start-up still stops cleanly.
        let (mut term, mut int) = match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(term), Ok(int)) => (term, int),
            _ => return Err("cannot install signal handlers".to_string()),
        };
        let broker = Broker::start(config).await.map_err(|e| e.to_string())?;
        println!("listening on {}", broker.bound);
        let _ = std::io::stdout().flush();
        let deadline = async {
            match args.seconds {
                Some(seconds) => tokio::time::sleep(Duration::from_secs(seconds)).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = term.recv() => eprintln!("embedded_broker: SIGTERM, shutting down"),
            _ = int.recv() => eprintln!("embedded_broker: SIGINT, shutting down"),
            _ = deadline => eprintln!("embedded_broker: time is up, shutting down"),
        }
        broker.shutdown().await.map_err(|e| e.to_string())
    });
    match outcome {
        Ok(()) => {
            eprintln!("embedded_broker: shut down cleanly");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("embedded_broker: {e}");
            ExitCode::FAILURE
        }
    }
}

//! What the broker examples share: the command-line flags that configure
//! an in-process broker on 127.0.0.1, and the run loop (start, print
//! `listening on <host:port>` on stdout, serve until SIGTERM/SIGINT or
//! `--seconds`, shut down cleanly; exit 0 after a clean shutdown).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use ferrolog::broker::{BrokerBuilder, StopReason, StopSignals};
use ferrolog::config::BrokerConfig;

#[derive(clap::Args, Debug)]
pub struct BrokerArgs {
    /// Where partition logs go; a temporary directory when absent.
    #[arg(long, value_name = "DIR")]
    pub log_dir: Option<PathBuf>,
    /// Port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Stop by itself after this many seconds (default: run until a signal).
    #[arg(long, value_name = "N")]
    pub seconds: Option<u64>,
    /// Any broker setting, as `key=value` with Kafka's names.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub settings: Vec<String>,
}

/// Configure a broker from `args`, let `build` add to it, and run it.
pub fn run(
    name: &str,
    args: &BrokerArgs,
    build: impl FnOnce(BrokerConfig) -> BrokerBuilder + 'static,
) -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    // Keep the temporary directory alive until the broker has shut down.
    let (log_dir, _temporary) = match &args.log_dir {
        Some(dir) => (dir.clone(), None),
        None => match tempfile::tempdir() {
            Ok(dir) => (dir.path().to_path_buf(), Some(dir)),
            Err(e) => {
                eprintln!("{name}: cannot create a temporary log dir: {e}");
                return ExitCode::FAILURE;
            }
        },
    };
    let mut overrides = vec![
        format!("listeners=PLAINTEXT://127.0.0.1:{}", args.port),
        // Any free port: several examples may run side by side.
        "http.listener=http://127.0.0.1:0".to_string(),
        format!("log.dirs={}", log_dir.display()),
        "broker.id=0".to_string(),
        // One broker: internal topics cannot have three replicas.
        "offsets.topic.replication.factor=1".to_string(),
    ];
    overrides.extend(args.settings.iter().cloned());
    let config = match BrokerConfig::from_properties("", &overrides) {
        Ok((config, warnings)) => {
            for warning in warnings {
                eprintln!("{name}: warning: {warning}");
            }
            config
        }
        Err(e) => {
            eprintln!("{name}: bad configuration: {e}");
            return ExitCode::from(2);
        }
    };
    let deadline = args.seconds.map(Duration::from_secs);
    let system = actix_rt::System::new();
    let outcome = system.block_on(async move {
        // Install the handlers first: a signal during start-up still stops cleanly.
        let signals = StopSignals::install().map_err(|e| e.to_string())?;
        let broker = build(config).start().await.map_err(|e| e.to_string())?;
        println!("listening on {}", broker.bound);
        let _ = std::io::stdout().flush();
        broker
            .serve_until_stopped(signals, deadline)
            .await
            .map_err(|e| e.to_string())
    });
    match outcome {
        Ok(StopReason::Signal(reason)) => {
            if reason == "deadline" {
                eprintln!("{name}: time is up");
            }
            eprintln!("{name}: shut down cleanly");
            ExitCode::SUCCESS
        }
        Ok(StopReason::Fatal(cause)) => {
            eprintln!("{name}: stopped after a failure: {cause}");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("{name}: {e}");
            ExitCode::FAILURE
        }
    }
}

//! The `ferrolog` daemon: `ferrolog --config server.properties [--override key=value]...`.

// As in the library: no unwrap/expect outside tests (clippy, in CI).
#![deny(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use ferrolog::broker::{Broker, StopReason, StopSignals};
use ferrolog::config::BrokerConfig;

#[derive(Parser, Debug)]
#[command(
    version,
    about = "A Kafka-compatible commit-log broker",
    long_about = "Without a command, runs the broker: ferrolog --config server.properties [--override key=value]...\nWith one, runs that tool against a cluster (Kafka's protocol, so Apache Kafka too).",
    args_conflicts_with_subcommands = true
)]
struct Args {
    /// A Kafka `server.properties` file (runs the broker).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Set a property, as Kafka's `--override key=value`; later wins.
    #[arg(long = "override", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
    #[command(subcommand)]
    command: Option<ferrolog::cli::Command>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Some(command) = args.command {
        // A tool: it prints what it did; its own messages go to stderr.
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
        return ferrolog::cli::run(command);
    }
    let Some(config_file) = args.config else {
        eprintln!("ferrolog: --config FILE runs the broker; `ferrolog help` lists the tools");
        return ExitCode::from(2);
    };
    // Milliseconds: a failover or a controlled shutdown is read from the
    // logs of several brokers side by side.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .format_timestamp_millis()
        .init();
    // A panic is contained by its actor's supervisor; log it as one line
    // through `log` like everything else (the supervisor logs the restart).
    std::panic::set_hook(Box::new(|info| {
        let thread = std::thread::current();
        log::error!("panic on thread {}: {info}", thread.name().unwrap_or("?"));
    }));
    // Arms the fail points named in FAILPOINTS (only in builds with the
    // `failpoints` feature; tests use them to inject panics and disk errors).
    #[cfg(feature = "failpoints")]
    let _failpoints = fail::FailScenario::setup();
    let config = match BrokerConfig::load(&config_file, &args.overrides) {
        Ok(config) => config,
        Err(e) => {
            log::error!("cannot start: {e}");
            eprintln!("ferrolog: {e}");
            return ExitCode::from(2);
        }
    };
    raise_open_file_limit();
    let system = actix_rt::System::new();
    let outcome = system.block_on(async move {
        // Before starting: a SIGTERM during start-up must still shut down cleanly.
        let signals =
            StopSignals::install().map_err(|e| format!("cannot install signal handlers: {e}"))?;
        let broker = Broker::start(config).await.map_err(|e| e.to_string())?;
        match broker.serve_until_stopped(signals, None).await {
            Ok(StopReason::Signal(_)) => Ok(()),
            Ok(StopReason::Fatal(cause)) => Err(format!("stopped after a failure: {cause}")),
            Err(e) => Err(e.to_string()),
        }
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            log::error!("{e}");
            ExitCode::FAILURE
        }
    }
}

/// Every segment holds open files (log, offset index, time index), so a
/// broker with many partitions needs many descriptors: raise the soft
/// RLIMIT_NOFILE to the hard limit, as a Kafka operator's `ulimit -n` would.
fn raise_open_file_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain syscalls on a struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return;
        }
        if limit.rlim_cur >= limit.rlim_max {
            return;
        }
        let before = limit.rlim_cur;
        limit.rlim_cur = limit.rlim_max;
        if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 {
            log::info!(
                "open file limit raised from {before} to {} (the hard limit)",
                limit.rlim_max
            );
        } else {
            log::warn!(
                "cannot raise the open file limit above {before}: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

//! `ferrolog <command>`: the operator's tools in the broker's binary. They
//! speak the Kafka protocol to `--bootstrap-server` (so they work against
//! Apache Kafka too), print tables for people and `--json` for scripts,
//! and exit with a code that says what went wrong:
//!
//! - 0: done;
//! - 1: the cluster refused or failed the operation (its Kafka error is
//!   printed);
//! - 2: the command line or `--command-config` is wrong;
//! - 3: no broker could be reached.
//!
//! `--command-config FILE` takes Kafka client properties:
//! `security.protocol` (PLAINTEXT or SASL_PLAINTEXT in this version),
//! `sasl.mechanism` and `sasl.jaas.config` with `username` and `password`.

mod acls;
mod cluster;
mod configs;
mod connection;
mod dump_log;
mod groups;
mod perf;
mod tail;
mod topics;
mod users;

use std::path::PathBuf;
use std::process::ExitCode;

pub use acls::AclsAction;
pub use configs::ConfigsAction;
pub use connection::CliError;
pub use dump_log::DumpLogArgs;
pub use groups::GroupsAction;
pub use perf::PerfAction;
pub use tail::TailArgs;
pub use topics::TopicsAction;
pub use users::UsersAction;

/// A tool of the `ferrolog` binary.
#[derive(clap::Subcommand, Debug)]
pub enum Command {
    /// Topics: list, describe, create, delete, add partitions.
    Topics {
        /// What to do.
        #[command(subcommand)]
        action: TopicsAction,
        /// How to reach the cluster.
        #[command(flatten)]
        connection: ConnectionArgs,
    },
    /// Consumer groups: list, describe with lag.
    Groups {
        /// What to do.
        #[command(subcommand)]
        action: GroupsAction,
        /// How to reach the cluster.
        #[command(flatten)]
        connection: ConnectionArgs,
    },
    /// Topic and broker configs: describe, alter.
    Configs {
        /// What to do.
        #[command(subcommand)]
        action: ConfigsAction,
        /// How to reach the cluster.
        #[command(flatten)]
        connection: ConnectionArgs,
    },
    /// ACLs: list, add, remove (the ACL authorizer's).
    Acls {
        /// What to do.
        #[command(subcommand)]
        action: AclsAction,
        /// How to reach the cluster.
        #[command(flatten)]
        connection: ConnectionArgs,
    },
    /// SCRAM users: list, add, delete (KIP-554).
    Users {
        /// What to do.
        #[command(subcommand)]
        action: UsersAction,
        /// How to reach the cluster.
        #[command(flatten)]
        connection: ConnectionArgs,
    },
    /// Load: produce or consume records and report records/s, MB/s and
    /// request latency.
    Perf {
        /// What to do.
        #[command(subcommand)]
        action: PerfAction,
        /// How to reach the cluster.
        #[command(flatten)]
        connection: ConnectionArgs,
    },
    /// Read a topic and print its records (--format, --from-beginning).
    Tail(TailArgs),
    /// Decode a partition's .log, .index and .timeindex files (no broker
    /// needed); --verify checks every CRC and index entry.
    DumpLog(DumpLogArgs),
    /// The cluster: its brokers, its controller, and the partitions that
    /// are under-replicated or offline.
    Cluster {
        /// How to reach the cluster.
        #[command(flatten)]
        connection: ConnectionArgs,
    },
}

/// How a tool reaches the cluster, and how it prints.
#[derive(clap::Args, Debug, Clone)]
pub struct ConnectionArgs {
    /// A broker to start from, `host:port` (a comma-separated list is tried
    /// in order). Required.
    #[arg(long, value_name = "HOST:PORT", global = true)]
    pub bootstrap_server: Option<String>,
    /// Kafka client properties: security.protocol, sasl.mechanism,
    /// sasl.jaas.config.
    #[arg(long, value_name = "FILE", global = true)]
    pub command_config: Option<PathBuf>,
    /// Print JSON instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
}

/// Runs `command`; the exit code as the module documents.
pub fn run(command: Command) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("ferrolog: cannot start a runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let outcome = runtime.block_on(async move {
        match command {
            Command::Topics { action, connection } => topics::run(action, &connection).await,
            Command::Groups { action, connection } => groups::run(action, &connection).await,
            Command::Configs { action, connection } => configs::run(action, &connection).await,
            Command::Cluster { connection } => cluster::run(&connection).await,
            Command::DumpLog(args) => dump_log::run(&args),
            Command::Tail(args) => tail::run(&args).await,
            Command::Perf { action, connection } => perf::run(action, &connection).await,
            Command::Acls { action, connection } => acls::run(action, &connection).await,
            Command::Users { action, connection } => users::run(action, &connection).await,
        }
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ferrolog: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// Prints `value` as JSON, or `table` for people.
fn print(json: bool, value: &impl serde::Serialize, table: impl FnOnce() -> String) {
    if json {
        match serde_json::to_string_pretty(value) {
            Ok(text) => println!("{text}"),
            Err(e) => eprintln!("ferrolog: cannot print JSON: {e}"),
        }
    } else {
        println!("{}", table());
    }
}

/// A table with `header`, one row per entry of `rows`.
fn table(header: &[&str], rows: Vec<Vec<String>>) -> String {
    let mut table = comfy_table::Table::new();
    table
        .load_style(comfy_table::presets::NOTHING)
        .set_header(header.iter().map(|h| h.to_string()));
    for row in rows {
        table.add_row(row);
    }
    table.trim_fmt()
}

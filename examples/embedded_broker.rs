//! Run a ferrolog broker inside your own program through the library API:
//!
//! ```text
//! cargo run --example embedded_broker -- [--log-dir DIR] [--port P] [--seconds N] [--set key=value]...
//! ```
//!
//! The configuration is built in code with `BrokerConfig::from_properties`:
//! `listeners=PLAINTEXT://127.0.0.1:<port>` (port 0, the default, picks a
//! free one), `log.dirs` the given directory or a fresh temporary one
//! (deleted on exit), plus any `--set key=value` (the same Kafka keys as
//! `server.properties`). `Broker::builder(config).start()` runs inside an
//! `actix_rt::System`; once it listens the example prints
//! `listening on <host:port>` on stdout, which is the address to give
//! clients. It then runs until SIGTERM or SIGINT, or for `--seconds N`
//! (`BrokerHandle::serve_until_stopped`), and stops cleanly (logs flushed,
//! checkpoints and the clean-shutdown marker written). The exit status is 0
//! after a clean shutdown. `examples/common` holds this run loop; the
//! extension examples use it too.

mod common;

use std::process::ExitCode;

use clap::Parser;
use ferrolog::broker::Broker;

#[derive(Parser, Debug)]
#[command(about = "An in-process ferrolog broker on 127.0.0.1")]
struct Args {
    #[command(flatten)]
    broker: common::BrokerArgs,
}

fn main() -> ExitCode {
    let args = Args::parse();
    common::run("embedded_broker", &args.broker, Broker::builder)
}

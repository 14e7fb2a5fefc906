//! `hopless-server`: `hopless serve` before the `hopless` CLI has it. Same flags.

use clap::Parser;

#[global_allocator]
static A: hopless::Hopless = hopless::Hopless;

#[derive(Parser)]
#[command(
    name = "hopless-server",
    version,
    about = "hopless-kv over the Redis protocol, with Redis's RDB snapshots"
)]
struct Cli {
    #[command(flatten)]
    serve: hopless_server::ServeArgs,
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = hopless_server::run(cli.serve.into()) {
        eprintln!("hopless-server: {e}");
        std::process::exit(1);
    }
}

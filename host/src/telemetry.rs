//! Logging is set up once, here: `RUST_LOG` picks the filter, `info` by default. Logs go to
//! stderr so that stdout carries only what a command prints for scripts (ids, tables).

use tracing_subscriber::EnvFilter;

pub(crate) fn init() {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_http=info"));
    // A second call (tests, embedding) keeps the first subscriber.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false)
        .with_writer(std::io::stderr)
        // A log line that cannot be written (the disk holding a redirected stderr is full) is
        // dropped. By default the subscriber reports that with `eprintln!`, which panics when
        // stderr itself fails: the request that logged would die without an answer.
        .log_internal_errors(false)
        .try_init();
}

//! The server's layering, checked where the compiler cannot check it.
//!
//! Cargo already keeps the engine crates below the server (a crate cannot name one it does not
//! depend on). Two rules remain that only a test can hold (docs/architecture.md, "Crates" and
//! "Services take handles"):
//!
//! - no library crate under `crates/` depends on axum or on the server crate;
//! - only the edges of the server hold `AppState`, the whole node: below them a service takes the
//!   handles it uses (store, clock, bus, chain, …), so its signature says what it touches.

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    /// Where `AppState` may be named: what receives requests, streams or jobs and hands each
    /// service its handles, and what builds the node.
    const EDGES: &[&str] = &[
        // HTTP: the router, extractors, rate limits, streams, the OpenAPI document.
        "http/",
        // The web app, MCP and the v1 family call services as handlers do.
        "web/",
        "mcp/",
        "v1/",
        // Which job runs which service, and the workers' lanes.
        "scheduler/",
        // The simnet's axum adapters and `crucible simnet`.
        "chain/simnet/",
        "startup.rs",
        "state.rs",
        "demo.rs",
        "health.rs",
        "metrics.rs",
        // Server-sent event streams: they hold the node for as long as a client listens.
        "dungeon/watch.rs",
        "tournaments/live.rs",
        "tournaments/trades_feed.rs",
        // An extractor of the dungeon's run key.
        "dungeon/run_key.rs",
    ];

    /// Any module's routes and request extractors are edges too.
    const EDGE_FILE_NAMES: &[&str] = &["routes.rs", "extract.rs"];

    fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read a source directory") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                out.push(path);
            }
        }
    }

    fn is_edge(relative: &str) -> bool {
        EDGES
            .iter()
            .any(|edge| relative == *edge || (edge.ends_with('/') && relative.starts_with(edge)))
            || EDGE_FILE_NAMES
                .iter()
                .any(|name| relative.rsplit('/').next() == Some(*name))
    }

    #[test]
    fn only_the_edges_hold_the_node() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        let mut offenders = Vec::new();
        for file in files {
            let relative = file
                .strip_prefix(&src)
                .expect("under src")
                .to_string_lossy()
                .replace('\\', "/");
            if is_edge(&relative) || relative == "layering.rs" {
                continue;
            }
            let text = std::fs::read_to_string(&file).expect("read a source file");
            if text.contains("AppState") {
                offenders.push(relative);
            }
        }
        assert!(
            offenders.is_empty(),
            "these services name AppState; give them the handles they use instead \
             (docs/architecture.md, \"Services take handles\"): {offenders:?}"
        );
    }

    #[test]
    fn the_edge_list_names_only_what_exists() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        for edge in EDGES {
            assert!(
                src.join(edge).exists(),
                "{edge} is listed as an edge but does not exist"
            );
        }
    }

    #[test]
    fn no_library_crate_depends_on_axum_or_the_server() {
        let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates");
        let mut checked = 0;
        for entry in std::fs::read_dir(&crates).expect("read crates/") {
            let manifest = entry.expect("a directory entry").path().join("Cargo.toml");
            let Ok(text) = std::fs::read_to_string(&manifest) else {
                continue;
            };
            // Dependency lines start with the dependency's name (`axum = …`, `crucible = {…}`);
            // a renamed one names its package or path.
            for line in text.lines().map(str::trim) {
                let name = line.split(['=', ' ', '.']).next().unwrap_or_default();
                assert!(
                    !(name.starts_with("axum")
                        || name == "crucible"
                        || line.contains("package = \"crucible\"")
                        || line.contains("package = \"axum")
                        || line.contains("\"../../host\"")),
                    "{} depends on the server or axum (`{line}`): library crates stay below it",
                    manifest.display()
                );
            }
            checked += 1;
        }
        assert!(
            checked >= 6,
            "expected the six engine crates, found {checked}"
        );
    }
}

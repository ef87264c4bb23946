//! Many open event streams on one node: what each costs the server, and how long a board update
//! takes to reach every watcher of the board.
//!
//! The server runs in this process on one core (pinned to CPU 0 when `taskset` exists); the
//! watchers are a second process, this bench run again as a client (pinned to CPU 1), so the
//! server's resident memory is read alone, before and after every stream is open. Most watchers
//! watch one tournament's board (`/api/tournaments/{id}/live`), the rest dungeon runs
//! (`/api/dungeons/runs/{id}/watch`). Then a wallet registers in the tournament through the API
//! and each board watcher times the moment the new board (naming that wallet) reaches it.
//!
//! `cargo bench --bench watchers`; `BENCH_BOARD_WATCHERS` (default 90,000), `BENCH_RUN_WATCHERS`
//! (10,000, spread over `BENCH_RUNS` runs, default 100), `BENCH_BOARD_WALLETS` (the board's
//! size, default 20), `BENCH_PROTOCOL` (`http2`, the default: the watchers share HTTP/2
//! connections, as many streams on each as the server allows, the way browsers behind an HTTP/2
//! proxy and the proxy itself watch; or `http1`: a socket per stream). Over HTTP/1.1 each stream
//! is an open file of both processes: the bench raises the limit (it needs CAP_SYS_RESOURCE
//! beyond the hard limit) and otherwise opens as many streams as the hard limit allows, saying so.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a bench that cannot go on should fail loudly"
)]

mod support;

use std::io::{BufRead, BufReader, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use support::env_number;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Open files this bench needs at most: both ends of every stream live on this machine.
const OPEN_FILES: u64 = 400_000;
/// Source addresses the client spreads its connections over (each has ~28,000 ports).
const SOURCES: u8 = 12;
/// Streams the watchers put on one HTTP/2 connection: as many as the server allows.
const STREAMS_PER_H2_CONNECTION: usize = 256;

/// How the watchers reach the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    Http1,
    Http2,
}

impl Protocol {
    fn from_env() -> Self {
        match std::env::var("BENCH_PROTOCOL").as_deref() {
            Ok("http1") => Self::Http1,
            Ok("http2") | Err(_) => Self::Http2,
            Ok(other) => panic!("BENCH_PROTOCOL is http1 or http2, not {other}"),
        }
    }

    /// Sockets each process needs for `streams` streams.
    fn sockets(self, streams: u64) -> u64 {
        match self {
            Self::Http1 => streams,
            Self::Http2 => streams.div_ceil(STREAMS_PER_H2_CONNECTION as u64),
        }
    }
}

fn main() {
    if std::env::var_os("WATCHERS_CLIENT").is_some() {
        client::run();
        return;
    }
    let mut board_watchers = env_number("BENCH_BOARD_WATCHERS", 90_000);
    let mut run_watchers = env_number("BENCH_RUN_WATCHERS", 10_000);
    let runs = env_number("BENCH_RUNS", 100) as usize;
    let wallets = env_number("BENCH_BOARD_WALLETS", 20) as usize;
    let protocol = Protocol::from_env();
    let open_files = raise_open_files();
    // Each socket is an open file in this process (and in the client's): leave room for the
    // database, the listener and the rest.
    let room = open_files.saturating_sub(1_000);
    if protocol.sockets(board_watchers + run_watchers) > room {
        let scale = room as f64 / (board_watchers + run_watchers) as f64;
        board_watchers = (board_watchers as f64 * scale) as u64;
        run_watchers = (run_watchers as f64 * scale) as u64;
        println!(
            "open files are limited to {open_files} per process here: {} streams instead",
            board_watchers + run_watchers
        );
    }
    let pinned = support::wrk::pin_to_cpu(0);
    let server = support::serve_on_one_core_with(|config| {
        config.max_streams = 1_000_000;
        config.max_streams_per_client = 1_000_000;
    });
    let (base, state, backend) = server.parts();
    let runtime = support::runtime();
    let run_keys: Vec<(String, String)> = runtime.block_on(async {
        support::seed_tournament(&state, "trn_watch", wallets).await;
        // Room for the wallet whose registration is the update.
        sqlx::query(
            "UPDATE tournaments SET max_participants = max_participants + 1 WHERE id = 'trn_watch'",
        )
        .execute(state.store.write())
        .await
        .expect("room");
        let client = reqwest::Client::new();
        support::enter_runs(&client, &base, &state, "watch@example.com", runs).await
    });
    let board_frame = runtime.block_on(async {
        // The size of one board frame, as the watchers get it.
        let board: serde_json::Value = reqwest::get(format!(
            "{base}/api/tournaments/trn_watch/leaderboard?limit=100"
        ))
        .await
        .expect("board")
        .json()
        .await
        .expect("json");
        board.to_string().len()
    });
    let before = support::rss_mib();
    let tcp_before = tcp_memory_pages();

    let mut child = Command::new(std::env::current_exe().expect("exe"));
    child
        .env("WATCHERS_CLIENT", "1")
        .env(
            "BENCH_PROTOCOL",
            if protocol == Protocol::Http2 {
                "http2"
            } else {
                "http1"
            },
        )
        .env("WATCHERS_BASE", base.trim_start_matches("http://"))
        .env("WATCHERS_BOARD", "/api/tournaments/trn_watch/live")
        .env("WATCHERS_BOARD_COUNT", board_watchers.to_string())
        .env("WATCHERS_RUN_COUNT", run_watchers.to_string())
        .env(
            "WATCHERS_RUNS",
            run_keys
                .iter()
                .map(|(id, key)| format!("/api/dungeons/runs/{id}/watch {key}"))
                .collect::<Vec<_>>()
                .join(","),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut child = child.spawn().expect("client");
    let _ = Command::new("taskset")
        .args(["-a", "-p", "-c", "1", &child.id().to_string()])
        .output();
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let connected = lines.next().expect("client line").expect("read");
    // Let the streams settle (first frames written, buffers shrunk) before reading memory.
    std::thread::sleep(Duration::from_secs(3));
    let after = support::rss_mib();
    let open = state.streams.count(None);
    let per_stream_kib = (after - before) * 1024.0 / open as f64;
    let tcp_after = tcp_memory_pages();

    // A new wallet registers: every board watcher waits for a board that names it.
    let marker = crucible::domain::WalletAddress::from_public_key(&[7u8; 32]);
    let mut stdin = child.stdin.take().expect("stdin");
    // This process's CPU time from here to the last watcher's answer is the server's work of
    // the update (its registration and the fan-out): the bench's own thread only waits.
    let cpu_before = support::cpu_time();
    writeln!(stdin, "go {marker}").expect("go");
    stdin.flush().expect("flush");
    runtime.block_on(async {
        let registered = reqwest::Client::new()
            .post(format!("{base}/api/tournaments/trn_watch/register"))
            .json(&json!({"registeredWallet": marker.as_str(), "txSignature": null}))
            .send()
            .await
            .expect("register");
        assert_eq!(registered.status(), 201, "the marker wallet registered");
    });
    let updated = lines.next().expect("client result").expect("read");
    let server_cpu = support::cpu_time().saturating_sub(cpu_before);
    drop(stdin);
    let _ = child.wait();

    println!(
        "watchers, {backend}, {protocol:?}{}: {connected}; server: {open} streams open, resident {before:.0} -> {after:.0} MiB \
         = {per_stream_kib:.1} KiB per stream (the kernel's TCP buffers for both ends: {} MiB); \
         board frame {board_frame} bytes of JSON ({wallets} entries); {updated}; \
         the server's CPU time for the update: {} ms",
        if pinned {
            ", server pinned to CPU 0, watchers on CPU 1"
        } else {
            ""
        },
        tcp_after.saturating_sub(tcp_before) * 4 / 1024,
        server_cpu.as_millis(),
    );
}

/// Raise this process's open-file limit (soft and hard) with `prlimit`, or at least the soft
/// limit to the hard one; the client inherits it. The limit in force.
fn raise_open_files() -> u64 {
    let pid = std::process::id().to_string();
    let wanted = format!("--nofile={OPEN_FILES}:{OPEN_FILES}");
    let raised = Command::new("prlimit")
        .args(["--pid", &pid, &wanted])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if raised {
        return OPEN_FILES;
    }
    // Not allowed here (no CAP_SYS_RESOURCE): the hard limit is as far as this process goes.
    let hard = Command::new("prlimit")
        .args(["--pid", &pid, "--nofile", "--output=HARD", "--noheadings"])
        .output()
        .ok()
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .and_then(|text| text.trim().parse::<u64>().ok())
        .expect("the open-file limit");
    let _ = Command::new("prlimit")
        .args(["--pid", &pid, &format!("--nofile={hard}:{hard}")])
        .status();
    hard
}

/// Pages the kernel holds for TCP buffers now (`/proc/net/sockstat`, `TCP: … mem N`).
fn tcp_memory_pages() -> u64 {
    std::fs::read_to_string("/proc/net/sockstat")
        .ok()
        .and_then(|stat| {
            let line = stat.lines().find(|line| line.starts_with("TCP:"))?;
            let mut words = line.split_whitespace();
            words.find(|word| *word == "mem")?;
            words.next()?.parse().ok()
        })
        .unwrap_or(0)
}

/// The watchers: a process of its own, so its memory is not the server's.
mod client {
    use super::*;

    pub fn run() {
        let base: SocketAddr = std::env::var("WATCHERS_BASE")
            .expect("base")
            .parse()
            .expect("address");
        let board = std::env::var("WATCHERS_BOARD").expect("board path");
        let boards: usize = std::env::var("WATCHERS_BOARD_COUNT")
            .expect("count")
            .parse()
            .expect("number");
        let run_count: usize = std::env::var("WATCHERS_RUN_COUNT")
            .expect("count")
            .parse()
            .expect("number");
        let runs: Vec<String> = std::env::var("WATCHERS_RUNS")
            .expect("runs")
            .split(',')
            .map(str::to_owned)
            .collect();
        let runtime = support::runtime();
        runtime.block_on(async move {
            let (go, marker) = tokio::sync::watch::channel(None::<(Instant, Arc<[u8]>)>);
            let (done, mut finished) = tokio::sync::mpsc::unbounded_channel::<Duration>();
            let opening = Arc::new(tokio::sync::Semaphore::new(512));
            let (opened, mut open) = tokio::sync::mpsc::unbounded_channel::<()>();
            let started = Instant::now();
            let total = boards + run_count;
            let connections = match Protocol::from_env() {
                Protocol::Http1 => None,
                Protocol::Http2 => {
                    let count = total.div_ceil(STREAMS_PER_H2_CONNECTION);
                    let mut all = Vec::with_capacity(count);
                    for n in 0..count {
                        let source =
                            IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2 + (n % SOURCES as usize) as u8));
                        all.push(h2_connection(source, base).await);
                    }
                    Some(all)
                }
            };
            for n in 0..total {
                // A run's watchers show its key, as a player's spectators do.
                let (path, key) = if n < boards {
                    (board.clone(), None)
                } else {
                    let (path, key) = runs[n % runs.len()]
                        .split_once(' ')
                        .expect("path and key");
                    (path.to_owned(), Some(key.to_owned()))
                };
                let source = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2 + (n % SOURCES as usize) as u8));
                let (opening, opened, marker, done) =
                    (opening.clone(), opened.clone(), marker.clone(), done.clone());
                let timed = n < boards;
                let connection = connections.as_ref().map(|all| {
                    all[(n / STREAMS_PER_H2_CONNECTION) % all.len()].clone()
                });
                tokio::spawn(async move {
                    let permit = opening.acquire_owned().await.expect("semaphore");
                    let mut stream = match connection {
                        Some(connection) => {
                            Watch::open_h2(connection, &path, key.as_deref()).await
                        }
                        None => Watch::open_h1(source, base, &path, key.as_deref()).await,
                    };
                    drop(permit);
                    let _ = opened.send(());
                    if timed {
                        let elapsed = wait_for_marker(&mut stream, marker).await;
                        let _ = done.send(elapsed);
                    }
                    // Hold the stream, reading what comes, until the bench ends.
                    while stream.next_chunk().await.is_some() {}
                });
            }
            drop((opened, done));
            for _ in 0..total {
                open.recv().await.expect("a stream opened");
            }
            println!(
                "{total} streams opened in {:.1} s ({boards} on one board, {run_count} on {} dungeon runs)",
                started.elapsed().as_secs_f64(),
                runs.len()
            );
            let mut stdin = BufReader::new(std::io::stdin()).lines();
            let line = tokio::task::spawn_blocking(move || stdin.next())
                .await
                .expect("stdin")
                .expect("go line")
                .expect("read");
            let wallet = line.strip_prefix("go ").expect("go <wallet>").to_owned();
            let cpu_before = support::cpu_time();
            go.send_replace(Some((Instant::now(), Arc::from(wallet.into_bytes()))));
            let mut times = Vec::with_capacity(boards);
            let deadline = tokio::time::sleep(Duration::from_secs(30));
            tokio::pin!(deadline);
            while times.len() < boards {
                tokio::select! {
                    elapsed = finished.recv() => match elapsed {
                        Some(elapsed) => times.push(elapsed),
                        None => break,
                    },
                    () = &mut deadline => break,
                }
            }
            times.sort();
            let ms = |d: Option<&Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0);
            println!(
                "the update reached {}/{boards} board watchers: p50 {:.0} ms, p99 {:.0} ms, last {:.0} ms \
                 (the watchers' CPU time meanwhile: {} ms)",
                times.len(),
                ms(times.get(times.len() / 2)),
                ms(times.get(times.len() * 99 / 100)),
                ms(times.last()),
                support::cpu_time().saturating_sub(cpu_before).as_millis(),
            );
            std::process::exit(0);
        });
    }

    /// Connect from `source`, retrying while the server's backlog is full.
    async fn connect(source: IpAddr, server: SocketAddr) -> tokio::net::TcpStream {
        let mut tries = 0;
        loop {
            let socket = tokio::net::TcpSocket::new_v4().expect("socket");
            socket.bind(SocketAddr::new(source, 0)).expect("bind");
            match socket.connect(server).await {
                Ok(stream) => return stream,
                Err(error) if tries < 20 => {
                    tries += 1;
                    let _ = error;
                    tokio::time::sleep(Duration::from_millis(50 * tries)).await;
                }
                Err(error) => panic!("connect: {error}"),
            }
        }
    }

    type H2Sender = hyper::client::conn::http2::SendRequest<http_body_util::Empty<bytes::Bytes>>;

    /// An HTTP/2 connection (prior knowledge) whose windows never hold the server back: every
    /// stream on it gets the whole board at once.
    async fn h2_connection(source: IpAddr, server: SocketAddr) -> H2Sender {
        let stream = connect(source, server).await;
        let (sender, connection) =
            hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                .initial_connection_window_size(1 << 30)
                .initial_stream_window_size(1 << 16)
                .handshake(hyper_util::rt::TokioIo::new(stream))
                .await
                .expect("HTTP/2 handshake");
        tokio::spawn(connection);
        sender
    }

    /// One open event stream.
    enum Watch {
        Http1(tokio::net::TcpStream),
        Http2(hyper::body::Incoming),
    }

    impl Watch {
        /// Ask for `path` on a socket of its own and read until the response's status line.
        async fn open_h1(
            source: IpAddr,
            server: SocketAddr,
            path: &str,
            key: Option<&str>,
        ) -> Self {
            let mut stream = connect(source, server).await;
            let authorization = key.map_or(String::new(), |key| {
                format!("Authorization: Bearer {key}\r\n")
            });
            let request = format!(
                "GET {path} HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n{authorization}\r\n"
            );
            stream.write_all(request.as_bytes()).await.expect("request");
            let mut head = [0u8; 12];
            stream.read_exact(&mut head).await.expect("status line");
            assert_eq!(&head[9..12], b"200", "{}", String::from_utf8_lossy(&head));
            Self::Http1(stream)
        }

        /// Ask for `path` as one more stream of `connection`.
        async fn open_h2(mut connection: H2Sender, path: &str, key: Option<&str>) -> Self {
            let mut request = hyper::Request::get(format!("http://bench{path}"))
                .header("accept", "text/event-stream");
            if let Some(key) = key {
                request = request.header("authorization", format!("Bearer {key}"));
            }
            let request = request.body(http_body_util::Empty::new()).expect("request");
            connection.ready().await.expect("connection ready");
            let response = connection.send_request(request).await.expect("response");
            assert_eq!(response.status(), 200);
            Self::Http2(response.into_body())
        }

        /// What came next, or `None` once the stream ended.
        async fn next_chunk(&mut self) -> Option<bytes::Bytes> {
            match self {
                Self::Http1(stream) => {
                    let mut chunk = [0u8; 4096];
                    match stream.read(&mut chunk).await {
                        Ok(0) | Err(_) => None,
                        Ok(read) => Some(bytes::Bytes::copy_from_slice(&chunk[..read])),
                    }
                }
                Self::Http2(body) => loop {
                    use http_body_util::BodyExt;
                    match body.frame().await? {
                        Ok(frame) => {
                            if let Ok(data) = frame.into_data() {
                                return Some(data);
                            }
                        }
                        Err(_) => return None,
                    }
                },
            }
        }
    }

    /// Read until the marker comes by; the time since the bench said go.
    async fn wait_for_marker(
        stream: &mut Watch,
        mut marker: tokio::sync::watch::Receiver<Option<(Instant, Arc<[u8]>)>>,
    ) -> Duration {
        let (go, wanted) = marker
            .wait_for(Option::is_some)
            .await
            .expect("go")
            .clone()
            .expect("set");
        let wanted = std::str::from_utf8(&wanted).expect("an address");
        // The end of the last chunk, where the marker may have begun. Nothing is gathered
        // otherwise: 90,000 watchers each copying the board would make the client, not the
        // server, what is measured.
        let mut tail: Vec<u8> = Vec::new();
        loop {
            let chunk = stream
                .next_chunk()
                .await
                .expect("the stream ended before the update");
            if contains(&chunk, wanted) {
                return go.elapsed();
            }
            if !tail.is_empty() {
                tail.extend_from_slice(&chunk[..chunk.len().min(wanted.len() - 1)]);
                if contains(&tail, wanted) {
                    return go.elapsed();
                }
                tail.clear();
            }
            tail.extend_from_slice(&chunk[chunk.len().saturating_sub(wanted.len() - 1)..]);
        }
    }

    /// Whether `needle` is in `haystack`. Frames are JSON, so UTF-8 but for a chunk cut inside
    /// a character: the standard library's substring search on the text as it is.
    fn contains(haystack: &[u8], needle: &str) -> bool {
        match std::str::from_utf8(haystack) {
            Ok(text) => text.contains(needle),
            Err(_) => String::from_utf8_lossy(haystack).contains(needle),
        }
    }
}

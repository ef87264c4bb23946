//! `GET /metrics`: this node's counters in the Prometheus text format (version 0.0.4), for a
//! host's scraper. Requests are counted by route template (never by raw path, so the number of
//! series stays bounded), method and status, with a latency histogram per route; the rest is
//! read when scraped: agent ticks and webhook deliveries (counters kept as they happen), queue
//! depths (from the database) and open event streams.
//!
//! Who may scrape: with `CRUCIBLE_METRICS_TOKEN` set, a request bearing that token; without
//! it, only clients on this machine (the socket's peer, not `X-Forwarded-For`), so a default
//! install shows nothing to the internet (docs/operations.md).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::crypto::constant_time_eq;
use crate::db::{BATCH_SECONDS_BOUNDS, BatchSeconds, bucket_of};
use crate::state::AppState;

/// Upper bounds of the latency buckets, in seconds: the group committer's, so a request's
/// histogram and its batch's line up bucket for bucket.
const BUCKETS: [f64; BATCH_SECONDS_BOUNDS.len()] = BATCH_SECONDS_BOUNDS;

#[derive(Debug, Default)]
struct RouteStats {
    count: u64,
    /// Requests at or under each bound of [`BUCKETS`] (not cumulative; summed when rendered).
    buckets: [u64; BUCKETS.len()],
    sum_seconds: f64,
}

/// The node's counters.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    /// By (route, method, status).
    requests: Mutex<BTreeMap<(String, String, u16), RouteStats>>,
    pub ticks_ok: AtomicU64,
    pub ticks_failed: AtomicU64,
    /// Paper ticks run but not stored: the agent was stopped, or another node took its tick
    /// over (this node's claim had run out), meanwhile.
    pub ticks_dropped: AtomicU64,
    pub deliveries_sent: AtomicU64,
    pub deliveries_failed: AtomicU64,
}

/// Where the route-level layer writes the matched route for the outer layer to count under.
#[derive(Debug, Clone, Default)]
struct RouteLabel(Arc<OnceLock<String>>);

impl Metrics {
    fn observe(&self, route: String, method: String, status: u16, seconds: f64) {
        let mut requests = self
            .requests
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let stats = requests.entry((route, method, status)).or_default();
        stats.count += 1;
        stats.sum_seconds += seconds;
        if let Some(bucket) = bucket_of(seconds) {
            stats.buckets[bucket] += 1;
        }
    }

    /// Everything this node counts, with the gauges given, in the Prometheus text format.
    fn render(&self, gauges: &Gauges) -> String {
        let mut out = String::with_capacity(4096);
        out.push_str("# HELP crucible_http_requests_total HTTP requests answered, by route template, method and status.\n");
        out.push_str("# TYPE crucible_http_requests_total counter\n");
        let requests = self
            .requests
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for ((route, method, status), stats) in requests.iter() {
            let _ = writeln!(
                out,
                "crucible_http_requests_total{{route=\"{}\",method=\"{method}\",status=\"{status}\"}} {}",
                escape(route),
                stats.count
            );
        }
        out.push_str("# HELP crucible_http_request_duration_seconds Time to answer, by route template and method.\n");
        out.push_str("# TYPE crucible_http_request_duration_seconds histogram\n");
        let mut by_route: BTreeMap<(String, String), RouteStats> = BTreeMap::new();
        for ((route, method, _), stats) in requests.iter() {
            let merged = by_route.entry((route.clone(), method.clone())).or_default();
            merged.count += stats.count;
            merged.sum_seconds += stats.sum_seconds;
            for (into, from) in merged.buckets.iter_mut().zip(stats.buckets) {
                *into += from;
            }
        }
        drop(requests);
        for ((route, method), stats) in &by_route {
            let labels = format!("route=\"{}\",method=\"{method}\"", escape(route));
            histogram_series(
                &mut out,
                "crucible_http_request_duration_seconds",
                &labels,
                &BUCKETS,
                &stats.buckets,
                stats.sum_seconds,
                stats.count,
            );
        }
        counter(
            &mut out,
            "crucible_agent_ticks_total",
            "Agent ticks run on this node, by outcome.",
            &[
                ("outcome=\"ok\"", self.ticks_ok.load(Ordering::Relaxed)),
                (
                    "outcome=\"failed\"",
                    self.ticks_failed.load(Ordering::Relaxed),
                ),
                (
                    "outcome=\"dropped\"",
                    self.ticks_dropped.load(Ordering::Relaxed),
                ),
            ],
        );
        counter(
            &mut out,
            "crucible_webhook_deliveries_total",
            "Webhook delivery attempts made by this node, by outcome.",
            &[
                (
                    "outcome=\"sent\"",
                    self.deliveries_sent.load(Ordering::Relaxed),
                ),
                (
                    "outcome=\"failed\"",
                    self.deliveries_failed.load(Ordering::Relaxed),
                ),
            ],
        );
        gauge(
            &mut out,
            "crucible_queue_depth",
            "Work waiting in the database (shared by every node), by queue.",
            &[
                ("queue=\"jobs\"", gauges.jobs_due),
                ("queue=\"webhooks\"", gauges.deliveries_pending),
                ("queue=\"payouts\"", gauges.payouts_pending),
            ],
        );
        gauge(
            &mut out,
            "crucible_sse_subscribers",
            "Event streams open on this node.",
            &[("", gauges.streams_open)],
        );
        let lookups: Vec<(String, u64)> = gauges
            .caches
            .iter()
            .flat_map(|(cache, (hits, misses))| {
                [
                    (format!("cache=\"{cache}\",outcome=\"hit\""), *hits),
                    (format!("cache=\"{cache}\",outcome=\"miss\""), *misses),
                ]
            })
            .collect();
        let series: Vec<(&str, u64)> = lookups
            .iter()
            .map(|(labels, value)| (labels.as_str(), *value))
            .collect();
        counter(
            &mut out,
            "crucible_read_cache_lookups_total",
            "Reads of this node's caches (API keys, accounts, public tournament answers, dungeon runs), by outcome.",
            &series,
        );
        let (batches, writes) = gauges.group_commit;
        counter(
            &mut out,
            "crucible_group_commit_batches_total",
            "Transactions the group committer committed on this node (each one flush).",
            &[("", batches)],
        );
        counter(
            &mut out,
            "crucible_group_commit_writes_total",
            "Writes those transactions carried (dungeon turns, registrations, …).",
            &[("", writes)],
        );
        group_commit_histogram(
            &mut out,
            "crucible_group_commit_batch_duration_seconds",
            "Time from a batch's first statement to its commit's return, its flush included: no write is answered sooner.",
            &gauges.group_commit_seconds,
        );
        group_commit_histogram(
            &mut out,
            "crucible_group_commit_wait_seconds",
            "Time from a write's queueing to its answer: the wait for a batch, the batch, and a failed write's run alone.",
            &gauges.group_commit_wait_seconds,
        );
        group_commit_histogram(
            &mut out,
            "crucible_sqlite_wal_catch_up_seconds",
            "Time the SQLite write lane held every write to copy the WAL's newest pages into the database file, so the WAL can start over (none on PostgreSQL).",
            &gauges.group_commit_catch_up_seconds,
        );
        out
    }
}

/// A group-commit histogram ([`BATCH_SECONDS_BOUNDS`]) without labels, with its help and type.
fn group_commit_histogram(out: &mut String, name: &str, help: &str, times: &BatchSeconds) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
    histogram_series(
        out,
        name,
        "",
        &BATCH_SECONDS_BOUNDS,
        &times.buckets,
        times.seconds,
        times.count,
    );
}

/// One series of a histogram: its cumulative buckets (`counts` per bound, not cumulative; what
/// is over the last bound only in `count`), `+Inf`, sum and count, under `labels` (may be empty).
fn histogram_series(
    out: &mut String,
    name: &str,
    labels: &str,
    bounds: &[f64],
    counts: &[u64],
    sum: f64,
    count: u64,
) {
    let prefix = if labels.is_empty() {
        String::new()
    } else {
        format!("{labels},")
    };
    let mut cumulative = 0;
    for (bound, bucket) in bounds.iter().zip(counts) {
        cumulative += bucket;
        let _ = writeln!(out, "{name}_bucket{{{prefix}le=\"{bound}\"}} {cumulative}");
    }
    let _ = writeln!(out, "{name}_bucket{{{prefix}le=\"+Inf\"}} {count}");
    if labels.is_empty() {
        let _ = writeln!(out, "{name}_sum {sum}\n{name}_count {count}");
    } else {
        let _ = writeln!(
            out,
            "{name}_sum{{{labels}}} {sum}\n{name}_count{{{labels}}} {count}"
        );
    }
}

/// What is read at scrape time.
#[derive(Debug, Default)]
struct Gauges {
    jobs_due: i64,
    deliveries_pending: i64,
    payouts_pending: i64,
    streams_open: i64,
    caches: Vec<(&'static str, (u64, u64))>,
    /// Batches and writes of the group committer.
    group_commit: (u64, u64),
    /// How long its batches took.
    group_commit_seconds: BatchSeconds,
    /// How long its writes waited for their answer.
    group_commit_wait_seconds: BatchSeconds,
    /// How long its lane held the writes to catch up SQLite's WAL.
    group_commit_catch_up_seconds: BatchSeconds,
}

fn counter(out: &mut String, name: &str, help: &str, series: &[(&str, u64)]) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
    for (labels, value) in series {
        if labels.is_empty() {
            let _ = writeln!(out, "{name} {value}");
        } else {
            let _ = writeln!(out, "{name}{{{labels}}} {value}");
        }
    }
}

fn gauge(out: &mut String, name: &str, help: &str, series: &[(&str, i64)]) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
    for (labels, value) in series {
        if labels.is_empty() {
            let _ = writeln!(out, "{name} {value}");
        } else {
            let _ = writeln!(out, "{name}{{{labels}}} {value}");
        }
    }
}

/// A label value as the text format wants it.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The outer layer: times every request that reaches the node and counts it under the route
/// the inner layer found (`unmatched` for paths no route serves).
pub(crate) async fn track(
    State(metrics): State<Arc<Metrics>>,
    mut request: Request,
    next: Next,
) -> Response {
    let label = RouteLabel::default();
    request.extensions_mut().insert(label.clone());
    let method = request.method().to_string();
    let started = Instant::now();
    let response = next.run(request).await;
    let route = label
        .0
        .get()
        .cloned()
        .unwrap_or_else(|| "unmatched".to_owned());
    metrics.observe(
        route,
        method,
        response.status().as_u16(),
        started.elapsed().as_secs_f64(),
    );
    response
}

/// The route-level layer: names the route template that matched. The first router to match
/// names it (a page of the web app, not the API calls it makes in process).
pub(crate) async fn label_route(request: Request, next: Next) -> Response {
    if let (Some(label), Some(path)) = (
        request.extensions().get::<RouteLabel>(),
        request.extensions().get::<MatchedPath>(),
    ) {
        let _ = label.0.set(path.as_str().to_owned());
    }
    next.run(request).await
}

/// `GET /metrics`.
pub(crate) async fn scrape(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    let allowed = match state.config.metrics_token.as_ref() {
        Some(token) => crate::auth::keys::bearer(&headers)
            .is_some_and(|given| constant_time_eq(given.as_bytes(), token.expose().as_bytes())),
        None => peer.ip().is_loopback(),
    };
    if !allowed {
        return crate::http::ApiError::Forbidden(
            "metrics are served to this machine, or with CRUCIBLE_METRICS_TOKEN as a bearer token"
                .into(),
        )
        .into_response();
    }
    let gauges = match read_gauges(&state).await {
        Ok(gauges) => gauges,
        Err(error) => {
            tracing::warn!(%error, "metrics: cannot read queue depths");
            Gauges {
                streams_open: state.streams.count(None) as i64,
                caches: state.caches.stats().to_vec(),
                group_commit: state.store.group_commit_counts(),
                group_commit_seconds: state.store.group_commit_batch_seconds(),
                group_commit_wait_seconds: state.store.group_commit_wait_seconds(),
                group_commit_catch_up_seconds: state.store.group_commit_catch_up_seconds(),
                ..Gauges::default()
            }
        }
    };
    (
        StatusCode::OK,
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        state.metrics.render(&gauges),
    )
        .into_response()
}

async fn read_gauges(state: &AppState) -> sqlx::Result<Gauges> {
    let now = crate::clock::to_millis(state.now());
    let (jobs_due, deliveries_pending, payouts_pending): (i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT COUNT(*) FROM jobs WHERE done_at IS NULL AND due_at <= $1),
                (SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'pending'),
                (SELECT COUNT(*) FROM payouts WHERE status = 'pending')",
    )
    .bind(now)
    .fetch_one(state.store.read())
    .await?;
    Ok(Gauges {
        jobs_due,
        deliveries_pending,
        payouts_pending,
        streams_open: state.streams.count(None) as i64,
        caches: state.caches.stats().to_vec(),
        group_commit: state.store.group_commit_counts(),
        group_commit_seconds: state.store.group_commit_batch_seconds(),
        group_commit_wait_seconds: state.store.group_commit_wait_seconds(),
        group_commit_catch_up_seconds: state.store.group_commit_catch_up_seconds(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_render_as_counters_and_cumulative_histograms() {
        let metrics = Metrics::default();
        metrics.observe("/api/tournaments/{id}".into(), "GET".into(), 200, 0.0007);
        metrics.observe("/api/tournaments/{id}".into(), "GET".into(), 200, 0.003);
        metrics.observe("/api/tournaments/{id}".into(), "GET".into(), 404, 5.0);
        metrics.ticks_ok.fetch_add(3, Ordering::Relaxed);
        let text = metrics.render(&Gauges {
            streams_open: 2,
            ..Gauges::default()
        });
        assert!(text.contains(
            "crucible_http_requests_total{route=\"/api/tournaments/{id}\",method=\"GET\",status=\"200\"} 2\n"
        ));
        assert!(text.contains("status=\"404\"} 1\n"));
        let route = "route=\"/api/tournaments/{id}\",method=\"GET\"";
        assert!(text.contains(&format!(
            "duration_seconds_bucket{{{route},le=\"0.0005\"}} 0\n"
        )));
        assert!(text.contains(&format!(
            "duration_seconds_bucket{{{route},le=\"0.001\"}} 1\n"
        )));
        assert!(text.contains(&format!(
            "duration_seconds_bucket{{{route},le=\"0.005\"}} 2\n"
        )));
        assert!(text.contains(&format!(
            "duration_seconds_bucket{{{route},le=\"2.5\"}} 2\n"
        )));
        assert!(text.contains(&format!(
            "duration_seconds_bucket{{{route},le=\"+Inf\"}} 3\n"
        )));
        assert!(text.contains(&format!("duration_seconds_count{{{route}}} 3\n")));
        assert!(text.contains("crucible_agent_ticks_total{outcome=\"ok\"} 3\n"));
        assert!(text.contains("crucible_sse_subscribers 2\n"));
        assert!(text.contains("# TYPE crucible_queue_depth gauge\n"));
    }

    #[test]
    fn group_commit_batches_render_as_a_histogram_without_labels() {
        let mut buckets = [0; BATCH_SECONDS_BOUNDS.len()];
        buckets[0] = 3; // ≤ 0.5 ms
        buckets[7] = 1; // ≤ 0.1 s: a stalled flush
        let text = Metrics::default().render(&Gauges {
            group_commit: (5, 40),
            group_commit_seconds: BatchSeconds {
                buckets,
                seconds: 3.2,
                count: 5, // one took longer than the last bound
            },
            ..Gauges::default()
        });
        let name = "crucible_group_commit_batch_duration_seconds";
        assert!(text.contains(&format!("# TYPE {name} histogram\n")));
        assert!(text.contains(&format!("{name}_bucket{{le=\"0.0005\"}} 3\n")));
        assert!(text.contains(&format!("{name}_bucket{{le=\"0.05\"}} 3\n")));
        assert!(text.contains(&format!("{name}_bucket{{le=\"0.1\"}} 4\n")));
        assert!(text.contains(&format!("{name}_bucket{{le=\"2.5\"}} 4\n")));
        assert!(text.contains(&format!("{name}_bucket{{le=\"+Inf\"}} 5\n")));
        assert!(text.contains(&format!("{name}_sum 3.2\n{name}_count 5\n")));
        // The writes' waits, empty here, render beside them.
        let waits = "crucible_group_commit_wait_seconds";
        assert!(text.contains(&format!("# TYPE {waits} histogram\n")));
        assert!(text.contains(&format!("{waits}_bucket{{le=\"+Inf\"}} 0\n")));
        let stalls = "crucible_sqlite_wal_catch_up_seconds";
        assert!(text.contains(&format!("# TYPE {stalls} histogram\n")));
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}

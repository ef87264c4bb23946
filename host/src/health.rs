//! `GET /api/health`: is the server up, what this node does, and can it reach its database.
//! Never rate limited.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Json, extract::State};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::{router::OpenApiRouter, routes};

use crate::state::AppState;

pub(crate) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(health))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Health {
    /// `ok`, or `degraded` when a dependency fails.
    status: &'static str,
    version: &'static str,
    /// `ok`, `unavailable: …` (no answer, or no answer within 2 s) or `out of space: …`.
    database: String,
    /// `sqlite` (one node) or `postgres` (one of possibly several nodes).
    database_backend: String,
    /// How long the database took to answer this check, in milliseconds.
    database_latency_ms: f64,
    /// SQLite only: bytes free for the database on the data dir's filesystem. Below 16 MiB the
    /// node reports itself degraded: writes are about to be refused (they answer 503 then).
    #[serde(skip_serializing_if = "Option::is_none")]
    disk_free_bytes: Option<u64>,
    /// This node's name (new at each start), as it appears in leases and logs.
    node: String,
    /// What this node does besides answering requests: `scheduler` (jobs, agent ticks),
    /// `webhooks` (deliveries), `relay` (events to and from other nodes, PostgreSQL).
    roles: Vec<&'static str>,
}

/// How long the check waits for the database.
const PING_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Free space under which the node says its disk is full: a SQLite write needs room for its WAL
/// frames and checkpoints, and below this it fails with SQLITE_FULL.
const LOW_DISK_BYTES: u64 = 16 * 1024 * 1024;

/// Bytes an unprivileged process may still write on `dir`'s filesystem, if it can be read.
fn free_bytes(dir: &std::path::Path) -> Option<u64> {
    let stat = rustix::fs::statvfs(dir).ok()?;
    Some(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// Liveness, this node's roles and the database's state.
#[utoipa::path(get, path = "/api/health", operation_id = "get_health",
    security(()), tag = "platform",
    responses((status = 200, body = Health), (status = 503, body = Health)))]
async fn health(State(state): State<AppState>) -> Response {
    let started = std::time::Instant::now();
    // A balancer's check gives up after a few seconds; a database that is away must not hold
    // this one for the pool's whole connection wait.
    let ping = match tokio::time::timeout(PING_TIMEOUT, state.store.ping()).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(error)) => Err(error.to_string()),
        Err(_) => Err(format!("no answer within {} s", PING_TIMEOUT.as_secs())),
    };
    let backend = state.store.backend();
    let mut roles = Vec::new();
    if state.config.scheduler_interval_ms > 0 {
        roles.extend(["scheduler", "webhooks"]);
    }
    if backend == crate::db::Backend::Postgres {
        roles.push("relay");
    }
    let mut body = Health {
        status: "ok",
        version: env!("CARGO_PKG_VERSION"),
        database: "ok".into(),
        database_backend: backend.to_string(),
        database_latency_ms: started.elapsed().as_secs_f64() * 1000.0,
        disk_free_bytes: None,
        node: state.node_id.to_string(),
        roles,
    };
    if backend == crate::db::Backend::Sqlite {
        body.disk_free_bytes = free_bytes(&state.config.data_dir);
    }
    match ping {
        Ok(())
            if body
                .disk_free_bytes
                .is_some_and(|free| free < LOW_DISK_BYTES) =>
        {
            tracing::warn!(
                free = body.disk_free_bytes,
                "health check: the data dir's disk is full"
            );
            body.status = "degraded";
            body.database = "out of space: changes are refused until space is freed under the \
                             data dir; reads still work"
                .into();
            (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
        }
        Ok(()) => Json(body).into_response(),
        Err(error) => {
            tracing::warn!(%error, "health check: database unavailable");
            body.status = "degraded";
            body.database = format!("unavailable: {error}");
            (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response()
        }
    }
}

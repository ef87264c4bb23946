//! The delivery worker's one step, [`deliver_due`]: drop what revoked keys queued, lease due rows,
//! send each once (a few at a time), record how it went. At-least-once: a worker that dies after
//! sending but before recording leaves its lease to run out, and the row is sent again; the
//! `X-Svc-Delivery` id lets receivers drop the duplicate.

use std::sync::OnceLock;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream;
use tracing::Instrument;

use super::egress;
use super::outbox::{self, Claimed, Outcome};
use super::schedule::{self, AfterFailure};
use super::signing::{self, DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER};
use crate::crypto::random_base58;
use crate::state::AppState;

/// Requests in flight at once per worker: enough to hide a slow receiver, few enough to be polite.
const IN_FLIGHT: usize = 8;
/// Bytes of a failed response's body kept in the error text, to help the owner see why.
const BODY_EXCERPT: usize = 200;
const USER_AGENT: &str = concat!("Crucible-Webhooks/", env!("CARGO_PKG_VERSION"));

/// Deliver what is due now and return how many requests were sent. Several workers (threads or
/// nodes) may call this at once: each row is leased to one of them, for long enough to cover
/// its attempt, and a lease left by a worker that died is taken over once it has run out.
pub async fn deliver_due(state: &AppState) -> anyhow::Result<usize> {
    // One lease owner per call: two calls, even in one process, never hold the same row.
    let lease_owner = format!("whw_{}", random_base58(8));
    let timeout = Duration::from_millis(state.config.webhook_timeout_ms);
    let lease = chrono::Duration::from_std(timeout * 2)? + chrono::Duration::seconds(30);
    drop_revoked(state).await?;
    let mut sent = 0;
    loop {
        let claimed = outbox::claim(
            &state.store,
            &lease_owner,
            state.now(),
            lease,
            IN_FLIGHT as i64,
        )
        .await?;
        if claimed.is_empty() {
            return Ok(sent);
        }
        let results: Vec<anyhow::Result<bool>> = stream::iter(claimed)
            .map(|row| {
                let span = tracing::info_span!("webhook", delivery_id = %row.id, key_id = %row.key_id,
                                               event = %row.event, attempt = row.attempts);
                attempt(state, &lease_owner, row, timeout).instrument(span)
            })
            .buffer_unordered(IN_FLIGHT)
            .collect()
            .await;
        for result in results {
            sent += usize::from(result?);
        }
    }
}

/// A revoked (or expired) key's pending deliveries go to the dead letter unsent.
async fn drop_revoked(state: &AppState) -> sqlx::Result<()> {
    let now = crate::clock::to_millis(state.now());
    let dropped = sqlx::query(
        "UPDATE webhook_deliveries
         SET status = 'dead', dead_at = $1, lease_owner = NULL, lease_until = NULL,
             last_error = CASE WHEN (SELECT revoked_at FROM api_keys WHERE api_keys.id = webhook_deliveries.key_id) IS NOT NULL
                               THEN 'not sent: the API key was revoked'
                               ELSE 'not sent: the API key expired' END
         WHERE status = 'pending' AND key_id IN (
             SELECT id FROM api_keys WHERE revoked_at IS NOT NULL OR expires_at <= $1)
           AND (lease_until IS NULL OR lease_until <= $1)",
    )
    .bind(now)
    .execute(state.store.write())
    .await?;
    if dropped.rows_affected() > 0 {
        tracing::info!(
            count = dropped.rows_affected(),
            "dropped webhook deliveries of revoked or expired keys"
        );
    }
    Ok(())
}

/// One attempt of a leased row; `Ok(true)` when a request went out.
async fn attempt(
    state: &AppState,
    lease_owner: &str,
    row: Claimed,
    timeout: Duration,
) -> anyhow::Result<bool> {
    let secret = match signing_secret(state, &row).await? {
        Ok(secret) => secret,
        Err(Unsendable::Drop(reason)) => {
            tracing::info!(reason, "webhook dropped");
            let outcome = Outcome::Dead {
                status_code: None,
                error: reason,
            };
            outbox::record(&state.store, &row.id, lease_owner, state.now(), outcome).await?;
            return Ok(false);
        }
        Err(Unsendable::Retry(error)) => {
            tracing::error!(%error, "cannot sign webhook");
            fail(state, lease_owner, &row, None, &error).await?;
            return Ok(false);
        }
    };
    let signed = signing::sign(&row.payload, &secret);
    let (status_code, error) =
        send(&row, &signed, timeout, state.config.webhook_allow_private).await;
    match error {
        None => {
            tracing::info!(status_code, "webhook delivered");
            let outcome = Outcome::Delivered {
                status_code: status_code.unwrap_or_default(),
            };
            outbox::record(&state.store, &row.id, lease_owner, state.now(), outcome).await?;
        }
        Some(error) => {
            tracing::warn!(status_code, %error, "webhook attempt failed");
            fail(state, lease_owner, &row, status_code, &error).await?;
        }
    }
    Ok(true)
}

/// Why a row cannot be signed now.
enum Unsendable {
    /// For good: the key is gone, revoked or expired.
    Drop(&'static str),
    /// For now: the secret does not open (e.g. a wrong master key); retried on schedule.
    Retry(String),
}

async fn signing_secret(
    state: &AppState,
    row: &Claimed,
) -> sqlx::Result<Result<Vec<u8>, Unsendable>> {
    let Some(key) = outbox::key_state(&state.store, &row.key_id, state.now()).await? else {
        return Ok(Err(Unsendable::Drop(
            "not sent: the API key no longer exists",
        )));
    };
    if key.revoked {
        return Ok(Err(Unsendable::Drop("not sent: the API key was revoked")));
    }
    if key.expired {
        return Ok(Err(Unsendable::Drop("not sent: the API key expired")));
    }
    let Some(sealed) = key.secret_sealed else {
        return Ok(Err(Unsendable::Drop(
            "not sent: the API key has no webhook secret",
        )));
    };
    Ok(state
        .sealer
        .open(&sealed)
        .map_err(|error| Unsendable::Retry(format!("cannot open the webhook secret: {error}"))))
}

/// Record a failed attempt: retry on the schedule, or dead-letter after 24 h.
async fn fail(
    state: &AppState,
    lease_owner: &str,
    row: &Claimed,
    status_code: Option<u16>,
    error: &str,
) -> sqlx::Result<()> {
    let now = state.now();
    let outcome =
        match schedule::after_failure(row.created_at, row.attempts, now, &mut rand::thread_rng()) {
            AfterFailure::RetryAt(retry_at) => Outcome::Retry {
                status_code,
                error,
                retry_at,
            },
            AfterFailure::GiveUp => {
                tracing::warn!(
                    attempts = row.attempts,
                    "webhook dead-lettered after 24 h of failures"
                );
                Outcome::Dead { status_code, error }
            }
        };
    outbox::record(&state.store, &row.id, lease_owner, now, outcome).await?;
    Ok(())
}

/// The process's HTTP client: one connection pool for every delivery, redirects never followed
/// (a 3xx is a failed attempt: the owner should fix the URL, and we must not be bounced to
/// addresses the owner did not give).
/// Unless private addresses are allowed, names resolve to public addresses only
/// ([`egress::PublicOnly`]).
fn client(allow_private: bool) -> Result<&'static reqwest::Client, String> {
    static PUBLIC_ONLY: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    static ANY_ADDRESS: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    let (cell, guarded) = if allow_private {
        (&ANY_ADDRESS, false)
    } else {
        (&PUBLIC_ONLY, true)
    };
    cell.get_or_init(|| {
        let builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(USER_AGENT);
        let builder = if guarded {
            builder.dns_resolver(std::sync::Arc::new(egress::PublicOnly))
        } else {
            builder
        };
        builder
            .build()
            .map_err(|error| format!("cannot build the HTTP client: {error}"))
    })
    .as_ref()
    .map_err(Clone::clone)
}

/// POST the signed body; the response status (if any) and, unless it was 2xx, what went wrong.
async fn send(
    row: &Claimed,
    signed: &signing::SignedRequest,
    timeout: Duration,
    allow_private: bool,
) -> (Option<u16>, Option<String>) {
    if !allow_private && let Err(refused) = egress::check_literal(&row.url) {
        return (None, Some(refused));
    }
    let client = match client(allow_private) {
        Ok(client) => client,
        Err(error) => return (None, Some(error)),
    };
    let request = client
        .post(&row.url)
        .timeout(timeout)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(SIGNATURE_HEADER, &signed.signature_header)
        .header(DELIVERY_HEADER, &row.id)
        .header(EVENT_HEADER, &row.event)
        .body(signed.body.clone());
    let mut response = match request.send().await {
        Ok(response) => response,
        Err(error) => return (None, Some(describe(&error, timeout))),
    };
    let status = response.status();
    if status.is_success() {
        return (Some(status.as_u16()), None);
    }
    let mut excerpt = Vec::new();
    while excerpt.len() < BODY_EXCERPT {
        match response.chunk().await {
            Ok(Some(chunk)) => excerpt.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    excerpt.truncate(BODY_EXCERPT);
    let text = String::from_utf8_lossy(&excerpt);
    let text = text.trim();
    let error = if text.is_empty() {
        format!("HTTP {status}")
    } else {
        format!("HTTP {status}: {text}")
    };
    (Some(status.as_u16()), Some(error))
}

/// A transport error in words: the timeout, or the chain of causes reqwest keeps apart.
fn describe(error: &reqwest::Error, timeout: Duration) -> String {
    if error.is_timeout() {
        return format!("no response within {} ms", timeout.as_millis());
    }
    let mut text = if error.is_connect() {
        "connection failed".to_owned()
    } else {
        "request failed".to_owned()
    };
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

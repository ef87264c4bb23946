//! Browser sessions: a random token in the `session-token` cookie (HttpOnly, SameSite=Lax,
//! Secure when served over https), a server-side row keyed by the token's SHA-256, and a 30-day
//! lifetime that slides forward at most once a day (no write per request).

use axum::http::HeaderMap;
use axum::http::header::COOKIE;
use chrono::{DateTime, Duration, Utc};
use sqlx::AnyConnection;

use crate::clock::Clock;
use crate::clock::to_millis;
use crate::config::Config;
use crate::crypto::{random_base58, sha256_hex};
use crate::db::Store;

pub(crate) const COOKIE_NAME: &str = "session-token";
pub const LIFETIME_DAYS: i64 = 30;
/// How stale `last_seen_at` may get before a request slides the expiry forward.
const SLIDE_AFTER: Duration = Duration::days(1);

/// Create a session for `account_id` inside the caller's transaction. The token it returns goes
/// into the cookie; only its hash goes into the database.
pub(crate) async fn create(
    conn: &mut AnyConnection,
    account_id: &str,
    now: DateTime<Utc>,
) -> sqlx::Result<String> {
    let token = random_base58(32);
    let expires_at = now + Duration::days(LIFETIME_DAYS);
    sqlx::query(
        "INSERT INTO sessions (token_hash, account_id, created_at, expires_at, last_seen_at)
         VALUES ($1, $2, $3, $4, $3)",
    )
    .bind(sha256_hex(&token))
    .bind(account_id)
    .bind(to_millis(now))
    .bind(to_millis(expires_at))
    .execute(conn)
    .await?;
    Ok(token)
}

/// The account behind a live session token, sliding its lifetime if due.
pub(crate) async fn resolve(
    store: &Store,
    clock: &dyn Clock,
    token: &str,
) -> sqlx::Result<Option<String>> {
    let now = clock.now();
    let token_hash = sha256_hex(token);
    let row: Option<(String, i64)> = sqlx::query_as(
        // A suspended account's sessions end with the suspension (they are also deleted then);
        // the join makes that hold even for a session created in the same instant.
        "SELECT s.account_id, s.last_seen_at FROM sessions s JOIN accounts a ON a.id = s.account_id
         WHERE s.token_hash = $1 AND s.expires_at > $2 AND a.suspended_at IS NULL",
    )
    .bind(&token_hash)
    .bind(to_millis(now))
    .fetch_optional(store.read())
    .await?;
    let Some((account_id, last_seen)) = row else {
        return Ok(None);
    };
    if to_millis(now) - last_seen > SLIDE_AFTER.num_milliseconds() {
        let store = store.clone();
        let expires_at = to_millis(now + Duration::days(LIFETIME_DAYS));
        // Off the request path: a lost slide only means the session ends a day earlier.
        tokio::spawn(async move {
            let slid = sqlx::query(
                "UPDATE sessions SET last_seen_at = $1, expires_at = $2 WHERE token_hash = $3",
            )
            .bind(to_millis(now))
            .bind(expires_at)
            .bind(&token_hash)
            .execute(store.write())
            .await;
            if let Err(error) = slid {
                tracing::warn!(%error, "could not slide a session's expiry");
            }
        });
    }
    Ok(Some(account_id))
}

/// End the session with this token (logout). Unknown tokens are fine: the result is the same.
pub(crate) async fn delete(store: &Store, token: &str) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM sessions WHERE token_hash = $1")
        .bind(sha256_hex(token))
        .execute(store.write())
        .await?;
    Ok(())
}

/// The `session-token` value sent by the client, if any.
pub(crate) fn token_from_headers(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|cookies| cookies.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE_NAME)
        .map(|(_, value)| value.trim().to_owned())
        .filter(|value| !value.is_empty())
}

/// `Set-Cookie` value that stores `token` for the session's lifetime.
pub(crate) fn set_cookie(config: &Config, token: &str) -> String {
    format!(
        "{COOKIE_NAME}={token}; Path=/; HttpOnly; SameSite=Lax; Max-Age={}{}",
        LIFETIME_DAYS * 24 * 3600,
        secure_attribute(config)
    )
}

/// `Set-Cookie` value that makes the browser forget the session.
pub(crate) fn clear_cookie(config: &Config) -> String {
    format!(
        "{COOKIE_NAME}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0{}",
        secure_attribute(config)
    )
}

fn secure_attribute(config: &Config) -> &'static str {
    if config.public_url.starts_with("https://") {
        "; Secure"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn finds_the_session_cookie_among_others() {
        let mut headers = HeaderMap::new();
        headers.append(
            COOKIE,
            HeaderValue::from_static("theme=dark; session-token=abc123"),
        );
        assert_eq!(token_from_headers(&headers).as_deref(), Some("abc123"));
        let mut empty = HeaderMap::new();
        empty.append(COOKIE, HeaderValue::from_static("session-token="));
        assert_eq!(token_from_headers(&empty), None);
        assert_eq!(token_from_headers(&HeaderMap::new()), None);
    }
}

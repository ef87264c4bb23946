//! PostgreSQL `LISTEN/NOTIFY` channels among the nodes that share one database schema: the
//! plumbing under the event relay ([`super::relay`]) and the shared rate limits
//! (`http::rate_limit::gossip`). A notification is lossy: while a listening connection is down,
//! what was sent meanwhile is gone. So listeners learn when they reconnect, and each user
//! decides how to make up for the gap.

use std::future::Future;
use std::time::Duration;

use sqlx::postgres::PgListener;
use tokio::task::JoinHandle;

use crate::crypto::sha256_hex;
use crate::db::Store;

/// How long a listener waits before connecting again after losing its connection.
const RECONNECT_AFTER: Duration = Duration::from_millis(500);
/// Tries per `NOTIFY` before a payload is given up.
const NOTIFY_ATTEMPTS: u32 = 3;
/// PostgreSQL refuses payloads of 8,000 bytes or more; senders split below this.
pub(crate) const MAX_PAYLOAD: usize = 7_900;

/// A node's end of one channel: a task sending what the node has to say, and one listening
/// to the others. Dropping it (or [`Peer::stop`]) ends both.
#[derive(Debug)]
pub(crate) struct Peer {
    tasks: [JoinHandle<()>; 2],
}

impl Peer {
    /// Listen on the channel of `topic` (before this returns, so a node that cannot listen
    /// fails to start), then run `sender` with the store and the channel's name, and hand what
    /// the other nodes send to `on_payload` ([`listen_forever`]).
    pub(crate) async fn start<S>(
        store: &Store,
        database_url: &str,
        topic: &str,
        sender: impl FnOnce(Store, String) -> S,
        on_payload: impl FnMut(&str) + Send + 'static,
        on_reconnect: impl FnMut() + Send + 'static,
    ) -> sqlx::Result<Peer>
    where
        S: Future<Output = ()> + Send + 'static,
    {
        let channel = channel(store, topic).await?;
        let listener = listen(database_url, &channel).await?;
        let sending = tokio::spawn(sender(store.clone(), channel.clone()));
        let listening = tokio::spawn(listen_forever(
            listener,
            database_url.to_owned(),
            channel,
            on_payload,
            on_reconnect,
        ));
        Ok(Peer {
            tasks: [sending, listening],
        })
    }

    pub(crate) fn stop(&self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Drop for Peer {
    /// A node built and never served, or stopped, sends and hears nothing further.
    fn drop(&mut self) {
        self.stop();
    }
}

/// The channel for `topic` in the schema `store` works in. Deployments (and tests) that share
/// one database in different schemas must not hear each other; a schema name can be anything,
/// and a channel name is an identifier of at most 63 bytes, so it is hashed.
pub async fn channel(store: &Store, topic: &str) -> sqlx::Result<String> {
    let (schema,): (String,) = sqlx::query_as("SELECT current_schema()::text")
        .fetch_one(store.read())
        .await?;
    Ok(channel_for(topic, &schema))
}

pub(crate) fn channel_for(topic: &str, schema: &str) -> String {
    format!("crucible_{topic}_{}", &sha256_hex(schema)[..16])
}

/// A connection listening on `channel`.
pub(crate) async fn listen(database_url: &str, channel: &str) -> sqlx::Result<PgListener> {
    let mut listener = PgListener::connect(database_url).await?;
    listener.listen(channel).await?;
    Ok(listener)
}

/// A notification's statement. PostgreSQL gives a transaction that notifies an id of its own,
/// so its commit is a WAL record, and at the default `synchronous_commit` every one waited for
/// a flush of the WAL: one flush per relayed batch of events, beside the write lanes' own. A
/// notification is lossy by design (see the module's doc), and listeners hear it once it
/// commits, flushed or not; so its transaction commits without waiting (the setting is local
/// to that one statement's transaction). Measured in docs/benchmarks.md, session 44.
const SEND: &str = "SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, $2)";

/// Send `payload` on `channel`, retrying briefly; false when it was given up (logged).
pub(crate) async fn send(store: &Store, channel: &str, payload: &str) -> bool {
    for attempt in 1..=NOTIFY_ATTEMPTS {
        let sent = sqlx::query(SEND)
            .bind(channel)
            .bind(payload)
            .execute(store.write())
            .await;
        match sent {
            Ok(_) => return true,
            Err(error) if attempt == NOTIFY_ATTEMPTS => {
                tracing::warn!(%error, channel, "notification not sent to the other nodes");
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100 * u64::from(attempt))).await,
        }
    }
    false
}

/// Hand every payload heard on `listener` to `on_payload`, for good. When the connection
/// drops, listen again on a new one (rather than let the listener reconnect silently, so the
/// gap is known) and call `on_reconnect` once listening again.
pub(crate) async fn listen_forever(
    mut listener: PgListener,
    database_url: String,
    channel: String,
    mut on_payload: impl FnMut(&str) + Send,
    mut on_reconnect: impl FnMut() + Send,
) {
    loop {
        match listener.try_recv().await {
            Ok(Some(notification)) => on_payload(notification.payload()),
            Ok(None) | Err(_) => {
                tracing::warn!(channel, "lost a notification connection; reconnecting");
                listener = loop {
                    tokio::time::sleep(RECONNECT_AFTER).await;
                    match listen(&database_url, &channel).await {
                        Ok(listener) => break listener,
                        Err(error) => tracing::warn!(%error, channel, "cannot listen yet"),
                    }
                };
                tracing::info!(channel, "listening again");
                on_reconnect();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channels_are_identifiers_and_differ_per_schema_and_topic() {
        let public = channel_for("events", "public");
        assert!(public.len() <= 63);
        assert!(
            public
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        );
        assert_ne!(public, channel_for("events", "t_other"));
        assert_ne!(public, channel_for("limits", "public"));
        assert_eq!(public, channel_for("events", "public"));
    }
}

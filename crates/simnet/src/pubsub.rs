//! The simnet's PubSub: a node's subscriptions answered with its notification shapes, so
//! `confirmTransaction`, `onAccountChange`, `onSlotChange` and `onLogs` of `@solana/web3.js`
//! (and solana-py's websocket client) work unchanged:
//!
//! - `signatureSubscribe` (`commitment`, `enableReceivedNotification`): one
//!   `signatureNotification` once the transaction reaches the commitment, then the
//!   subscription ends, as on a node;
//! - `accountSubscribe` (`commitment`, `encoding`, `dataSlice`): the account after every
//!   transaction that wrote it;
//! - `slotSubscribe`: the newest slot whenever it moves;
//! - `logsSubscribe` (`"all"` or `{"mentions": [address]}`): each transaction's logs;
//! - and their `…Unsubscribe`.
//!
//! A [`Session`] is one connection's subscriptions, whatever carries its messages: the caller
//! feeds it the client's text messages ([`Session::on_text`]) and waits on [`Session::due`]
//! for what the ledger has to say, then sends every message either returns, in order. In
//! Crucible's server that caller is the websocket on `/simnet/rpc` (which also caps streams per
//! client and closes them on shutdown); a transport should read messages of at most
//! [`MAX_MESSAGE_BYTES`].
//!
//! A session hears the transactions this process lands (a broadcast from [`Simnet::send`]);
//! what it did not hear (a transaction landed before the subscription, by another process on
//! the same database, or while the session fell behind) it reads from the ledger: at subscribe
//! time, and every second for signatures still unseen. A `finalized` notification waits for the
//! transaction's finality on the simnet's clock. A session holds at most [`MAX_SUBSCRIPTIONS`]
//! subscriptions.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crucible_solana::tx::Pubkey;
use serde_json::{Value, json};
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::RecvError;

use crate::accounts::{self, Encoding, View};
use crate::executor::Account;
use crate::rpc::{error_reply, error_to_reply, parse_commitment, parse_key};
use crate::{Commitment, Executed, Simnet, SimnetError};

/// Subscriptions one connection may hold at once.
pub const MAX_SUBSCRIPTIONS: usize = 1_000;
/// The largest message a client may send (a transport refuses longer ones).
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;
/// How often signatures not yet seen are looked up in the ledger.
const UNSEEN_POLL: Duration = Duration::from_secs(1);
/// The longest a session sleeps before looking at the clock again: the simnet's clock may be a
/// test clock that real time does not move.
const MAX_NAP: Duration = Duration::from_millis(200);
/// How often slot subscribers see the idle chain advance (one slot).
const SLOT_TICK: Duration = Duration::from_millis(400);

/// Subscription ids, unique in this process.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A landed transaction as a subscription needs it.
#[derive(Debug, Clone)]
pub struct Landed {
    /// The slot it landed in.
    pub slot: u64,
    /// When it executed (ms on the simnet's clock).
    pub executed_at: i64,
    /// Its error, `None` when it succeeded.
    pub err: Option<Value>,
}

#[derive(Debug)]
enum LogsFilter {
    All,
    Mentions(Pubkey),
}

#[derive(Debug)]
enum Subscription {
    Signature {
        signature: String,
        commitment: Commitment,
        /// Known once the transaction landed: a `finalized` subscription waits on it.
        landed: Option<Landed>,
    },
    Account {
        key: Pubkey,
        commitment: Commitment,
        view: View,
    },
    Slot,
    Logs {
        filter: LogsFilter,
        commitment: Commitment,
    },
}

impl Subscription {
    fn kind(&self) -> &'static str {
        match self {
            Subscription::Signature { .. } => "signature",
            Subscription::Account { .. } => "account",
            Subscription::Slot => "slot",
            Subscription::Logs { .. } => "logs",
        }
    }
}

/// An account or logs notification waiting for its transaction's finality.
#[derive(Debug)]
struct Deferred {
    due_ms: i64,
    id: u64,
    event: Arc<Executed>,
}

/// Something a [`Session`] has to act on, from [`Session::due`]: hand it to
/// [`Session::on_due`].
#[derive(Debug)]
pub struct Due(Wake);

#[derive(Debug)]
enum Wake {
    Event(Result<Arc<Executed>, RecvError>),
    Timer,
    Poll,
}

/// One PubSub connection: its subscriptions, and what it owes the client.
pub struct Session {
    simnet: Arc<Simnet>,
    subscriptions: HashMap<u64, Subscription>,
    deferred: Vec<Deferred>,
    last_slot: u64,
    /// Messages to send, in order, after the current request or wake-up.
    outbox: Vec<Value>,
    events: Receiver<Arc<Executed>>,
    poll: tokio::time::Interval,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("subscriptions", &self.subscriptions.len())
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A session with no subscriptions; it hears every transaction landed from now on. Call
    /// it inside a tokio runtime (its ledger poll is a tokio timer).
    pub fn new(simnet: Arc<Simnet>) -> Self {
        let events = simnet.subscribe();
        let mut poll = tokio::time::interval(UNSEEN_POLL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Session {
            simnet,
            subscriptions: HashMap::new(),
            deferred: Vec::new(),
            last_slot: 0,
            outbox: Vec::new(),
            events,
            poll,
        }
    }

    /// Wait until the session has something to do: a transaction landed, a notification is
    /// due, or unseen signatures are to be looked up. Cancel-safe: dropping the future loses
    /// nothing, so it can race the client's next message in a `select!`.
    pub async fn due(&mut self) -> Due {
        let nap = self.nap();
        let unseen = self.has_unseen_signatures();
        let wake = tokio::select! {
            event = self.events.recv() => Wake::Event(event),
            () = tokio::time::sleep(nap.unwrap_or(Duration::from_secs(3600))), if nap.is_some() => Wake::Timer,
            _ = self.poll.tick(), if unseen => Wake::Poll,
        };
        Due(wake)
    }

    /// Act on `due`: the messages to send the client, in order (text, JSON-RPC notifications).
    /// `None` when the simnet is gone: close the connection.
    pub async fn on_due(&mut self, due: Due) -> Option<Vec<String>> {
        let outcome = match due.0 {
            Wake::Event(Ok(event)) => {
                self.on_landed(event).await;
                Ok(())
            }
            Wake::Event(Err(RecvError::Lagged(_))) => self.catch_up().await,
            Wake::Event(Err(RecvError::Closed)) => return None,
            Wake::Timer => self.on_timer().await,
            Wake::Poll => self.look_up_unseen().await,
        };
        if let Err(e) = outcome {
            tracing::warn!(error = %e, "simnet pubsub: ledger read failed");
        }
        Some(self.drain())
    }

    /// One text message from the client (a JSON-RPC request): its answer, then any
    /// notification it triggered, in the order to send them. A notification (no `id`) gets no
    /// answer: web3.js's keep-alive `ping` is one.
    pub async fn on_text(&mut self, text: &str) -> Vec<String> {
        self.request(text).await;
        self.drain()
    }

    /// A binary message: refused with a parse error (requests travel as text).
    pub fn on_binary(&mut self) -> Vec<String> {
        self.outbox.push(error_reply(
            Value::Null,
            -32700,
            "Parse error: send JSON-RPC requests as text frames",
        ));
        self.drain()
    }

    fn drain(&mut self) -> Vec<String> {
        self.outbox.drain(..).map(|m| m.to_string()).collect()
    }

    /// How long until something is due: a finalized notification, or a slot tick.
    fn nap(&self) -> Option<Duration> {
        let now = self.simnet.now_ms();
        let finality = self.simnet.finality_ms();
        let signature_dues = self.subscriptions.values().filter_map(|s| match s {
            Subscription::Signature {
                commitment: Commitment::Finalized,
                landed: Some(landed),
                ..
            } => Some(landed.executed_at + finality),
            _ => None,
        });
        let next_due = self
            .deferred
            .iter()
            .map(|d| d.due_ms)
            .chain(signature_dues)
            .min()
            .map(|due| Duration::from_millis(u64::try_from(due - now).unwrap_or(0)).min(MAX_NAP));
        let slot_tick = self
            .subscriptions
            .values()
            .any(|s| matches!(s, Subscription::Slot))
            .then_some(SLOT_TICK);
        match (next_due, slot_tick) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn has_unseen_signatures(&self) -> bool {
        self.subscriptions
            .values()
            .any(|s| matches!(s, Subscription::Signature { landed: None, .. }))
    }

    fn notify(&mut self, method: &str, id: u64, result: Value) {
        self.outbox.push(json!({"jsonrpc": "2.0", "method": method,
            "params": {"result": result, "subscription": id}}));
    }

    /// One JSON-RPC request from the client.
    async fn request(&mut self, text: &str) {
        let request: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => {
                self.outbox.push(error_reply(
                    Value::Null,
                    -32700,
                    &format!("Parse error: {e}"),
                ));
                return;
            }
        };
        let id = request.get("id").cloned();
        let method = request
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let params = request
            .get("params")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        // A notification (no id) asks for no answer: web3.js's keep-alive `ping` is one.
        let Some(id) = id else { return };
        // The answer goes first; notifications it triggers follow it.
        let at = self.outbox.len();
        match self.call(&method, &params).await {
            Ok(result) => self
                .outbox
                .insert(at, json!({"jsonrpc": "2.0", "id": id, "result": result})),
            Err(error) => self.outbox.insert(at, error_to_reply(id, &method, error)),
        }
    }

    async fn call(&mut self, method: &str, params: &[Value]) -> Result<Value, SimnetError> {
        let config = params.get(1).unwrap_or(&Value::Null);
        let commitment = match config.get("commitment") {
            None | Some(Value::Null) => Commitment::Finalized,
            Some(c) => parse_commitment(c)?,
        };
        if let Some(kind) = method.strip_suffix("Unsubscribe") {
            let id = params.first().and_then(Value::as_u64);
            return match id.and_then(|id| self.subscriptions.get(&id).map(|s| (id, s.kind()))) {
                Some((id, k)) if k == kind => {
                    self.subscriptions.remove(&id);
                    self.deferred.retain(|d| d.id != id);
                    Ok(json!(true))
                }
                _ => Err(SimnetError::params("Invalid subscription id.")),
            };
        }
        let subscription = match method {
            "signatureSubscribe" => {
                let signature = params.first().and_then(Value::as_str).unwrap_or_default();
                if bs58::decode(signature).into_vec().map(|b| b.len()) != Ok(64) {
                    return Err(SimnetError::params(
                        "Invalid params: expected a base58 transaction signature",
                    ));
                }
                Subscription::Signature {
                    signature: signature.to_owned(),
                    commitment,
                    landed: None,
                }
            }
            "accountSubscribe" => Subscription::Account {
                key: parse_key(params.first().and_then(Value::as_str).unwrap_or_default())?,
                commitment,
                view: View::from_config(config, Encoding::Base58)?,
            },
            "slotSubscribe" => Subscription::Slot,
            "logsSubscribe" => {
                let filter = match params.first() {
                    Some(Value::String(s)) if s == "all" || s == "allWithVotes" => LogsFilter::All,
                    Some(Value::Object(o)) => match o.get("mentions").and_then(Value::as_array) {
                        Some(keys) if keys.len() == 1 => {
                            LogsFilter::Mentions(parse_key(keys[0].as_str().unwrap_or_default())?)
                        }
                        _ => {
                            return Err(SimnetError::params(
                                "Invalid Request: Only 1 address supported",
                            ));
                        }
                    },
                    _ => {
                        return Err(SimnetError::params(
                            "Invalid params: expected \"all\" or {\"mentions\": [address]}",
                        ));
                    }
                };
                Subscription::Logs { filter, commitment }
            }
            other => {
                return Err(SimnetError::Rpc {
                    code: -32601,
                    message: format!("Method not found: simnet does not serve `{other}`"),
                });
            }
        };
        if self.subscriptions.len() >= MAX_SUBSCRIPTIONS {
            return Err(SimnetError::params(format!(
                "Invalid Request: a connection holds at most {MAX_SUBSCRIPTIONS} subscriptions; \
                 unsubscribe first or open another connection"
            )));
        }
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let is_signature = matches!(subscription, Subscription::Signature { .. });
        if matches!(subscription, Subscription::Slot) {
            self.last_slot = self.last_slot.max(self.simnet.slot().await?);
        }
        self.subscriptions.insert(id, subscription);
        if is_signature {
            // It may have landed already (or on another node): the ledger says.
            self.look_up(&[id]).await?;
        }
        Ok(json!(id))
    }

    /// A transaction this process landed.
    async fn on_landed(&mut self, event: Arc<Executed>) {
        let mut now = Vec::new();
        let mut later = Vec::new();
        let mut settled = Vec::new();
        let due = event.executed_at + self.simnet.finality_ms();
        for (&id, subscription) in &mut self.subscriptions {
            match subscription {
                Subscription::Signature {
                    signature,
                    commitment,
                    landed,
                } if *signature == event.signature => {
                    *landed = Some(Landed {
                        slot: event.slot,
                        executed_at: event.executed_at,
                        err: event.err.clone(),
                    });
                    if *commitment == Commitment::Confirmed {
                        settled.push(id);
                    }
                }
                Subscription::Account {
                    key, commitment, ..
                } if event.writable.contains(key) => {
                    if *commitment == Commitment::Confirmed {
                        now.push(id);
                    } else {
                        later.push(id);
                    }
                }
                Subscription::Logs { filter, commitment } => {
                    if let LogsFilter::Mentions(key) = filter
                        && !event.keys.contains(key)
                    {
                        continue;
                    }
                    if *commitment == Commitment::Confirmed {
                        now.push(id);
                    } else {
                        later.push(id);
                    }
                }
                _ => {}
            }
        }
        for id in settled {
            self.settle_signature(id);
        }
        for id in now {
            if let Err(e) = self.deliver(id, &event).await {
                tracing::warn!(error = %e, "simnet pubsub: account read failed");
            }
        }
        for id in later {
            self.deferred.push(Deferred {
                due_ms: due,
                id,
                event: event.clone(),
            });
        }
        if self
            .subscriptions
            .values()
            .any(|s| matches!(s, Subscription::Slot))
            && event.slot > self.last_slot
        {
            self.slot_moved(event.slot);
        }
    }

    /// Send a signature's one notification and end its subscription.
    fn settle_signature(&mut self, id: u64) {
        if let Some(Subscription::Signature {
            landed: Some(landed),
            ..
        }) = self.subscriptions.remove(&id)
        {
            self.notify(
                "signatureNotification",
                id,
                json!({"context": {"slot": landed.slot}, "value": {"err": landed.err}}),
            );
        }
    }

    /// An account or logs notification for `event`.
    async fn deliver(&mut self, id: u64, event: &Executed) -> Result<(), SimnetError> {
        let context = json!({"slot": event.slot});
        match self.subscriptions.get(&id) {
            Some(Subscription::Account { key, view, .. }) => {
                let (key, view) = (*key, *view);
                // A closed account is reported as an empty system account, as a node does.
                let account = self
                    .simnet
                    .account(&key)
                    .await?
                    .unwrap_or(Account::wallet(0));
                let value = accounts::render(&account, view)?;
                self.notify(
                    "accountNotification",
                    id,
                    json!({"context": context, "value": value}),
                );
            }
            Some(Subscription::Logs { .. }) => self.notify(
                "logsNotification",
                id,
                json!({"context": context, "value": {"signature": event.signature,
                       "err": event.err, "logs": event.logs}}),
            ),
            _ => {}
        }
        Ok(())
    }

    fn slot_moved(&mut self, slot: u64) {
        self.last_slot = slot;
        let ids: Vec<u64> = self
            .subscriptions
            .iter()
            .filter(|(_, s)| matches!(s, Subscription::Slot))
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.notify(
                "slotNotification",
                id,
                json!({"parent": slot.saturating_sub(1), "root": slot.saturating_sub(32),
                       "slot": slot}),
            );
        }
    }

    /// Deliver what has become final, and tell slot subscribers about idle slots.
    async fn on_timer(&mut self) -> Result<(), SimnetError> {
        let now = self.simnet.now_ms();
        let finality = self.simnet.finality_ms();
        let final_signatures: Vec<u64> = self
            .subscriptions
            .iter()
            .filter(|(_, s)| {
                matches!(s, Subscription::Signature {
                    commitment: Commitment::Finalized,
                    landed: Some(landed),
                    ..
                } if landed.executed_at + finality <= now)
            })
            .map(|(id, _)| *id)
            .collect();
        for id in final_signatures {
            self.settle_signature(id);
        }
        let (ready, waiting): (Vec<Deferred>, Vec<Deferred>) = std::mem::take(&mut self.deferred)
            .into_iter()
            .partition(|d| d.due_ms <= now);
        self.deferred = waiting;
        for d in ready {
            self.deliver(d.id, &d.event).await?;
        }
        if self
            .subscriptions
            .values()
            .any(|s| matches!(s, Subscription::Slot))
        {
            let slot = self.simnet.slot().await?;
            if slot > self.last_slot {
                self.slot_moved(slot);
            }
        }
        Ok(())
    }

    /// Look up, in the ledger, the signature subscriptions `ids` whose transaction has not
    /// been seen, and settle those that reached their commitment.
    async fn look_up(&mut self, ids: &[u64]) -> Result<(), SimnetError> {
        let wanted: Vec<(u64, String)> = ids
            .iter()
            .filter_map(|id| match self.subscriptions.get(id) {
                Some(Subscription::Signature {
                    signature,
                    landed: None,
                    ..
                }) => Some((*id, signature.clone())),
                _ => None,
            })
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        let signatures: Vec<String> = wanted.iter().map(|(_, s)| s.clone()).collect();
        let found = self.simnet.landed(&signatures).await?;
        let now = self.simnet.now_ms();
        let finality = self.simnet.finality_ms();
        for ((id, _), landed) in wanted.into_iter().zip(found) {
            let Some(landed) = landed else { continue };
            let Some(Subscription::Signature {
                commitment,
                landed: slot,
                ..
            }) = self.subscriptions.get_mut(&id)
            else {
                continue;
            };
            let reached =
                *commitment == Commitment::Confirmed || landed.executed_at + finality <= now;
            *slot = Some(landed);
            if reached {
                self.settle_signature(id);
            }
        }
        Ok(())
    }

    async fn look_up_unseen(&mut self) -> Result<(), SimnetError> {
        let ids: Vec<u64> = self.subscriptions.keys().copied().collect();
        self.look_up(&ids).await
    }

    /// The task fell behind the broadcast: what it missed is in the ledger. Signatures are
    /// looked up again; account subscribers get the account as it is now.
    async fn catch_up(&mut self) -> Result<(), SimnetError> {
        self.look_up_unseen().await?;
        let slot = self.simnet.slot().await?;
        let accounts: Vec<u64> = self
            .subscriptions
            .iter()
            .filter(|(_, s)| matches!(s, Subscription::Account { .. }))
            .map(|(id, _)| *id)
            .collect();
        let now = Executed {
            signature: String::new(),
            slot,
            executed_at: self.simnet.now_ms(),
            err: None,
            keys: Vec::new(),
            writable: Vec::new(),
            logs: Vec::new(),
        };
        for id in accounts {
            self.deliver(id, &now).await?;
        }
        Ok(())
    }
}

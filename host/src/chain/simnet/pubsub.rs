//! The simnet's PubSub websocket: the upgrade on the JSON-RPC path, carrying one
//! [`crucible_simnet::pubsub::Session`] per connection. The session answers the subscriptions;
//! this adapter moves its messages and reads messages of at most [`MAX_MESSAGE_BYTES`]. On the
//! server a connection counts as one of its client's streams (the cap and the shutdown of
//! server-sent events); alone (`crucible simnet`) it closes when the process stops.

use std::future::Future;
use std::sync::Arc;

use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::response::{IntoResponse, Response};
use crucible_simnet::pubsub::{Due, MAX_MESSAGE_BYTES, Session};
use serde_json::Value;
use tokio::sync::watch;

use super::Simnet;
use crate::http::streams::StreamSlot;
use crate::state::AppState;

pub use crucible_simnet::pubsub::MAX_SUBSCRIPTIONS;

pub(crate) async fn upgrade(
    State(state): State<AppState>,
    mut slot: StreamSlot,
    ws: WebSocketUpgrade,
) -> Response {
    let Some(simnet) = state.chain.simnet().cloned() else {
        return (
            axum::http::StatusCode::NOT_FOUND,
            axum::Json(crucible_simnet::rpc::error_reply(
                Value::Null,
                -32601,
                super::rpc::DISABLED,
            )),
        )
            .into_response();
    };
    // The slot lives as long as the connection: dropping it gives the client's place back.
    let closing = async move { slot.closing().await };
    ws.max_message_size(MAX_MESSAGE_BYTES)
        .on_upgrade(move |socket| run(Session::new(simnet), socket, closing))
}

/// The state of a simnet served alone: the ledger, and the shutdown its websockets watch.
#[derive(Clone)]
pub(crate) struct Alone {
    pub simnet: Arc<Simnet>,
    pub closing: watch::Receiver<bool>,
}

pub(crate) async fn upgrade_alone(State(alone): State<Alone>, ws: WebSocketUpgrade) -> Response {
    let mut closing = alone.closing;
    let closing = async move {
        // An error means the sender is gone: the process is stopping too.
        let _ = closing.wait_for(|closing| *closing).await;
    };
    ws.max_message_size(MAX_MESSAGE_BYTES)
        .on_upgrade(move |socket| run(Session::new(alone.simnet), socket, closing))
}

/// Why the connection's loop woke.
enum Wake {
    Closing,
    Incoming(Option<Result<Message, axum::Error>>),
    Due(Due),
}

/// One connection: the client's messages go to the session, whatever it answers or notifies
/// goes back, until either side closes or `closing` completes (the server shuts down).
async fn run(mut session: Session, mut socket: WebSocket, closing: impl Future<Output = ()>) {
    let mut closing = std::pin::pin!(closing);
    loop {
        // Only waiting happens inside the select (`Session::due` is cancel-safe); the work a
        // wake-up starts runs to completion below, so no notification is lost to a race.
        let wake = tokio::select! {
            () = &mut closing => Wake::Closing,
            message = socket.recv() => Wake::Incoming(message),
            due = session.due() => Wake::Due(due),
        };
        let outgoing = match wake {
            Wake::Closing => {
                // Tell the client to come back (1012: service restart), not that it erred.
                let frame = CloseFrame {
                    code: 1012,
                    reason: "the server is restarting; reconnect".into(),
                };
                let _ = socket.send(Message::Close(Some(frame))).await;
                return;
            }
            Wake::Incoming(None | Some(Err(_)) | Some(Ok(Message::Close(_)))) => return,
            Wake::Incoming(Some(Ok(Message::Text(text)))) => session.on_text(text.as_str()).await,
            Wake::Incoming(Some(Ok(Message::Binary(_)))) => session.on_binary(),
            // Pings are answered by the websocket layer itself.
            Wake::Incoming(Some(Ok(_))) => Vec::new(),
            Wake::Due(due) => match session.on_due(due).await {
                Some(messages) => messages,
                None => return,
            },
        };
        for message in outgoing {
            if socket.send(Message::Text(message.into())).await.is_err() {
                return;
            }
        }
    }
}

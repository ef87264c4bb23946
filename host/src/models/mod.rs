//! Language models as a host capability (`docs/models.md`): the host's provider endpoints
//! ([`endpoints`]), a client speaking OpenAI's chat completions and Anthropic's Messages formats
//! ([`Models::complete`]), and operators' own provider keys, sealed at rest ([`keys`]).
//! The agents' ticks ask through [`complete_for`] (`agents::thinking`, `docs/agents.md`).

use crate::crypto::Sealer;
use crate::db::Store;

mod anthropic_messages;
mod backoff;
mod client;
pub mod endpoints;
mod error;
pub mod keys;
mod openai_chat;
mod request;
mod routes;

pub use client::Models;
pub use endpoints::{ApiFormat, Endpoint, EndpointSetting, Endpoints};
pub use error::ModelError;
pub use keys::key_for;
pub use request::{Completion, Message, ModelRequest, Role};
pub(crate) use routes::router;

/// Ask `request.vendor`'s endpoint for a completion on behalf of `account_id`, with the
/// account's own key or else the host's default for that vendor.
pub async fn complete_for(
    store: &Store,
    sealer: &Sealer,
    models: &Models,
    account_id: &str,
    request: &ModelRequest,
) -> Result<Completion, ModelError> {
    if models.endpoints().get(&request.vendor).is_none() {
        return Err(ModelError::NoEndpoint(request.vendor.clone()));
    }
    let key = key_for(store, sealer, models, account_id, &request.vendor).await?;
    models.complete(key.as_ref(), request).await
}

//! Extractors of the `v1/public` family. Every rejection is a [`V1Error`], so a bad key, a
//! missing permission, a rate limit or an unparsable body all answer in the v1 envelope.
//!
//! [`V1Key<P>`] checks, in this order: a live v1 key (`X-API-Key`, 401) — or the web app acting
//! for a signed-in operator ([`WebAppSession`]) — the permission `P` (403), then the account's
//! hourly budget for `P`'s kind of call (429; docs/api.md, "Limits").

use std::marker::PhantomData;

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::error::V1Error;
use crate::auth::keys::{self, KeyFamily, VerifiedKey};
use crate::auth::{SessionAuth, WebAppSession};
use crate::http::rate_limit::{AccountPolicy, IpLimit, Limiter, RateLimits};
use crate::state::AppState;

/// The permissions a v1 key may hold.
pub(super) const PERMISSIONS: [&str; 4] =
    ["agents:read", "agents:write", "agents:start", "agents:stop"];

/// What a route demands of a v1 key, and which hourly budget its calls count against.
pub(super) trait Permission: Send + Sync + 'static {
    /// The permission required; `None` = any valid key.
    const NAME: Option<&'static str>;
    fn limiter(limits: &RateLimits) -> &Limiter;
}

/// Reads: agent list, performance, strategies, deliveries (1000 / h).
pub(super) struct AgentsRead;
impl Permission for AgentsRead {
    const NAME: Option<&'static str> = Some("agents:read");
    fn limiter(limits: &RateLimits) -> &Limiter {
        &limits.v1_reads
    }
}

/// Creating agents and uploading strategies (10 / h).
pub(super) struct AgentsWrite;
impl Permission for AgentsWrite {
    const NAME: Option<&'static str> = Some("agents:write");
    fn limiter(limits: &RateLimits) -> &Limiter {
        &limits.v1_create
    }
}

/// Starting agents (100 / h, shared with stop).
pub(super) struct AgentsStart;
impl Permission for AgentsStart {
    const NAME: Option<&'static str> = Some("agents:start");
    fn limiter(limits: &RateLimits) -> &Limiter {
        &limits.v1_control
    }
}

/// Stopping agents (100 / h, shared with start).
pub(super) struct AgentsStop;
impl Permission for AgentsStop {
    const NAME: Option<&'static str> = Some("agents:stop");
    fn limiter(limits: &RateLimits) -> &Limiter {
        &limits.v1_control
    }
}

/// Any valid key: reads that are not about agents (the tournament list).
pub(super) struct AnyKey;
impl Permission for AnyKey {
    const NAME: Option<&'static str> = None;
    fn limiter(limits: &RateLimits) -> &Limiter {
        &limits.v1_reads
    }
}

/// A live v1 key holding permission `P`.
pub(super) struct V1Key<P: Permission> {
    pub key: VerifiedKey,
    _permission: PhantomData<P>,
}

impl<P: Permission> V1Key<P> {
    pub(super) fn account_id(&self) -> &str {
        &self.key.account_id
    }
}

impl<P: Permission> FromRequestParts<AppState> for V1Key<P> {
    type Rejection = V1Error;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let key = match keys::presented(&parts.headers) {
            Some(presented) => keys::verify(
                &state.store,
                &*state.clock,
                &state.caches,
                &presented,
                KeyFamily::V1,
            )
            .await
            .map_err(|refused| V1Error::from(crate::http::ApiError::from(refused)))?,
            // The web app acting for a signed-in operator holds every permission over the
            // account's own agents, as the owner does (crate::auth::WebAppSession).
            None => match parts.extensions.get::<WebAppSession>() {
                Some(session) => VerifiedKey {
                    key_id: None,
                    account_id: session.account_id.clone(),
                    scopes: PERMISSIONS.iter().map(|&p| p.to_owned()).collect(),
                },
                None => {
                    return Err(V1Error::Unauthorized(
                        "send your v1 API key in the `X-API-Key` header".into(),
                    ));
                }
            },
        };
        if let Some(permission) = P::NAME
            && !key.allows(permission)
        {
            return Err(V1Error::Forbidden(format!(
                "this API key lacks the `{permission}` permission"
            )));
        }
        // Counted per account, not per key: revoking a key and minting another must not hand
        // out a fresh budget.
        P::limiter(&state.limits)
            .check(&key.account_id)
            .await
            .map_err(V1Error::from)?;
        Ok(V1Key {
            key,
            _permission: PhantomData,
        })
    }
}

/// A browser session (v1 keys are minted with the session, never with a key), counted against
/// the per-IP budget of key management.
pub(super) struct V1Session {
    pub account_id: String,
}

impl FromRequestParts<AppState> for V1Session {
    type Rejection = V1Error;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        IpLimit::<AccountPolicy>::from_request_parts(parts, state).await?;
        let session = SessionAuth::from_request_parts(parts, state).await?;
        Ok(V1Session {
            account_id: session.account_id,
        })
    }
}

/// A JSON body; a body that does not parse is a 400 VALIDATION_ERROR.
pub(super) struct Body<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = V1Error;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let crate::http::json::Json(value) =
            crate::http::json::Json::<T>::from_request(req, state).await?;
        Ok(Body(value))
    }
}

/// Query parameters; unparsable ones are a 400 VALIDATION_ERROR.
pub(super) struct Query<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Query<T> {
    type Rejection = V1Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let crate::http::json::Query(value) =
            crate::http::json::Query::<T>::from_request_parts(parts, state).await?;
        Ok(Query(value))
    }
}

/// Path parameters.
pub(super) struct Path<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for Path<T> {
    type Rejection = V1Error;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let crate::http::json::Path(value) =
            crate::http::json::Path::<T>::from_request_parts(parts, state).await?;
        Ok(Path(value))
    }
}

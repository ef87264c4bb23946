//! Who is calling: extractors a handler takes to require a credential.
//!
//! - [`AccountAuth<Read>`] / [`AccountAuth<Write>`]: a session cookie (passes every scope) or an
//!   account API key holding the scope. A key, when presented, is what counts.
//! - [`MaybeAccountAuth<S>`]: the same, optional, for public endpoints; a stale session cookie
//!   there means "no caller", never 401.
//! - [`SessionAuth`]: the session cookie only (keys never manage keys).

use std::marker::PhantomData;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::keys::{self, KeyFamily};
use super::session;
use crate::http::ApiError;
use crate::state::AppState;

impl From<super::keys::KeyCheckError> for ApiError {
    fn from(error: super::keys::KeyCheckError) -> Self {
        use super::keys::KeyCheckError;
        match error {
            KeyCheckError::Suspended => ApiError::Forbidden(error.to_string()),
            KeyCheckError::Store(store) => store.into(),
            KeyCheckError::NotAKey
            | KeyCheckError::Unknown
            | KeyCheckError::Revoked
            | KeyCheckError::Expired => ApiError::Unauthorized(error.to_string()),
        }
    }
}

/// An authenticated account.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub account_id: String,
    /// The account key that authenticated the call; `None` for a session (or the server acting
    /// for the account). Paying from the embedded wallet needs it: only a key has spend limits.
    pub key_id: Option<String>,
}

impl Caller {
    /// The account itself: a session, or the server acting for the account.
    pub(crate) fn account(account_id: impl Into<String>) -> Self {
        Caller {
            account_id: account_id.into(),
            key_id: None,
        }
    }
}

/// A scope an endpoint requires of account keys.
pub(crate) trait Scope: Send + Sync + 'static {
    const NAME: &'static str;
}

pub(crate) struct Read;
impl Scope for Read {
    const NAME: &'static str = "read";
}

pub(crate) struct Write;
impl Scope for Write {
    const NAME: &'static str = "write";
}

/// Session or account key with scope `S`.
pub(crate) struct AccountAuth<S: Scope> {
    pub caller: Caller,
    _scope: PhantomData<S>,
}

impl<S: Scope> AccountAuth<S> {
    pub(crate) fn account_id(&self) -> &str {
        &self.caller.account_id
    }
}

impl<S: Scope> FromRequestParts<AppState> for AccountAuth<S> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let caller = authenticate(parts, state, S::NAME).await?;
        Ok(AccountAuth {
            caller,
            _scope: PhantomData,
        })
    }
}

/// An optional account credential, for endpoints that are public but attribute the call to the
/// caller's account when there is one. A key, when sent, must be good (a bad key is an error, as
/// everywhere). A session cookie only ever adds: browsers keep sending an expired or unknown
/// `session-token` cookie long after the session ended, and that must not turn a call anyone may
/// make into a 401, so such a cookie makes the call public.
pub(crate) struct MaybeAccountAuth<S: Scope>(pub Option<Caller>, PhantomData<S>);

impl<S: Scope> FromRequestParts<AppState> for MaybeAccountAuth<S> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        if keys::presented(&parts.headers).is_some() {
            return Ok(MaybeAccountAuth(
                Some(authenticate(parts, state, S::NAME).await?),
                PhantomData,
            ));
        }
        let Some(token) = session::token_from_headers(&parts.headers) else {
            return Ok(MaybeAccountAuth(None, PhantomData));
        };
        let caller = session::resolve(&state.store, &*state.clock, &token)
            .await?
            .map(Caller::account);
        Ok(MaybeAccountAuth(caller, PhantomData))
    }
}

async fn authenticate(parts: &Parts, state: &AppState, scope: &str) -> Result<Caller, ApiError> {
    if let Some(presented) = keys::presented(&parts.headers) {
        let key = keys::verify(
            &state.store,
            &*state.clock,
            &state.caches,
            &presented,
            KeyFamily::Account,
        )
        .await?;
        if !key.allows(scope) {
            return Err(ApiError::Forbidden(format!(
                "this API key lacks the `{scope}` scope"
            )));
        }
        return Ok(Caller {
            account_id: key.account_id,
            key_id: key.key_id,
        });
    }
    match session::token_from_headers(&parts.headers) {
        Some(token) => match session::resolve(&state.store, &*state.clock, &token).await? {
            Some(account_id) => Ok(Caller::account(account_id)),
            None => Err(ApiError::Unauthorized("the session has expired or was ended; sign in again".into())),
        },
        None => Err(ApiError::Unauthorized(
            "sign in (session-token cookie) or send an API key as `Authorization: Bearer svc_live_…`".into(),
        )),
    }
}

/// A browser session, required where API keys are never accepted.
pub(crate) struct SessionAuth {
    pub account_id: String,
}

impl FromRequestParts<AppState> for SessionAuth {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        if let Some(token) = session::token_from_headers(&parts.headers)
            && let Some(account_id) = session::resolve(&state.store, &*state.clock, &token).await?
        {
            return Ok(SessionAuth { account_id });
        }
        if keys::presented(&parts.headers).is_some() {
            return Err(ApiError::Forbidden(
                "API keys cannot list, create or revoke API keys: sign in and use the session"
                    .into(),
            ));
        }
        Err(ApiError::Unauthorized(
            "sign in first: this endpoint needs the session-token cookie".into(),
        ))
    }
}

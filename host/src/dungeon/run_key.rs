//! Per-run keys `dgr_<base58 of 32 random bytes>`: minted on enter, scoped to one run,
//! valid until that run ends, accepted only on its turn / broadcast / watch endpoints. Stored as
//! SHA-256 (the lookup) and sealed under the master key (the credential endpoint shows it again).
//!
//! The [`RunKey`] extractor refuses every other credential with 401: account keys, v1 keys and
//! sessions never play a run. A live key of *another* run is a 403 (the key is genuine, it is
//! simply not this run's), which tells a confused agent that it mixed up its runs. A key of a run
//! whose account is suspended is a 403 naming the suspension's reason.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::DungeonError;
use super::store::{self, RunHead};
use crate::crypto::{constant_time_eq, random_base58, sha256_hex};
use crate::http::ApiError;
use crate::state::AppState;

pub(crate) const PREFIX: &str = "dgr_";

/// A fresh run key and what is stored of it.
pub(crate) struct MintedRunKey {
    pub key: String,
    pub hash: String,
}

pub(crate) fn mint() -> MintedRunKey {
    let key = format!("{PREFIX}{}", random_base58(32));
    MintedRunKey {
        hash: sha256_hex(&key),
        key,
    }
}

/// A live run key: the run it belongs to, as read when the key was checked.
#[derive(Debug, Clone)]
pub(crate) struct RunKey {
    pub run_id: String,
    pub row: RunHead,
}

impl RunKey {
    /// The key must be `run_id`'s own.
    pub(crate) fn for_run(&self, run_id: &str) -> Result<(), DungeonError> {
        if constant_time_eq(self.run_id.as_bytes(), run_id.as_bytes()) {
            Ok(())
        } else {
            Err(DungeonError::OtherRun(run_id.to_owned()))
        }
    }
}

fn required() -> ApiError {
    ApiError::Unauthorized(
        "a run key is required: send this run's registrationKey as `Authorization: Bearer dgr_…` \
         (account keys, v1 keys and sessions are not accepted here)"
            .into(),
    )
}

impl FromRequestParts<AppState> for RunKey {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let Some(key) =
            crate::auth::keys::bearer(&parts.headers).filter(|key| key.starts_with(PREFIX))
        else {
            return Err(required());
        };
        match store::load_by_key_hash(&state.store, &sha256_hex(key)).await? {
            Some(keyed) if keyed.head.is_active() => {
                // A suspended account's runs stop playing (and so cannot win the day's prize).
                if let Some(reason) = keyed.suspension {
                    return Err(DungeonError::AccountSuspended(reason).into());
                }
                Ok(RunKey {
                    run_id: keyed.head.id.clone(),
                    row: keyed.head,
                })
            }
            Some(keyed) => Err(DungeonError::RunEnded {
                run_id: keyed.head.id,
                status: Some(keyed.head.status.as_str().to_owned()),
            }
            .into()),
            None => Err(ApiError::Unauthorized(
                "unknown run key: send the registrationKey returned when you entered".into(),
            )),
        }
    }
}

/// The run key of a turn: like [`RunKey`], but a key this node checked before, of a run it
/// holds, is answered from memory (docs/architecture.md, "Group commit"). Such a head is a hint
/// (`fresh` false): the turn's write is guarded by the run's version and by its account not
/// being suspended, so a run moved or an account suspended since is caught there and read again.
pub(crate) struct TurnKey {
    pub key: RunKey,
    /// Read from the database for this request (not from memory).
    pub fresh: bool,
}

impl FromRequestParts<AppState> for TurnKey {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let hash = crate::auth::keys::bearer(&parts.headers)
            .filter(|key| key.starts_with(PREFIX))
            .map(sha256_hex);
        if let Some(head) = hash
            .as_deref()
            .and_then(|hash| state.caches.dungeon_runs.head_for_key(hash))
        {
            return Ok(TurnKey {
                key: RunKey {
                    run_id: head.id.clone(),
                    row: head,
                },
                fresh: false,
            });
        }
        let key = RunKey::from_request_parts(parts, state).await?;
        if let Some(hash) = hash {
            state
                .caches
                .dungeon_runs
                .remember_key(hash, key.run_id.clone());
        }
        Ok(TurnKey { key, fresh: true })
    }
}

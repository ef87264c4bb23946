//! Private tournaments (`docs/tournaments.md`, "Private tournaments"): listed nowhere, and
//! shown, streamed or registrable only with their invite code. Without the code a private
//! tournament answers exactly as an unknown one (404), so its existence is not revealed either.
//!
//! The code is shown once, to the host who creates the tournament; only its SHA-256 is stored,
//! as with API keys, so a copy of the database does not hand out invitations.

use std::sync::Arc;

use serde::Deserialize;
use utoipa::IntoParams;

use super::model::Tournament;
use super::queries;
use crate::cache::ReadCache;
use crate::clock::Clock;
use crate::crypto::{random_base58, sha256_hex};
use crate::db::Store;

/// A fresh invite code and the hash to store with the tournament.
pub fn new_invite_code() -> (String, String) {
    let code = format!("inv_{}", random_base58(20));
    let hash = sha256_hex(&code);
    (code, hash)
}

/// Whether `code` opens `tournament`: always for a public one; for a private one, only its own
/// code (a private tournament without a stored code opens for nobody).
pub(crate) fn admits(tournament: &Tournament, code: Option<&str>) -> bool {
    if tournament.visibility != "private" {
        return true;
    }
    match (&tournament.invite_code_hash, code.map(str::trim)) {
        (Some(stored), Some(code)) if !code.is_empty() => {
            crate::crypto::constant_time_eq(stored.as_bytes(), sha256_hex(code).as_bytes())
        }
        _ => false,
    }
}

/// The `inviteCode` query parameter every public read of one tournament takes.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub(crate) struct InviteParams {
    /// A private tournament's invite code (ignored for public ones).
    pub invite_code: Option<String>,
}

/// The tournament `id` if this caller may see it: `None` when unknown, or private and `code` is
/// not its invite code.
pub(crate) async fn find_visible(
    store: &Store,
    id: &str,
    code: Option<&str>,
) -> sqlx::Result<Option<Tournament>> {
    Ok(queries::get(store, id)
        .await?
        .filter(|tournament| admits(tournament, code)))
}

/// [`find_visible`] for a registration, from `cache` when this node read the tournament lately
/// (the per-request read was most of a free registration's database work on PostgreSQL). A
/// cached tournament is trusted only for what never changes once it exists (visibility and
/// invite code, fee, escrow wallet, dates, seat cap): its status and free seats may be stale,
/// and the registering write checks both again, so a stale entry costs a refusal that re-reads
/// the row, never a seat in a closed tournament. Unknown ids are not remembered.
pub(crate) async fn find_registrable(
    store: &Store,
    cache: &ReadCache<Tournament>,
    clock: &dyn Clock,
    id: &str,
    code: Option<&str>,
) -> sqlx::Result<Option<Arc<Tournament>>> {
    let found = cache
        .get_or_load(id, async {
            match queries::get(store, id).await {
                Ok(Some(tournament)) => {
                    let stale_at = tournament.next_change_after(clock.now());
                    Ok((tournament, stale_at))
                }
                Ok(None) => Err(None),
                Err(error) => Err(Some(error)),
            }
        })
        .await;
    match found {
        Ok(tournament) => Ok(Some(tournament).filter(|tournament| admits(tournament, code))),
        Err(None) => Ok(None),
        Err(Some(error)) => Err(error),
    }
}

/// A page of the tournament list as anyone may read it (the public and v1 lists): private
/// tournaments are listed nowhere, so `visibility=private` is a valid filter that matches
/// nothing here (hosts list them with `crucible tournament list`).
pub(crate) async fn listed(
    store: &Store,
    clock: &dyn Clock,
    query: &queries::ListQuery,
) -> sqlx::Result<(Vec<Tournament>, i64)> {
    if query.visibility.as_deref() == Some("private") {
        return Ok((Vec::new(), 0));
    }
    queries::list(store, query, clock.now()).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_its_own_code_opens_a_private_tournament() {
        let (code, hash) = new_invite_code();
        assert!(code.starts_with("inv_") && code.len() > 20);
        let mut private = Tournament::sample();
        private.visibility = "private".into();
        private.invite_code_hash = Some(hash);
        assert!(admits(&private, Some(&code)));
        assert!(admits(&private, Some(&format!(" {code} "))));
        assert!(!admits(&private, None));
        assert!(!admits(&private, Some("")));
        assert!(!admits(&private, Some(&new_invite_code().0)));
        private.invite_code_hash = None;
        assert!(!admits(&private, Some(&code)), "no stored code: nobody");
        assert!(admits(&Tournament::sample(), None), "public needs no code");
    }
}

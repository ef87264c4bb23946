//! [`AdminAuth`]: the session of an account that holds the admin role.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use crate::auth::SessionAuth;
use crate::http::ApiError;
use crate::state::AppState;

/// An admin, signed in with a session. Anyone else is refused with 403 (401 without a session).
pub(super) struct AdminAuth {
    pub account_id: String,
}

impl FromRequestParts<AppState> for AdminAuth {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let session = SessionAuth::from_request_parts(parts, state).await?;
        let (is_admin,): (i64,) = sqlx::query_as("SELECT is_admin FROM accounts WHERE id = $1")
            .bind(&session.account_id)
            .fetch_one(state.store.read())
            .await?;
        if is_admin == 0 {
            return Err(ApiError::Forbidden(
                "this is for the service's admins (granted with `crucible admin grant`)".into(),
            ));
        }
        Ok(AdminAuth {
            account_id: session.account_id,
        })
    }
}

//! What admin services refuse; mapped to the platform's HTTP errors at the edge.

use crate::db::StoreError;
use crate::http::ApiError;

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Invalid(String),
    /// The change is not possible in the subject's current state (e.g. an ended tournament).
    #[error("{0}")]
    Conflict(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

crate::db::store_error_from_sqlx!(AdminError);

impl From<AdminError> for ApiError {
    fn from(error: AdminError) -> Self {
        match error {
            AdminError::NotFound(message) => ApiError::NotFound(message),
            AdminError::Invalid(message) => ApiError::BadRequest(message),
            AdminError::Conflict(message) => ApiError::Conflict(message),
            AdminError::Store(error) => error.into(),
        }
    }
}

//! `GET /api/v1/public/tournaments`: the tournament list in the pagination envelope
//! `{success, data, pagination: {pageIndex, pageSize, totalCount, totalPages}}`, with the `v1`
//! status vocabulary (`upcoming`, `active`, `completed`) in filters and items.

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::error::V1Error;
use super::extract::{AnyKey, Query, V1Key};
use crate::state::AppState;
use crate::tournaments::Status;
use crate::tournaments::queries::{self, ListQuery};

pub fn router() -> Router<AppState> {
    Router::new().route("/public/tournaments", get(list))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Params {
    page_index: Option<String>,
    page_size: Option<String>,
    order_by: Option<String>,
    order: Option<String>,
    search: Option<String>,
    visibility: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    status: Option<String>,
}

/// Page parameters shared by the v1 lists: `pageIndex` ≥ 0 (default 0), `pageSize` 1–50 (10).
pub fn page(index: Option<&str>, size: Option<&str>) -> Result<(i64, i64), V1Error> {
    let index = match index.filter(|s| !s.is_empty()) {
        None => 0,
        Some(raw) => raw
            .parse::<i64>()
            .ok()
            .filter(|n| (0..=100_000).contains(n))
            .ok_or_else(|| V1Error::field("pageIndex", "must be a whole number, 0 or more"))?,
    };
    let size = match size.filter(|s| !s.is_empty()) {
        None => 10,
        Some(raw) => raw
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=50).contains(n))
            .ok_or_else(|| V1Error::field("pageSize", "must be a whole number from 1 to 50"))?,
    };
    Ok((index, size))
}

/// The pagination envelope of the v1 lists.
pub fn envelope<T: Serialize>(data: Vec<T>, index: i64, size: i64, total: i64) -> Value {
    json!({
        "success": true,
        "data": data,
        "pagination": {
            "pageIndex": index,
            "pageSize": size,
            "totalCount": total,
            "totalPages": (total + size - 1) / size,
        },
    })
}

impl Params {
    fn validate(self) -> Result<ListQuery, V1Error> {
        let (page, page_size) = page(self.page_index.as_deref(), self.page_size.as_deref())?;
        let status = match self.status.as_deref() {
            None | Some("") => None,
            Some("upcoming") => Some(Status::Upcoming),
            Some("active") => Some(Status::Live),
            Some("completed") => Some(Status::Ended),
            Some(_) => {
                return Err(V1Error::field(
                    "status",
                    "must be one of upcoming, active, completed",
                ));
            }
        };
        ListQuery::parse(
            status,
            page,
            page_size,
            queries::SharedFilters {
                kind: self.kind,
                visibility: self.visibility.as_deref(),
                order_by: self.order_by.as_deref(),
                order: self.order.as_deref(),
                search: self.search,
            },
        )
        .map_err(|invalid| V1Error::field(invalid.field, invalid.message))
    }
}

/// The v1 name of a tournament status.
fn v1_status(status: Status) -> &'static str {
    match status {
        Status::Upcoming => "upcoming",
        Status::Live => "active",
        Status::Ended => "completed",
        Status::Cancelled => "cancelled",
    }
}

async fn list(
    _key: V1Key<AnyKey>,
    State(state): State<AppState>,
    Query(params): Query<Params>,
) -> Result<axum::Json<Value>, V1Error> {
    let query = params.validate()?;
    let now = state.now();
    let (rows, total) = crate::tournaments::privacy::listed(&state, &query).await?;
    let items: Vec<Value> = rows
        .iter()
        .map(|tournament| {
            let status = tournament.status_at(now);
            let mut item = serde_json::to_value(tournament.view(now)).unwrap_or(Value::Null);
            item["status"] = json!(v1_status(status));
            item
        })
        .collect();
    Ok(axum::Json(envelope(
        items,
        query.page,
        query.page_size,
        total,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_default_and_refuse_out_of_range() {
        assert_eq!(page(None, None).ok(), Some((0, 10)));
        assert_eq!(page(Some("2"), Some("50")).ok(), Some((2, 50)));
        assert!(page(Some("-1"), None).is_err());
        assert!(page(None, Some("51")).is_err());
        assert!(page(None, Some("ten")).is_err());
    }

    #[test]
    fn envelope_counts_pages() {
        let body = envelope(vec![1, 2], 0, 10, 21);
        assert_eq!(body["pagination"]["totalPages"], 3);
        assert_eq!(body["success"], true);
    }
}

//! `GET /api/v1/public/tournaments`: the tournament list in the pagination envelope
//! `{success, data, pagination: {pageIndex, pageSize, totalCount, totalPages}}`, with the `v1`
//! status vocabulary (`upcoming`, `active`, `completed`) in filters and items.

use axum::extract::State;
use serde::ser::Error as _;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use utoipa::openapi::{RefOr, Schema};
use utoipa::{IntoParams, PartialSchema, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::envelope::{V1Page, page};
use super::error::{V1Error, V1ErrorBody};
use super::extract::{AnyKey, Query, V1Key};
use crate::state::AppState;
use crate::tournaments::queries::{self, ListQuery};
use crate::tournaments::{Status, TournamentView};

pub(super) fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct Params {
    /// 0 to 100000 (default 0).
    #[param(value_type = Option<i64>, minimum = 0, maximum = 100_000)]
    page_index: Option<String>,
    /// 1 to 50 (default 10).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 50)]
    page_size: Option<String>,
    /// `name`, `createdAt` (default), `startDate`, `endDate` or `currentParticipants`.
    #[param(pattern = "^(name|createdAt|startDate|endDate|currentParticipants)?$")]
    order_by: Option<String>,
    /// `asc` or `desc` (default).
    #[param(pattern = "^(asc|desc)?$")]
    order: Option<String>,
    /// Words of the name (at most 100 characters).
    #[param(max_length = 100)]
    search: Option<String>,
    /// `public` or `private` (private tournaments are listed nowhere: no items).
    #[param(pattern = "^(public|private)?$")]
    visibility: Option<String>,
    /// Tournament type, e.g. `highest_pnl`.
    #[serde(rename = "type")]
    kind: Option<String>,
    /// `upcoming`, `active` or `completed`.
    #[param(pattern = "^(upcoming|active|completed)?$")]
    status: Option<String>,
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

/// A tournament status in the v1 vocabulary.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
enum V1Status {
    Upcoming,
    Active,
    Completed,
    Cancelled,
}

impl From<Status> for V1Status {
    fn from(status: Status) -> Self {
        match status {
            Status::Upcoming => V1Status::Upcoming,
            Status::Live => V1Status::Active,
            Status::Ended => V1Status::Completed,
            Status::Cancelled => V1Status::Cancelled,
        }
    }
}

/// A tournament of the v1 list: the platform's record with the status in the v1 vocabulary.
#[derive(Debug)]
struct V1Tournament {
    view: TournamentView,
    status: V1Status,
}

impl Serialize for V1Tournament {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Value::Object(mut fields) =
            serde_json::to_value(&self.view).map_err(S::Error::custom)?
        else {
            return Err(S::Error::custom("a tournament record is a JSON object"));
        };
        let status = serde_json::to_value(self.status).map_err(S::Error::custom)?;
        fields.insert("status".to_owned(), status);
        fields.serialize(serializer)
    }
}

/// The platform record's schema with its `status` replaced, so the document says what is sent.
impl PartialSchema for V1Tournament {
    fn schema() -> RefOr<Schema> {
        let mut schema = TournamentView::schema();
        if let RefOr::T(Schema::Object(object)) = &mut schema {
            object
                .properties
                .insert("status".to_owned(), V1Status::schema());
        }
        schema
    }
}

impl ToSchema for V1Tournament {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        TournamentView::schemas(schemas);
        schemas.push((V1Status::name().into_owned(), V1Status::schema()));
    }
}

/// The public tournament list, newest first unless `orderBy` says otherwise.
#[utoipa::path(get, path = "/public/tournaments", operation_id = "v1_list_tournaments",
    security(("v1Key" = [])), tag = "v1", params(Params),
    responses((status = 200, body = V1Page<V1Tournament>),
              (status = 400, body = V1ErrorBody), (status = 401, body = V1ErrorBody),
              (status = 429, body = V1ErrorBody)))]
async fn list(
    _key: V1Key<AnyKey>,
    State(state): State<AppState>,
    Query(params): Query<Params>,
) -> Result<axum::Json<V1Page<V1Tournament>>, V1Error> {
    let query = params.validate()?;
    let now = state.now();
    let (rows, total) =
        crate::tournaments::privacy::listed(&state.store, &*state.clock, &query).await?;
    let items = rows
        .iter()
        .map(|tournament| V1Tournament {
            status: tournament.status_at(now).into(),
            view: tournament.view(now),
        })
        .collect();
    Ok(V1Page::new(items, query.page, query.page_size, total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_names_the_v1_statuses() {
        let RefOr::T(Schema::Object(object)) = V1Tournament::schema() else {
            panic!("an object schema");
        };
        let status = serde_json::to_value(&object.properties["status"]).expect("serializes");
        assert_eq!(
            status["enum"],
            serde_json::json!(["upcoming", "active", "completed", "cancelled"])
        );
    }
}

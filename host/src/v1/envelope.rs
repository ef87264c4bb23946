//! The success bodies of the `v1` family: `{"success": true, "data": …}` and, for lists,
//! `{success, data, pagination: {pageIndex, pageSize, totalCount, totalPages}}`; and the page
//! parameters every v1 list takes. The error body lives with [`super::V1Error`].

use std::ops::RangeInclusive;

use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::error::V1Error;

/// A successful answer of this family.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct V1Ok<T> {
    /// Always `true`.
    success: bool,
    data: T,
}

/// `data` in the success envelope.
pub(super) fn ok<T>(data: T) -> Json<V1Ok<T>> {
    Json(V1Ok {
        success: true,
        data,
    })
}

/// One page of a v1 list.
#[derive(Debug, Serialize, ToSchema)]
pub(super) struct V1Page<T> {
    /// Always `true`.
    success: bool,
    data: Vec<T>,
    pagination: Pagination,
}

/// Where a page sits in the whole list.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = V1Pagination)]
pub(super) struct Pagination {
    page_index: i64,
    page_size: i64,
    total_count: i64,
    total_pages: i64,
}

impl<T> V1Page<T> {
    /// Page `index` of `size` items out of `total`.
    pub(super) fn new(data: Vec<T>, index: i64, size: i64, total: i64) -> Json<Self> {
        Json(V1Page {
            success: true,
            data,
            pagination: Pagination {
                page_index: index,
                page_size: size,
                total_count: total,
                total_pages: (total + size - 1) / size,
            },
        })
    }
}

/// The page parameters of the v1 lists.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub(super) struct PageParams {
    /// 0 to 100000 (default 0).
    #[param(value_type = Option<i64>, minimum = 0, maximum = 100_000)]
    page_index: Option<String>,
    /// 1 to 50 (default 10).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 50)]
    page_size: Option<String>,
}

impl PageParams {
    /// `(pageIndex, pageSize)`, defaulted and checked.
    pub(super) fn parse(&self) -> Result<(i64, i64), V1Error> {
        page(self.page_index.as_deref(), self.page_size.as_deref())
    }
}

/// `pageIndex` 0–100000 (default 0), `pageSize` 1–50 (10).
pub(super) fn page(index: Option<&str>, size: Option<&str>) -> Result<(i64, i64), V1Error> {
    let index = whole_number(index, 0, 0..=100_000)
        .ok_or_else(|| V1Error::field("pageIndex", "must be a whole number from 0 to 100000"))?;
    let size = whole_number(size, 10, 1..=50)
        .ok_or_else(|| V1Error::field("pageSize", "must be a whole number from 1 to 50"))?;
    Ok((index, size))
}

/// A query parameter that must be a whole number in `range`: `default` when it is absent,
/// `None` when it is anything else — an empty value (`?pageSize=`) included, as the document
/// declares these parameters integers.
pub(super) fn whole_number(
    raw: Option<&str>,
    default: i64,
    range: RangeInclusive<i64>,
) -> Option<i64> {
    match raw {
        None => Some(default),
        Some(raw) => raw.parse::<i64>().ok().filter(|n| range.contains(n)),
    }
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
        assert!(
            page(Some(""), None).is_err(),
            "an empty value is not a number"
        );
        assert!(page(None, Some("")).is_err());
    }

    #[test]
    fn envelope_counts_pages() {
        let Json(body) = V1Page::new(vec![1, 2], 0, 10, 21);
        let body = serde_json::to_value(body).expect("serializes");
        assert_eq!(body["pagination"]["totalPages"], 3);
        assert_eq!(body["success"], true);
    }
}

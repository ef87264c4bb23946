//! Random request bodies for the fuzz tests: JSON built from the field names and words an API
//! knows (so random objects often get past the first parse), or raw bytes.

use proptest::prelude::*;
use serde_json::Value;

use super::Body;

/// Random JSON up to three levels deep whose objects use `fields` and whose leaves include `words`.
pub fn json_value(
    fields: &'static [&'static str],
    words: &'static [&'static str],
) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,40}".prop_map(Value::from),
        prop::sample::select(words).prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::vec((prop::sample::select(fields), inner), 0..8).prop_map(|pairs| {
                Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            }),
        ]
    })
}

/// A body: mostly JSON, sometimes arbitrary bytes sent as JSON.
#[derive(Debug, Clone)]
pub enum Payload {
    Json(Value),
    Bytes(Vec<u8>),
}

impl Payload {
    pub fn into_body(self) -> Body {
        match self {
            Payload::Json(value) => Body::Json(value),
            Payload::Bytes(bytes) => Body::Raw("application/json", bytes),
        }
    }
}

pub fn payload(
    fields: &'static [&'static str],
    words: &'static [&'static str],
) -> impl Strategy<Value = Payload> {
    prop_oneof![
        3 => json_value(fields, words).prop_map(Payload::Json),
        1 => prop::collection::vec(any::<u8>(), 0..200).prop_map(Payload::Bytes),
    ]
}

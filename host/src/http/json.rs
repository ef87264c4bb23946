//! Request extractors whose rejections speak the platform error form instead of axum's plain
//! text: a body that does not parse is a 400 `{"error": "<why>"}`.
//!
//! Only objects are objects: serde reads a struct from a JSON array too (its fields in order),
//! so `["email", "password"]` would sign in. [`Json`] reads the body through [`strict`], which
//! reads structs and maps from objects only, at any depth; the v1 family's body extractor is
//! this one too.

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use super::error::ApiError;

/// `axum::Json` with [`ApiError`] rejections.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Json<T>(pub T);

impl<S, T> FromRequest<S> for Json<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        // The content type and the syntax are axum's to check; the shape is ours.
        let axum::Json(value) = axum::Json::<serde_json::Value>::from_request(req, state)
            .await
            .map_err(json_rejection)?;
        strict::from_value(&value).map(Json).map_err(|error| {
            ApiError::bad_request(super::rejections::body_shape(&error.to_string()))
        })
    }
}

fn json_rejection(rejection: JsonRejection) -> ApiError {
    ApiError::bad_request(super::rejections::json_body(&rejection))
}

/// `axum::extract::Query` with [`ApiError`] rejections.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Query<T>(pub T);

impl<S, T> FromRequestParts<S> for Query<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Query(value)| Query(value))
            .map_err(|rejection: QueryRejection| {
                ApiError::bad_request(super::rejections::query(&rejection))
            })
    }
}

/// `axum::extract::Path` with [`ApiError`] rejections.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Path<T>(pub T);

impl<S, T> FromRequestParts<S> for Path<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(value)| Path(value))
            .map_err(|rejection: PathRejection| {
                ApiError::bad_request(super::rejections::path(&rejection))
            })
    }
}

/// Reading a value into a type as `serde_json::from_value` does, except that a struct or a map
/// is read only from a JSON object (serde's derive also takes an array, field by field).
pub(crate) mod strict {
    use serde::de::value::BorrowedStrDeserializer;
    use serde::de::{
        self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Unexpected,
        Visitor,
    };
    use serde_json::Value;

    /// `T` from `value`, objects only where `T` reads a struct or a map. The error names the
    /// path of the member at fault (`inner.amount: invalid type: …`), as axum's own does.
    pub(crate) fn from_value<T: DeserializeOwned>(
        value: &Value,
    ) -> Result<T, serde_path_to_error::Error<serde_json::Error>> {
        serde_path_to_error::deserialize(Strict(value))
    }

    struct Strict<'a>(&'a Value);

    fn unexpected(value: &Value) -> Unexpected<'_> {
        match value {
            Value::Null => Unexpected::Unit,
            Value::Bool(b) => Unexpected::Bool(*b),
            Value::Number(_) => Unexpected::Other("number"),
            Value::String(s) => Unexpected::Str(s),
            Value::Array(_) => Unexpected::Seq,
            Value::Object(_) => Unexpected::Map,
        }
    }

    /// Values without inner values read as serde_json reads them.
    macro_rules! forward_to_value {
        ($($method:ident)*) => {$(
            fn $method<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Self::Error> {
                self.0.$method(visitor)
            }
        )*};
    }

    impl<'a> Deserializer<'a> for Strict<'a> {
        type Error = serde_json::Error;

        fn deserialize_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            match self.0 {
                Value::Object(map) => visitor.visit_map(Entries {
                    entries: map.iter(),
                    value: None,
                }),
                Value::Array(items) => visitor.visit_seq(Items(items.iter())),
                scalar => scalar.deserialize_any(visitor),
            }
        }

        fn deserialize_option<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            match self.0 {
                Value::Null => visitor.visit_none(),
                _ => visitor.visit_some(self),
            }
        }

        fn deserialize_newtype_struct<V: Visitor<'a>>(
            self,
            _name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            visitor.visit_newtype_struct(self)
        }

        fn deserialize_map<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            match self.0 {
                Value::Object(map) => visitor.visit_map(Entries {
                    entries: map.iter(),
                    value: None,
                }),
                other => Err(de::Error::invalid_type(unexpected(other), &visitor)),
            }
        }

        fn deserialize_struct<V: Visitor<'a>>(
            self,
            _name: &'static str,
            _fields: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            self.deserialize_map(visitor)
        }

        fn deserialize_seq<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, Self::Error> {
            match self.0 {
                Value::Array(items) => visitor.visit_seq(Items(items.iter())),
                other => Err(de::Error::invalid_type(unexpected(other), &visitor)),
            }
        }

        fn deserialize_tuple<V: Visitor<'a>>(
            self,
            _len: usize,
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            self.deserialize_seq(visitor)
        }

        fn deserialize_tuple_struct<V: Visitor<'a>>(
            self,
            _name: &'static str,
            _len: usize,
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            self.deserialize_seq(visitor)
        }

        fn deserialize_enum<V: Visitor<'a>>(
            self,
            name: &'static str,
            variants: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            self.0.deserialize_enum(name, variants, visitor)
        }

        fn deserialize_unit_struct<V: Visitor<'a>>(
            self,
            name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Self::Error> {
            self.0.deserialize_unit_struct(name, visitor)
        }

        forward_to_value! {
            deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
            deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_f32
            deserialize_f64 deserialize_char deserialize_str deserialize_string deserialize_bytes
            deserialize_byte_buf deserialize_unit deserialize_identifier deserialize_ignored_any
        }
    }

    struct Entries<'a> {
        entries: serde_json::map::Iter<'a>,
        value: Option<&'a Value>,
    }

    impl<'a> MapAccess<'a> for Entries<'a> {
        type Error = serde_json::Error;

        fn next_key_seed<K: DeserializeSeed<'a>>(
            &mut self,
            seed: K,
        ) -> Result<Option<K::Value>, Self::Error> {
            let Some((key, value)) = self.entries.next() else {
                return Ok(None);
            };
            self.value = Some(value);
            seed.deserialize(BorrowedStrDeserializer::new(key))
                .map(Some)
        }

        fn next_value_seed<V: DeserializeSeed<'a>>(
            &mut self,
            seed: V,
        ) -> Result<V::Value, Self::Error> {
            let value = self
                .value
                .take()
                .ok_or_else(|| de::Error::custom("a value was read before its key"))?;
            seed.deserialize(Strict(value))
        }
    }

    struct Items<'a>(std::slice::Iter<'a, Value>);

    impl<'a> SeqAccess<'a> for Items<'a> {
        type Error = serde_json::Error;

        fn next_element_seed<T: DeserializeSeed<'a>>(
            &mut self,
            seed: T,
        ) -> Result<Option<T::Value>, Self::Error> {
            self.0
                .next()
                .map(|item| seed.deserialize(Strict(item)))
                .transpose()
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use serde::Deserialize;
        use serde_json::json;

        #[derive(Debug, Deserialize, PartialEq)]
        #[serde(rename_all = "camelCase")]
        struct Inner {
            amount: u64,
        }

        #[derive(Debug, Deserialize, PartialEq)]
        #[serde(rename_all = "camelCase")]
        struct Outer {
            name: String,
            note: Option<String>,
            inner: Option<Inner>,
            tags: Vec<String>,
            #[serde(default)]
            ratio: f64,
        }

        #[test]
        fn objects_read_as_serde_json_reads_them() {
            let read: Outer = from_value(&json!({
                "name": "a", "note": null, "inner": {"amount": 3}, "tags": ["x"], "ratio": 1
            }))
            .expect("an object");
            assert_eq!(
                read,
                Outer {
                    name: "a".into(),
                    note: None,
                    inner: Some(Inner { amount: 3 }),
                    tags: vec!["x".into()],
                    ratio: 1.0,
                }
            );
            let missing = from_value::<Outer>(&json!({"note": "n", "tags": []}))
                .expect_err("name is required");
            assert!(
                missing.to_string().contains("missing field `name`"),
                "{missing}"
            );
        }

        #[test]
        fn an_array_is_never_a_struct_at_any_depth() {
            assert!(
                serde_json::from_value::<Inner>(json!([3])).is_ok(),
                "serde's own reading"
            );
            let top = from_value::<Outer>(&json!(["a", null, null, []])).expect_err("array");
            assert!(top.to_string().contains("invalid type: sequence"), "{top}");
            let nested = from_value::<Outer>(&json!({"name": "a", "inner": [3], "tags": []}))
                .expect_err("nested array");
            assert!(
                nested
                    .to_string()
                    .starts_with("inner: invalid type: sequence"),
                "{nested}"
            );
            assert!(from_value::<Outer>(&json!("a")).is_err());
            assert!(from_value::<Outer>(&json!(null)).is_err());
        }
    }
}

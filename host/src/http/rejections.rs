//! What a 400 says when a body, a query string or a path does not parse: in our words, naming
//! the field and what it must be, instead of the parser's text ("Failed to deserialize query
//! string: limit: number too large to fit in target type"). Both error forms (platform and v1)
//! carry these sentences.

use std::error::Error as _;

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};

/// The parser's own message, without axum's preamble: `<path>: <message>` or `<message>`.
fn innermost(error: &(dyn std::error::Error + 'static)) -> String {
    let mut current = error;
    while let Some(next) = current.source() {
        current = next;
    }
    current.to_string()
}

/// The serde messages we reword, by how they begin.
const MESSAGE_STARTS: [&str; 9] = [
    "invalid type: ",
    "invalid value: ",
    "invalid length ",
    "unknown field `",
    "missing field `",
    "duplicate field `",
    "unknown variant `",
    "invalid digit",
    "number too ",
];

/// Splits `<path>: <message>` into the field's path (if any) and serde's message; a trailing
/// ` at line L column C` goes.
fn split(text: &str) -> (Option<&str>, &str) {
    let text = match text.rfind(" at line ") {
        Some(at) if text[at..].contains(" column ") => &text[..at],
        _ => text,
    };
    let start = MESSAGE_STARTS
        .iter()
        .filter_map(|start| text.find(start))
        .min()
        .or_else(|| text.find(": ").map(|colon| colon + 2));
    match start {
        Some(0) | None => (None, text),
        Some(at) => {
            let path = text[..at].trim_end_matches(": ").trim();
            (
                (!path.is_empty() && path != ".").then_some(path),
                &text[at..],
            )
        }
    }
}

/// The first back-quoted name in `message`.
fn quoted(message: &str) -> Option<&str> {
    let open = message.find('`')? + 1;
    let close = message[open..].find('`')? + open;
    Some(&message[open..close])
}

/// serde's name for an expected type, as a person would say it.
fn expected(serde_name: &str) -> String {
    let name = serde_name.trim();
    match name {
        "a string" | "string" => "a string".into(),
        "a boolean" | "bool" => "`true` or `false`".into(),
        "a sequence" => "an array".into(),
        "a map" => "an object".into(),
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number".into(),
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number, 0 or more".into(),
        "f32" | "f64" => "a number".into(),
        other if other.starts_with("struct ") => "an object".into(),
        other if other.starts_with("a ") || other.starts_with("an ") => other.into(),
        _ => "the documented type".into(),
    }
}

/// One sentence for a field that does not deserialize; `place` says where ("the body", "the
/// query").
fn reword(text: &str, place: &str) -> String {
    let (path, message) = split(text);
    let field = |name: &str| match path {
        Some(path) => format!("`{path}.{name}`"),
        None => format!("`{name}`"),
    };
    let at = path.map_or_else(|| place.to_owned(), |path| format!("`{path}`"));
    if message.starts_with("missing field `") {
        let name = quoted(message).unwrap_or("a field");
        return format!("{} is required", field(name));
    }
    if message.starts_with("unknown field `") {
        let name = quoted(message).unwrap_or("a field");
        return match message.split_once("expected one of ") {
            Some((_, allowed)) => {
                format!(
                    "{} is not accepted here; the accepted fields are {allowed}",
                    field(name)
                )
            }
            None => format!("{} is not accepted here", field(name)),
        };
    }
    if message.starts_with("duplicate field `") {
        let name = quoted(message).unwrap_or("a field");
        return format!("{} is given more than once", field(name));
    }
    if message.starts_with("unknown variant `") {
        return match message.split_once("expected one of ") {
            Some((_, allowed)) => format!("{at} must be one of {allowed}"),
            None => format!("{at} has a value that is not accepted"),
        };
    }
    if let Some(rest) = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
    {
        return match rest.split_once(", expected ") {
            Some((_, wanted)) => format!("{at} must be {}", expected(wanted)),
            None => format!("{at} has a value of the wrong type"),
        };
    }
    if message.starts_with("invalid length ") {
        return match message.split_once(", expected ") {
            Some((_, wanted)) => format!("{at} must have {wanted}"),
            None => format!("{at} has the wrong number of items"),
        };
    }
    if message.starts_with("number too ") {
        return format!("{at} is out of range");
    }
    if message.starts_with("invalid digit") || message.starts_with("cannot parse integer") {
        return format!("{at} must be a whole number");
    }
    if message.starts_with("invalid float literal") {
        return format!("{at} must be a number");
    }
    if message.contains("`true` or `false`") {
        return format!("{at} must be `true` or `false`");
    }
    format!("{at} has a value that is not accepted")
}

/// A body that is JSON but does not fit the endpoint's fields: `text` is the deserializer's
/// `<path>: <message>`.
pub(super) fn body_shape(text: &str) -> String {
    format!("invalid request body: {}", reword(text, "the body"))
}

/// A JSON body that does not parse or does not fit the endpoint's fields.
pub(super) fn json_body(rejection: &JsonRejection) -> String {
    match rejection {
        JsonRejection::MissingJsonContentType(_) => {
            "expected a JSON body with `Content-Type: application/json`".into()
        }
        JsonRejection::JsonSyntaxError(error) => {
            let text = error.source().map(innermost).unwrap_or_default();
            match text.rsplit_once(" at line ") {
                Some((_, position)) => format!(
                    "the body is not valid JSON: it breaks off or has an unexpected character at line {}",
                    position.replacen(" column ", ", column ", 1)
                ),
                None => "the body is not valid JSON".into(),
            }
        }
        JsonRejection::JsonDataError(error) => {
            body_shape(&error.source().map(innermost).unwrap_or_default())
        }
        JsonRejection::BytesRejection(_) => {
            "the body could not be read: it is larger than this endpoint accepts, or was cut off"
                .into()
        }
        _ => "the body could not be read as JSON".into(),
    }
}

/// A query string that does not fit the endpoint's parameters.
pub(super) fn query(rejection: &QueryRejection) -> String {
    let text = rejection.source().map(innermost).unwrap_or_default();
    format!("invalid query: {}", reword(&text, "the query string"))
}

/// A path segment that does not fit its parameter (in practice: not UTF-8 once decoded).
pub(super) fn path(rejection: &PathRejection) -> String {
    match rejection {
        PathRejection::FailedToDeserializePathParams(_) => {
            "invalid path: a path parameter is not valid (percent-encoded UTF-8 text expected)"
                .into()
        }
        _ => "invalid path".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_errors_name_the_field_in_our_words() {
        assert_eq!(
            reword(
                "limit: number too large to fit in target type",
                "the query string"
            ),
            "`limit` is out of range"
        );
        assert_eq!(
            reword("page: invalid digit found in string", "the query string"),
            "`page` must be a whole number"
        );
        assert_eq!(
            reword("missing field `wallets`", "the query string"),
            "`wallets` is required"
        );
    }

    #[test]
    fn body_errors_name_the_field_in_our_words() {
        assert_eq!(
            reword(
                "registeredWallets[0]: invalid type: integer `1`, expected a string at line 1 column 24",
                "the body"
            ),
            "`registeredWallets[0]` must be a string"
        );
        assert_eq!(
            reword("missing field `email` at line 1 column 2", "the body"),
            "`email` is required"
        );
        assert_eq!(
            reword(
                "unknown field `nme`, expected one of `name`, `scopes` at line 1 column 6",
                "the body"
            ),
            "`nme` is not accepted here; the accepted fields are `name`, `scopes`"
        );
        assert_eq!(
            reword(
                "invalid type: sequence, expected struct SignupRequest at line 1 column 0",
                "the body"
            ),
            "the body must be an object"
        );
        assert_eq!(
            reword(
                "expiresInDays: invalid type: string \"7\", expected i64 at line 1 column 20",
                "the body"
            ),
            "`expiresInDays` must be a whole number"
        );
    }
}

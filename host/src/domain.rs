//! Values that can only be built by parsing, so that whatever travels past the HTTP edge already
//! carries its guarantee. Each `parse` error is a sentence a person can act on.

use std::fmt;

/// A Solana wallet address: base58 of 32 bytes, in canonical form (its OpenAPI schema comes
/// with it, from `crucible-solana`'s `openapi` feature).
pub use crucible_solana::WalletAddress;

/// A lower-cased e-mail address of plausible shape (delivery is what proves it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Email(String);

impl Email {
    pub(crate) fn parse(raw: &str) -> Result<Self, String> {
        let email = raw.trim().to_lowercase();
        let problem = "`email` must be an e-mail address such as name@example.com";
        if email.len() > 254 || email.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(problem.into());
        }
        let Some((local, domain)) = email.split_once('@') else {
            return Err(problem.into());
        };
        let domain_ok = domain.contains('.')
            && !domain.contains('@')
            && domain
                .split('.')
                .all(|label| !label.is_empty() && label.len() <= 63);
        if local.is_empty() || local.len() > 64 || !domain_ok {
            return Err(problem.into());
        }
        Ok(Email(email))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

/// A password that meets the rules; never logged, never stored (only its argon2id hash is).
pub(crate) struct Password(String);

impl Password {
    pub(crate) const RULES: &'static str = "a password must be 10 to 128 characters long and contain at least one letter and one digit";

    pub(crate) fn parse(raw: &str) -> Result<Self, String> {
        let length = raw.chars().count();
        let has_letter = raw.chars().any(char::is_alphabetic);
        let has_digit = raw.chars().any(|c| c.is_ascii_digit());
        if !(10..=128).contains(&length) || !has_letter || !has_digit {
            return Err(Self::RULES.into());
        }
        Ok(Password(raw.to_owned()))
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password(***)")
    }
}

/// A short human label (display names, key names): trimmed, no control characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Label(String);

impl Label {
    pub(crate) fn parse(field: &str, raw: &str, max_chars: usize) -> Result<Self, String> {
        let label = raw.trim();
        if label.is_empty() {
            return Err(format!("`{field}` must not be empty"));
        }
        if label.chars().count() > max_chars {
            return Err(format!("`{field}` must be at most {max_chars} characters"));
        }
        if label.chars().any(char::is_control) {
            return Err(format!("`{field}` must not contain control characters"));
        }
        Ok(Label(label.to_owned()))
    }

    pub(crate) fn into_inner(self) -> String {
        self.0
    }
}

/// An absolute `http(s)` URL, e.g. a webhook target or an avatar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HttpUrl(String);

impl HttpUrl {
    pub(crate) fn parse(field: &str, raw: &str) -> Result<Self, String> {
        let problem = || {
            format!(
                "`{field}` must be an absolute http:// or https:// URL of at most 2048 characters"
            )
        };
        if raw.len() > 2048 || !uri_characters_only(raw.trim()) {
            return Err(problem());
        }
        let url = url::Url::parse(raw.trim()).map_err(|_| problem())?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
            return Err(problem());
        }
        Ok(HttpUrl(url.to_string()))
    }

    pub(crate) fn into_inner(self) -> String {
        self.0
    }
}

/// Whether `text` uses only the characters an `http(s)` URI may hold (RFC 3986: unreserved,
/// sub-delimiters, `:/?@`, one `#`, `%` followed by two hex digits, and `[` `]` around an IPv6
/// host in the authority). The URL parser would take a space, `{` or `|` and escape it, but the
/// document calls such a string no URI (format `uri`), so it is refused as written.
fn uri_characters_only(text: &str) -> bool {
    let bytes = text.as_bytes();
    // The authority: after `scheme://`, up to the path, query or fragment.
    let authority = text.find("://").map_or(0..0, |at| {
        let start = at + 3;
        let end = text[start..]
            .find(['/', '?', '#'])
            .map_or(text.len(), |end| start + end);
        start..end
    });
    bytes.iter().filter(|byte| **byte == b'#').count() <= 1
        && bytes.iter().enumerate().all(|(at, byte)| match byte {
            b'%' => {
                bytes.get(at + 1).is_some_and(u8::is_ascii_hexdigit)
                    && bytes.get(at + 2).is_some_and(u8::is_ascii_hexdigit)
            }
            b'[' | b']' => authority.contains(&at),
            byte => byte.is_ascii_alphanumeric() || b"-._~:/?#@!$&'()*+,;=".contains(byte),
        })
}

/// How these values appear in the OpenAPI document: each schema states the rules its `parse`
/// checks, so a client generated from the document sends what the server accepts.
mod schemas {
    use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
    use utoipa::openapi::{RefOr, Schema};
    use utoipa::{PartialSchema, ToSchema};

    use super::{Email, HttpUrl, Password};

    fn string(format: SchemaFormat, description: &str) -> ObjectBuilder {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(format))
            .description(Some(description))
    }

    impl PartialSchema for Email {
        fn schema() -> RefOr<Schema> {
            string(
                SchemaFormat::KnownFormat(KnownFormat::Email),
                "An e-mail address (`local@domain.tld`, compared lower-cased)",
            )
            .max_length(Some(254))
            .into()
        }
    }
    impl ToSchema for Email {}

    impl PartialSchema for Password {
        fn schema() -> RefOr<Schema> {
            string(
                SchemaFormat::KnownFormat(KnownFormat::Password),
                super::Password::RULES,
            )
            .min_length(Some(10))
            .max_length(Some(128))
            // A letter and an ASCII digit, in either order.
            .pattern(Some(
                "^([\\s\\S]*[^\\W\\d_][\\s\\S]*[0-9][\\s\\S]*|[\\s\\S]*[0-9][\\s\\S]*[^\\W\\d_][\\s\\S]*)$",
            ))
            .into()
        }
    }
    impl ToSchema for Password {}

    impl PartialSchema for HttpUrl {
        fn schema() -> RefOr<Schema> {
            // The pattern is narrower than what `parse` accepts (user info, IP addresses, `xn--`
            // labels, which the URL parser checks further, and `%` escapes, whose exact pattern
            // makes Schemathesis' generator crawl): every URL it admits is accepted. Its other
            // characters are the URI characters `parse` accepts.
            string(
                SchemaFormat::Custom("uri".into()),
                "An absolute http:// or https:// URL of at most 2048 characters",
            )
            .max_length(Some(2048))
            .pattern(Some(
                "^https?://[A-Za-z](-?[A-Za-z0-9])*(\\.[A-Za-z](-?[A-Za-z0-9])*)*(:[0-9]{1,4})?([/?][A-Za-z0-9._~:/?@!$&'()*+,;=-]*)?(#[A-Za-z0-9._~:/?@!$&'()*+,;=-]*)?$",
            ))
            .examples(["https://example.com/hooks/crucible"])
            .into()
        }
    }
    impl ToSchema for HttpUrl {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_are_normalised_and_checked() {
        assert_eq!(
            Email::parse(" Ann@Example.COM ").expect("valid").as_str(),
            "ann@example.com"
        );
        for bad in [
            "",
            "ann",
            "ann@",
            "@example.com",
            "ann@example",
            "a b@example.com",
            "ann@@x.com",
            "ann@x..com",
        ] {
            assert!(Email::parse(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn passwords_follow_the_stated_rules() {
        assert!(Password::parse("correct horse 9").is_ok());
        assert_eq!(
            Password::parse("short1").err().as_deref(),
            Some(Password::RULES)
        );
        assert!(Password::parse("onlyletterslong").is_err());
        assert!(Password::parse("1234567890123").is_err());
        assert!(Password::parse(&"a1".repeat(65)).is_err());
        assert_eq!(
            format!("{:?}", Password::parse("secret pass 1").expect("ok")),
            "Password(***)"
        );
    }

    #[test]
    fn labels_and_urls() {
        assert_eq!(
            Label::parse("name", "  bot  ", 10)
                .expect("ok")
                .into_inner(),
            "bot"
        );
        assert!(Label::parse("name", "   ", 10).is_err());
        assert!(Label::parse("name", "elevenchars", 10).is_err());
        assert!(Label::parse("name", "a\u{7}b", 10).is_err());
        assert!(HttpUrl::parse("webhookUrl", "https://hooks.example.com/x").is_ok());
        assert!(HttpUrl::parse("webhookUrl", "ftp://example.com").is_err());
        assert!(HttpUrl::parse("webhookUrl", "/relative").is_err());
        assert!(
            HttpUrl::parse(
                "webhookUrl",
                "https://hooks.my-host.example:8443/a%20b?x=1#y"
            )
            .is_ok()
        );
        // An IPv6 host is written in brackets (delivery then judges the address itself).
        assert!(HttpUrl::parse("webhookUrl", "http://[64:ff9b::7f00:1]:8080/hook").is_ok());
        for not_a_uri in [
            "https://example.com/#N{",
            "https://example.com/a b",
            "https://example.com/%zz",
            "https://example.com/[x]",
        ] {
            assert!(
                HttpUrl::parse("webhookUrl", not_a_uri).is_err(),
                "{not_a_uri}"
            );
        }
    }
}

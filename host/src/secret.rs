//! A configured secret (the master key, an API key): readable where it is used, never printed.
//! `Debug` and `Display` both show `[redacted]`, so a `Config` or a setting that ends up in a
//! log line or an error message gives nothing away.

use std::convert::Infallible;
use std::fmt;
use std::str::FromStr;

#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret itself, for the one place that needs it (a header, a key derivation).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl FromStr for Secret {
    type Err = Infallible;

    fn from_str(value: &str) -> Result<Self, Infallible> {
        Ok(Secret(value.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_prints() {
        let key = Secret::new("ab".repeat(32));
        assert_eq!(format!("{key:?} {key}"), "[redacted] [redacted]");
        assert_eq!(format!("{:?}", Some(key.clone())), "Some([redacted])");
        assert_eq!(key.expose(), "ab".repeat(32));
    }
}

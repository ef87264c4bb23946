//! Where the host's model providers live (`docs/models.md`): a vendor name (`openai`, `ollama`…)
//! to a base URL and the API format spoken there. Only the host configures these, with
//! `--model-endpoint VENDOR=BASE_URL` or `CRUCIBLE_MODEL_ENDPOINTS`, over built-in defaults:
//! nothing an operator sends can add or change an address the server calls.

use std::collections::BTreeMap;

use crate::secret::Secret;

/// The built-in vendors and their documented API base URLs.
const DEFAULTS: &[(&str, &str)] = &[
    ("openai", "https://api.openai.com/v1"),
    ("anthropic", "https://api.anthropic.com/v1"),
    ("openrouter", "https://openrouter.ai/api/v1"),
    ("groq", "https://api.groq.com/openai/v1"),
    ("together", "https://api.together.xyz/v1"),
    ("mistral", "https://api.mistral.ai/v1"),
    ("deepseek", "https://api.deepseek.com/v1"),
    ("xai", "https://api.x.ai/v1"),
    ("ollama", "http://127.0.0.1:11434/v1"),
];

/// The vendor whose endpoint speaks Anthropic's Messages API; every other speaks OpenAI's chat
/// completions format.
const ANTHROPIC: &str = "anthropic";

/// The vendor of a local model server, which takes no key.
const KEYLESS: &str = "ollama";

/// Longest vendor name (the `<vendor>` of a `modelId`).
const MAX_VENDOR_LEN: usize = 32;

/// The request and answer format an endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiFormat {
    /// `POST {base}/chat/completions`, `Authorization: Bearer`.
    OpenAiChat,
    /// `POST {base}/messages`, `x-api-key`, `anthropic-version`.
    AnthropicMessages,
}

/// One vendor's endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub vendor: String,
    /// Without a trailing `/`.
    pub base_url: String,
    pub format: ApiFormat,
    /// Whether a call needs a key (a local Ollama takes none).
    pub needs_key: bool,
}

/// Every vendor the host can call, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints(BTreeMap<String, Endpoint>);

/// A `VENDOR=BASE_URL` setting, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointSetting {
    pub vendor: String,
    pub base_url: String,
}

impl Endpoints {
    /// The built-in defaults, then each setting in order (a later one for the same vendor wins).
    pub fn with_settings(settings: &[EndpointSetting]) -> Self {
        let mut endpoints = BTreeMap::new();
        let defaults = DEFAULTS.iter().map(|(vendor, url)| EndpointSetting {
            vendor: (*vendor).to_owned(),
            base_url: (*url).to_owned(),
        });
        for setting in defaults.chain(settings.iter().cloned()) {
            let format = if setting.vendor == ANTHROPIC {
                ApiFormat::AnthropicMessages
            } else {
                ApiFormat::OpenAiChat
            };
            endpoints.insert(
                setting.vendor.clone(),
                Endpoint {
                    needs_key: setting.vendor != KEYLESS,
                    vendor: setting.vendor,
                    base_url: setting.base_url,
                    format,
                },
            );
        }
        Endpoints(endpoints)
    }

    pub fn get(&self, vendor: &str) -> Option<&Endpoint> {
        self.0.get(vendor)
    }

    /// The vendor names, sorted.
    pub fn vendors(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// `a, b, c`: for error messages that name the vendors one may use.
    pub fn vendor_list(&self) -> String {
        self.vendors().collect::<Vec<_>>().join(", ")
    }
}

impl Default for Endpoints {
    fn default() -> Self {
        Endpoints::with_settings(&[])
    }
}

/// Parse `VENDOR=BASE_URL` (a flag's value or one item of `CRUCIBLE_MODEL_ENDPOINTS`).
pub fn parse_setting(text: &str) -> Result<EndpointSetting, String> {
    let (vendor, url) = text
        .split_once('=')
        .ok_or_else(|| format!("`{text}` is not VENDOR=BASE_URL"))?;
    let vendor = vendor.trim();
    if !is_vendor_name(vendor) {
        return Err(format!(
            "`{vendor}` is not a vendor name (1 to {MAX_VENDOR_LEN} of a-z, 0-9 and -)"
        ));
    }
    let base_url = url.trim().trim_end_matches('/');
    let parsed = url::Url::parse(base_url)
        .map_err(|_| format!("the base URL of `{vendor}` is not an absolute URL"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(format!(
            "the base URL of `{vendor}` must be http(s)://host…"
        ));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(format!(
            "the base URL of `{vendor}` must not have a query or fragment (paths are appended to it)"
        ));
    }
    Ok(EndpointSetting {
        vendor: vendor.to_owned(),
        base_url: base_url.to_owned(),
    })
}

/// A vendor name: lower-case letters, digits and `-`, as in a `modelId`'s `<vendor>`.
pub fn is_vendor_name(name: &str) -> bool {
    (1..=MAX_VENDOR_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The environment variable holding the host's default key of `vendor`:
/// `CRUCIBLE_MODEL_KEY_<VENDOR>` with `-` written `_`.
pub fn default_key_variable(vendor: &str) -> String {
    format!(
        "CRUCIBLE_MODEL_KEY_{}",
        vendor.to_ascii_uppercase().replace('-', "_")
    )
}

/// The host's default keys of the known vendors, read from the environment (empty values are
/// no key).
pub fn default_keys_from_env(endpoints: &Endpoints) -> BTreeMap<String, Secret> {
    endpoints
        .vendors()
        .filter_map(|vendor| {
            let value = std::env::var(default_key_variable(vendor)).ok()?;
            let value = value.trim();
            (!value.is_empty()).then(|| (vendor.to_owned(), Secret::new(value)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_cover_the_usual_vendors_and_anthropic_speaks_its_own_format() {
        let endpoints = Endpoints::default();
        assert_eq!(
            endpoints.vendor_list(),
            "anthropic, deepseek, groq, mistral, ollama, openai, openrouter, together, xai"
        );
        let anthropic = endpoints.get("anthropic").expect("anthropic");
        assert_eq!(anthropic.format, ApiFormat::AnthropicMessages);
        assert_eq!(anthropic.base_url, "https://api.anthropic.com/v1");
        let groq = endpoints.get("groq").expect("groq");
        assert_eq!(groq.format, ApiFormat::OpenAiChat);
        assert!(groq.needs_key);
        let ollama = endpoints.get("ollama").expect("ollama");
        assert_eq!(ollama.base_url, "http://127.0.0.1:11434/v1");
        assert!(!ollama.needs_key, "a local model takes no key");
    }

    #[test]
    fn settings_add_vendors_and_override_defaults() {
        let settings = [
            parse_setting("openai=http://127.0.0.1:9000/v1/").expect("valid"),
            parse_setting(" local-vllm = http://10.0.0.5:8000/v1").expect("valid"),
        ];
        let endpoints = Endpoints::with_settings(&settings);
        assert_eq!(
            endpoints.get("openai").expect("openai").base_url,
            "http://127.0.0.1:9000/v1",
            "the trailing slash is dropped"
        );
        let local = endpoints.get("local-vllm").expect("added");
        assert_eq!(local.format, ApiFormat::OpenAiChat);
        assert!(local.needs_key);
        assert!(endpoints.get("mistral").is_some(), "defaults stay");
    }

    #[test]
    fn bad_settings_say_what_is_wrong() {
        for (text, says) in [
            ("openai", "VENDOR=BASE_URL"),
            ("Open AI=https://x.example", "not a vendor name"),
            ("=https://x.example", "not a vendor name"),
            ("x=ftp://x.example", "http(s)"),
            ("x=not a url", "not an absolute URL"),
            ("x=https://x.example/v1?key=1", "query"),
        ] {
            let error = parse_setting(text).expect_err(text);
            assert!(error.contains(says), "{text}: {error}");
        }
    }

    #[test]
    fn default_key_variables_are_upper_case() {
        assert_eq!(default_key_variable("openai"), "CRUCIBLE_MODEL_KEY_OPENAI");
        assert_eq!(
            default_key_variable("local-vllm"),
            "CRUCIBLE_MODEL_KEY_LOCAL_VLLM"
        );
    }
}

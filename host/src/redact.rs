//! What may be logged or shown about an endpoint. RPC providers put API keys in the URL's path
//! (`/v2/<key>`) or query (`?api-key=`), and webhook receivers put tokens in theirs, so an error
//! message or log line names only `scheme://host[:port]`. reqwest's errors quote the full URL
//! they failed on: [`error`] rewrites that too.

/// `scheme://host[:port]` of `raw`, with `/…` when a path, query or fragment followed, and
/// without any `user:password@`. Text that is not an absolute URL becomes `…`.
pub(crate) fn url(raw: &str) -> String {
    let Ok(parsed) = url::Url::parse(raw) else {
        return "…".to_owned();
    };
    let Some(host) = parsed.host_str() else {
        return format!("{}:…", parsed.scheme());
    };
    let port = parsed.port().map(|p| format!(":{p}")).unwrap_or_default();
    let rest = (parsed.path() != "/" && !parsed.path().is_empty())
        || parsed.query().is_some()
        || parsed.fragment().is_some();
    // `host_str` keeps an IPv6 literal's brackets.
    format!(
        "{}://{host}{port}{}",
        parsed.scheme(),
        if rest { "/…" } else { "" }
    )
}

/// A reqwest error's message (and its causes'), with the URL it names redacted.
pub(crate) fn error(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    match error.url() {
        Some(failed) => text.replace(failed.as_str(), &url(failed.as_str())),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_in_paths_queries_and_userinfo_never_show() {
        assert_eq!(
            url("https://solana-mainnet.g.alchemy.com/v2/SECRETKEY"),
            "https://solana-mainnet.g.alchemy.com/…"
        );
        assert_eq!(
            url("https://mainnet.helius-rpc.com/?api-key=SECRET"),
            "https://mainnet.helius-rpc.com/…"
        );
        assert_eq!(
            url("http://user:pass@10.0.0.5:8899"),
            "http://10.0.0.5:8899"
        );
        assert_eq!(url("http://[::1]:8080/hooks/T0KEN"), "http://[::1]:8080/…");
        assert_eq!(url("not a url SECRET"), "…");
        for shown in [
            url("https://h.example/v2/SECRETKEY"),
            url("https://h.example/?api-key=SECRET"),
            url("http://user:SECRET@h.example"),
        ] {
            assert!(!shown.contains("SECRET"), "{shown}");
        }
    }

    #[tokio::test]
    async fn a_transport_error_names_only_the_host() {
        // Nothing listens on port 9 of localhost: a connection error quoting the URL.
        let client = reqwest::Client::new();
        let failed = client
            .post("http://127.0.0.1:9/v2/SECRETKEY?api-key=SECRET")
            .send()
            .await
            .expect_err("nothing listens there");
        assert!(failed.to_string().contains("SECRET"), "reqwest quotes it");
        let shown = error(&failed);
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains("http://127.0.0.1:9/…"), "{shown}");
    }
}

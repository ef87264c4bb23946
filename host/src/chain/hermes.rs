//! USD prices on a real cluster, from Pyth's Hermes service (`GET /v2/updates/price/latest?
//! ids[]=<feed>&parsed=true`, and `/v2/updates/price/<unix second>` for a past price). On a real cluster the simulated market must never value a
//! wallet, so this is where SOL's price comes from there.
//!
//! A Hermes answer carries, per feed, an integer `price` and `conf` as decimal strings, an
//! exponent `expo` (the value is `price × 10^expo`) and the `publish_time` in Unix seconds. We
//! keep the last good price per feed for a short while (the public service allows 30 requests
//! per 10 s per address, and a snapshot round values many wallets at once), refuse a price older
//! than `max_age`, and when Hermes cannot be reached fall back to the cached price only while
//! it is still fresh enough. Every refusal names the token and why.
//!
//! Built against the documented response format and tested against responses the tests build;
//! it has not been run against the live service from this repository's CI (no network there).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Deserialize;

/// Pyth's SOL/USD feed.
pub const SOL_USD_FEED: &str = "ef0d8b6fda2ceba41da15d4095d1da392a0d2f8ed0c6c7bc0f4cfac8c280b56d";
/// Pyth's USDC/USD feed.
pub(crate) const USDC_USD_FEED: &str =
    "eaa020c61cc479712813461ce153894a96a6c00b21ed0cfc2798d1f9a9e9c94a";
/// The public Hermes instance.
pub(crate) const DEFAULT_BASE_URL: &str = "https://hermes.pyth.network";

const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// A price in US dollars as Hermes published it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct UsdPrice {
    pub price: f64,
    /// Pyth's confidence interval around `price` (same unit).
    pub confidence: f64,
    pub published_at: DateTime<Utc>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum PriceError {
    #[error("no price feed is configured for {0}")]
    UnknownToken(String),
    #[error("the price of {token} is unavailable: {detail}")]
    Unavailable { token: String, detail: String },
    #[error("the price of {token} is {age_secs} s old, more than the {max_age_secs} s allowed")]
    Stale {
        token: String,
        age_secs: i64,
        max_age_secs: i64,
    },
}

/// How the Hermes source is set up.
#[derive(Debug, Clone)]
pub(crate) struct HermesConfig {
    pub base_url: String,
    /// Token symbol → Pyth feed id (hex, with or without `0x`).
    pub feeds: HashMap<String, String>,
    /// Oldest acceptable `publish_time`, relative to now.
    pub max_age: chrono::Duration,
    /// How long a fetched price is reused before asking Hermes again.
    pub cache_for: chrono::Duration,
}

impl Default for HermesConfig {
    fn default() -> Self {
        HermesConfig {
            base_url: DEFAULT_BASE_URL.to_owned(),
            feeds: HashMap::from([
                ("SOL".to_owned(), SOL_USD_FEED.to_owned()),
                ("USDC".to_owned(), USDC_USD_FEED.to_owned()),
            ]),
            max_age: chrono::Duration::seconds(60),
            cache_for: chrono::Duration::seconds(5),
        }
    }
}

impl HermesConfig {
    /// The deployment's settings: its Hermes service, its SOL/USD feed (USDC keeps Pyth's), and
    /// the oldest price it accepts.
    pub(crate) fn from_config(config: &crate::config::Config) -> Self {
        let mut hermes = HermesConfig {
            base_url: config.price_api_url.clone(),
            max_age: chrono::Duration::seconds(
                i64::try_from(config.price_max_age_secs).unwrap_or(i64::MAX),
            ),
            ..HermesConfig::default()
        };
        hermes
            .feeds
            .insert("SOL".to_owned(), config.price_feed_sol.clone());
        hermes
    }
}

#[derive(Debug)]
pub(crate) struct HermesPrices {
    http: reqwest::Client,
    config: HermesConfig,
    /// Feed id (normalised) → when we fetched it and what it said.
    cache: Mutex<HashMap<String, (DateTime<Utc>, UsdPrice)>>,
    /// (feed, Unix second) → the update published then, for past prices.
    history: Mutex<HashMap<(String, i64), UsdPrice>>,
}

/// Past prices kept before the history is cleared (a bound, not a working set: a round asks for
/// a few distinct seconds).
const HISTORY_ENTRIES: usize = 4096;

#[derive(Deserialize)]
struct LatestUpdates {
    parsed: Option<Vec<ParsedUpdate>>,
}

#[derive(Deserialize)]
struct ParsedUpdate {
    id: String,
    price: RawPrice,
}

#[derive(Deserialize)]
struct RawPrice {
    price: String,
    conf: String,
    expo: i32,
    publish_time: i64,
}

impl HermesPrices {
    pub(crate) fn new(config: HermesConfig) -> Result<Self, reqwest::Error> {
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(Duration::from_secs(3))
            .build()?;
        Ok(HermesPrices {
            http,
            config,
            cache: Mutex::new(HashMap::new()),
            history: Mutex::new(HashMap::new()),
        })
    }

    /// The USD price of `token` at `now`: cached when fetched less than `cache_for` ago,
    /// otherwise fetched; refused when older than `max_age`.
    pub(crate) async fn usd_price(
        &self,
        token: &str,
        now: DateTime<Utc>,
    ) -> Result<UsdPrice, PriceError> {
        let feed = self.feed_of(token)?;
        let cached = self.cached(&feed);
        if let Some((fetched_at, price)) = cached
            && now - fetched_at < self.config.cache_for
        {
            return self.fresh(token, price, now);
        }
        match self.fetch(&feed).await {
            Ok(price) => {
                self.remember(&feed, now, price);
                self.fresh(token, price, now)
            }
            // Hermes down or answering nonsense: a cached price is still good while it is fresh.
            Err(detail) => match cached {
                Some((_, price)) => {
                    self.fresh(token, price, now)
                        .map_err(|_| PriceError::Unavailable {
                            token: token.to_owned(),
                            detail,
                        })
                }
                None => Err(PriceError::Unavailable {
                    token: token.to_owned(),
                    detail,
                }),
            },
        }
    }

    fn fresh(
        &self,
        token: &str,
        price: UsdPrice,
        now: DateTime<Utc>,
    ) -> Result<UsdPrice, PriceError> {
        self.within_max_age(token, price, now - price.published_at)
    }

    /// `price`, unless `gap` (its distance from the moment asked about) exceeds the max age.
    fn within_max_age(
        &self,
        token: &str,
        price: UsdPrice,
        gap: chrono::Duration,
    ) -> Result<UsdPrice, PriceError> {
        if gap > self.config.max_age {
            return Err(PriceError::Stale {
                token: token.to_owned(),
                age_secs: gap.num_seconds(),
                max_age_secs: self.config.max_age.num_seconds(),
            });
        }
        Ok(price)
    }

    fn cached(&self, feed: &str) -> Option<(DateTime<Utc>, UsdPrice)> {
        let cache = self
            .cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        cache.get(feed).copied()
    }

    fn remember(&self, feed: &str, fetched_at: DateTime<Utc>, price: UsdPrice) {
        let mut cache = self
            .cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        cache.insert(feed.to_owned(), (fetched_at, price));
    }

    /// The USD price of `token` as Pyth published it at `at` (Hermes' `GET
    /// /v2/updates/price/{publish_time}`): what a past deposit is valued at. Refused when the
    /// nearest update Hermes has is further than `max_age` from `at`. Answers are kept per feed
    /// and second (a snapshot round may value many flows of the same moment).
    pub(crate) async fn usd_price_at(
        &self,
        token: &str,
        at: DateTime<Utc>,
    ) -> Result<UsdPrice, PriceError> {
        let feed = self.feed_of(token)?;
        let second = at.timestamp();
        let key = (feed.clone(), second);
        let remembered = self
            .history
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .get(&key)
            .copied();
        let price = match remembered {
            Some(price) => price,
            None => {
                let price = self
                    .fetch_at(&feed, &second.to_string())
                    .await
                    .map_err(|detail| PriceError::Unavailable {
                        token: token.to_owned(),
                        detail,
                    })?;
                let mut history = self
                    .history
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner());
                if history.len() >= HISTORY_ENTRIES {
                    history.clear();
                }
                history.insert(key, price);
                price
            }
        };
        self.within_max_age(token, price, (price.published_at - at).abs())
    }

    /// The configured Pyth feed of `token`, normalised.
    fn feed_of(&self, token: &str) -> Result<String, PriceError> {
        self.config
            .feeds
            .get(token)
            .map(|id| normalise(id))
            .ok_or_else(|| PriceError::UnknownToken(token.to_owned()))
    }

    /// The newest update (one request to Hermes).
    async fn fetch(&self, feed: &str) -> Result<UsdPrice, String> {
        self.fetch_at(feed, "latest").await
    }

    /// One request to Hermes for the update `at` (`latest` or a Unix second); the error is a
    /// sentence for the caller's message.
    async fn fetch_at(&self, feed: &str, at: &str) -> Result<UsdPrice, String> {
        let url = format!(
            "{}/v2/updates/price/{at}",
            self.config.base_url.trim_end_matches('/')
        );
        let response = self
            .http
            .get(&url)
            .query(&[("ids[]", format!("0x{feed}").as_str()), ("parsed", "true")])
            .send()
            .await
            .map_err(|error| {
                format!(
                    "cannot reach Hermes at {}: {}",
                    crate::redact::url(&url),
                    crate::redact::error(&error)
                )
            })?;
        let status = response.status();
        if !status.is_success() {
            return Err(format!("Hermes answered HTTP {status}"));
        }
        let body: LatestUpdates = response.json().await.map_err(|error| {
            format!(
                "unexpected answer from Hermes: {}",
                crate::redact::error(&error)
            )
        })?;
        let update = body
            .parsed
            .unwrap_or_default()
            .into_iter()
            .find(|update| normalise(&update.id) == feed)
            .ok_or_else(|| format!("Hermes returned no update for feed {feed}"))?;
        parse_price(&update.price)
    }
}

/// `price × 10^expo`, refusing what cannot be a price.
fn parse_price(raw: &RawPrice) -> Result<UsdPrice, String> {
    let scale = 10f64.powi(raw.expo);
    let price = raw
        .price
        .parse::<i64>()
        .map_err(|_| format!("price `{}` is not an integer", raw.price))? as f64
        * scale;
    let confidence =
        raw.conf
            .parse::<u64>()
            .map_err(|_| format!("confidence `{}` is not an integer", raw.conf))? as f64
            * scale;
    if !(price.is_finite() && price > 0.0) {
        return Err(format!("price {price} is not positive"));
    }
    let published_at = DateTime::from_timestamp(raw.publish_time, 0)
        .ok_or_else(|| format!("publish_time {} is out of range", raw.publish_time))?;
    Ok(UsdPrice {
        price,
        confidence,
        published_at,
    })
}

/// Feed ids compare without `0x` and case.
fn normalise(id: &str) -> String {
    id.trim_start_matches("0x").to_ascii_lowercase()
}

#[cfg(test)]
#[expect(
    clippy::unwrap_used,
    reason = "a test that cannot go on should fail loudly"
)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::extract::{Query, State};
    use axum::http::StatusCode;
    use axum::response::{IntoResponse, Response};
    use axum::routing::get;
    use serde_json::{Value, json};

    use super::*;

    /// What the fake Hermes answers, and how often it was asked.
    #[derive(Clone)]
    struct Fake {
        answer: Arc<Mutex<(StatusCode, Value)>>,
        requests: Arc<AtomicUsize>,
        last_query: Arc<Mutex<Vec<(String, String)>>>,
        /// `latest` or the Unix second asked for.
        last_at: Arc<Mutex<String>>,
    }

    async fn latest(
        State(fake): State<Fake>,
        axum::extract::Path(asked): axum::extract::Path<String>,
        Query(query): Query<Vec<(String, String)>>,
    ) -> Response {
        fake.requests.fetch_add(1, Ordering::SeqCst);
        *fake.last_query.lock().unwrap() = query;
        *fake.last_at.lock().unwrap() = asked;
        let (status, body) = fake.answer.lock().unwrap().clone();
        (status, axum::Json(body)).into_response()
    }

    async fn serve(status: StatusCode, body: Value) -> (String, Fake) {
        let fake = Fake {
            answer: Arc::new(Mutex::new((status, body))),
            requests: Arc::new(AtomicUsize::new(0)),
            last_query: Arc::new(Mutex::new(Vec::new())),
            last_at: Arc::new(Mutex::new(String::new())),
        };
        let app = axum::Router::new()
            .route("/v2/updates/price/{at}", get(latest))
            .with_state(fake.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (format!("http://{address}"), fake)
    }

    /// A response in Hermes' documented shape for one feed.
    fn update(feed: &str, price: &str, conf: &str, expo: i32, publish_time: i64) -> Value {
        json!({
            "binary": { "encoding": "hex", "data": ["504e4155"] },
            "parsed": [{
                "id": feed,
                "price": { "price": price, "conf": conf, "expo": expo, "publish_time": publish_time },
                "ema_price": { "price": price, "conf": conf, "expo": expo, "publish_time": publish_time },
                "metadata": { "slot": 1, "proof_available_time": publish_time, "prev_publish_time": publish_time - 1 }
            }]
        })
    }

    fn source(base_url: String) -> HermesPrices {
        HermesPrices::new(HermesConfig {
            base_url,
            ..HermesConfig::default()
        })
        .unwrap()
    }

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(seconds, 0).unwrap()
    }

    #[tokio::test]
    async fn a_published_price_is_scaled_by_its_exponent() {
        let (url, fake) = serve(
            StatusCode::OK,
            update(SOL_USD_FEED, "14735012345", "6543210", -8, 1_800_000_000),
        )
        .await;
        let price = source(url)
            .usd_price("SOL", at(1_800_000_003))
            .await
            .unwrap();
        assert!((price.price - 147.350_123_45).abs() < 1e-9, "{price:?}");
        assert!((price.confidence - 0.065_432_1).abs() < 1e-12);
        assert_eq!(price.published_at, at(1_800_000_000));
        let query = fake.last_query.lock().unwrap().clone();
        assert!(query.contains(&("ids[]".to_owned(), format!("0x{SOL_USD_FEED}"))));
        assert!(query.contains(&("parsed".to_owned(), "true".to_owned())));
    }

    #[tokio::test]
    async fn a_past_price_is_the_update_published_at_that_second() {
        let (url, fake) = serve(
            StatusCode::OK,
            update(SOL_USD_FEED, "12000000000", "1000", -8, 1_700_000_000),
        )
        .await;
        let hermes = source(url);
        let price = hermes.usd_price_at("SOL", at(1_700_000_000)).await.unwrap();
        assert!((price.price - 120.0).abs() < 1e-9, "{price:?}");
        assert_eq!(*fake.last_at.lock().unwrap(), "1700000000");
        let query = fake.last_query.lock().unwrap().clone();
        assert!(query.contains(&("ids[]".to_owned(), format!("0x{SOL_USD_FEED}"))));
        // The same second again is remembered, not asked for.
        hermes.usd_price_at("SOL", at(1_700_000_000)).await.unwrap();
        assert_eq!(fake.requests.load(Ordering::SeqCst), 1);
        // An update far from the moment asked for is refused, naming the gap.
        let far = hermes.usd_price_at("SOL", at(1_700_000_500)).await;
        assert!(
            matches!(far, Err(PriceError::Stale { age_secs: 500, .. })),
            "{far:?}"
        );
        // The newest price still uses `latest`.
        hermes.usd_price("SOL", at(1_700_000_010)).await.unwrap();
        assert_eq!(*fake.last_at.lock().unwrap(), "latest");
    }

    #[tokio::test]
    async fn prices_are_cached_for_a_few_seconds() {
        let (url, fake) = serve(
            StatusCode::OK,
            update(SOL_USD_FEED, "15000000000", "1", -8, 1_800_000_000),
        )
        .await;
        let hermes = source(url);
        for offset in [0, 1, 4] {
            hermes
                .usd_price("SOL", at(1_800_000_000 + offset))
                .await
                .unwrap();
        }
        assert_eq!(
            fake.requests.load(Ordering::SeqCst),
            1,
            "served from the cache"
        );
        hermes.usd_price("SOL", at(1_800_000_006)).await.unwrap();
        assert_eq!(
            fake.requests.load(Ordering::SeqCst),
            2,
            "asked again after 5 s"
        );
    }

    #[tokio::test]
    async fn a_stale_price_is_refused_with_its_age() {
        let (url, _) = serve(
            StatusCode::OK,
            update(SOL_USD_FEED, "15000000000", "1", -8, 1_800_000_000),
        )
        .await;
        let error = source(url)
            .usd_price("SOL", at(1_800_000_090))
            .await
            .unwrap_err();
        assert_eq!(
            error,
            PriceError::Stale {
                token: "SOL".into(),
                age_secs: 90,
                max_age_secs: 60
            }
        );
    }

    #[tokio::test]
    async fn an_outage_falls_back_to_a_fresh_cached_price_then_fails_clearly() {
        let (url, fake) = serve(
            StatusCode::OK,
            update(SOL_USD_FEED, "15000000000", "1", -8, 1_800_000_000),
        )
        .await;
        let hermes = source(url);
        hermes.usd_price("SOL", at(1_800_000_000)).await.unwrap();
        *fake.answer.lock().unwrap() = (StatusCode::TOO_MANY_REQUESTS, json!({}));
        let price = hermes.usd_price("SOL", at(1_800_000_030)).await.unwrap();
        assert_eq!(
            price.price, 150.0,
            "the cached price is 30 s old: still good"
        );
        let error = hermes
            .usd_price("SOL", at(1_800_000_070))
            .await
            .unwrap_err();
        match error {
            PriceError::Unavailable { token, detail } => {
                assert_eq!(token, "SOL");
                assert!(detail.contains("429"), "{detail}");
            }
            other => panic!("expected Unavailable, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn malformed_or_missing_answers_are_unavailable_not_zero() {
        for body in [
            json!({ "binary": { "encoding": "hex", "data": [] }, "parsed": [] }),
            update(USDC_USD_FEED, "100000000", "1", -8, 1_800_000_000),
            update(SOL_USD_FEED, "-5", "1", -8, 1_800_000_000),
            update(SOL_USD_FEED, "12.5", "1", -8, 1_800_000_000),
            json!({ "unexpected": true }),
        ] {
            let (url, _) = serve(StatusCode::OK, body.clone()).await;
            let error = source(url)
                .usd_price("SOL", at(1_800_000_000))
                .await
                .unwrap_err();
            assert!(
                matches!(error, PriceError::Unavailable { .. }),
                "{body}: {error:?}"
            );
        }
    }

    #[tokio::test]
    async fn a_token_without_a_feed_is_named() {
        let hermes = source("http://127.0.0.1:9".into());
        assert_eq!(
            hermes.usd_price("BONK", at(0)).await.unwrap_err(),
            PriceError::UnknownToken("BONK".into())
        );
    }

    #[tokio::test]
    async fn an_unreachable_service_is_unavailable() {
        // Port 9 (discard) is closed on the test machine: the connection is refused at once.
        let error = source("http://127.0.0.1:9".into())
            .usd_price("SOL", at(0))
            .await
            .unwrap_err();
        assert!(
            matches!(&error, PriceError::Unavailable { detail, .. } if detail.contains("cannot reach Hermes")),
            "{error:?}"
        );
    }
}

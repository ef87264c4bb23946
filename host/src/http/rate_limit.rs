//! Rate limits: GCRA (the `governor` crate) per key, with SPEC §7.1's 429 answer. A handler opts in
//! by taking an extractor such as [`IpLimit<AuthPolicy>`], so its limit is visible in its signature.
//! `CRUCIBLE_RATE_LIMITS=off` turns every limiter into a no-op.

use std::marker::PhantomData;
use std::net::{IpAddr, SocketAddr};
use std::num::NonZeroU32;
use std::time::Duration;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use governor::clock::{Clock as _, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use super::error::ApiError;
use crate::state::AppState;

/// One keyed limit: at most `count` requests per `period` per key, refilling smoothly.
pub struct Limiter {
    enabled: bool,
    inner: DefaultKeyedRateLimiter<String>,
    clock: DefaultClock,
}

impl Limiter {
    pub fn new(enabled: bool, count: u32, period: Duration) -> Self {
        let burst = NonZeroU32::new(count).unwrap_or(NonZeroU32::MIN);
        let quota = Quota::with_period(period / burst.get())
            .unwrap_or_else(|| Quota::per_second(burst))
            .allow_burst(burst);
        Limiter {
            enabled,
            inner: RateLimiter::keyed(quota),
            clock: DefaultClock::default(),
        }
    }

    /// Count one request for `key`; refused with the seconds until the next one may pass.
    pub fn check(&self, key: &str) -> Result<(), ApiError> {
        if !self.enabled {
            return Ok(());
        }
        self.inner.check_key(&key.to_owned()).map_err(|not_until| {
            let wait = not_until.wait_time_from(self.clock.now());
            ApiError::RateLimited {
                retry_after: wait.as_secs_f64().ceil().max(1.0) as u64,
            }
        })
    }

    /// Forget keys whose budget is full again, so memory follows the active clients only.
    pub fn retain_recent(&self) {
        self.inner.retain_recent();
        self.inner.shrink_to_fit();
    }
}

/// Every limiter of the server, built once from the configuration.
pub struct RateLimits {
    /// Sign-up, sign-in and nonce requests: brute-force protection, per client IP.
    pub auth: Limiter,
    /// Account and key-management requests, per client IP.
    pub account: Limiter,
    /// Tournament reads (list, detail, leaderboard, performance): SPEC §8, 120 / 60 s per IP.
    pub tournament_reads: Limiter,
    /// Registrations: SPEC §8, 10 / 60 s per IP …
    pub registrations_per_ip: Limiter,
    /// … and 5 / 60 s per tournament; either limit gives 429.
    pub registrations_per_tournament: Limiter,
    /// Live leaderboard streams: SPEC §8, 20 connections / 60 s per IP.
    pub live_connections: Limiter,
    /// Public dungeon reads (list, detail, quote, leaderboard, run page), like tournament reads:
    /// 120 / 60 s per IP.
    pub dungeon_reads: Limiter,
    /// `v1/public` agent creation (and strategy uploads): SPEC §8, 10 per hour per key.
    pub v1_create: Limiter,
    /// `v1/public` start / stop: SPEC §8, 100 per hour per key.
    pub v1_control: Limiter,
    /// `v1/public` reads: SPEC §8, 1000 per hour per key.
    pub v1_reads: Limiter,
}

impl RateLimits {
    pub fn new(enabled: bool) -> Self {
        let minute = Duration::from_secs(60);
        let hour = Duration::from_secs(3600);
        RateLimits {
            auth: Limiter::new(enabled, 20, minute),
            account: Limiter::new(enabled, 300, minute),
            tournament_reads: Limiter::new(enabled, 120, minute),
            registrations_per_ip: Limiter::new(enabled, 10, minute),
            registrations_per_tournament: Limiter::new(enabled, 5, minute),
            live_connections: Limiter::new(enabled, 20, minute),
            dungeon_reads: Limiter::new(enabled, 120, minute),
            v1_create: Limiter::new(enabled, 10, hour),
            v1_control: Limiter::new(enabled, 100, hour),
            v1_reads: Limiter::new(enabled, 1000, hour),
        }
    }

    /// Every limiter, for housekeeping.
    pub fn all(&self) -> Vec<&Limiter> {
        vec![
            &self.auth,
            &self.account,
            &self.tournament_reads,
            &self.registrations_per_ip,
            &self.registrations_per_tournament,
            &self.live_connections,
            &self.dungeon_reads,
            &self.v1_create,
            &self.v1_control,
            &self.v1_reads,
        ]
    }
}

/// The client's address: the peer of the connection, or the first `X-Forwarded-For` hop when
/// the server is configured to sit behind a trusted proxy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientIp(pub IpAddr);

impl FromRequestParts<AppState> for ClientIp {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        if state.config.trust_forwarded_for
            && let Some(ip) = parts
                .headers
                .get("x-forwarded-for")
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.split(',').next())
                .and_then(|first| first.trim().parse::<IpAddr>().ok())
        {
            return Ok(ClientIp(ip));
        }
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|ConnectInfo(addr)| addr.ip())
            .unwrap_or(IpAddr::from([127, 0, 0, 1]));
        Ok(ClientIp(peer))
    }
}

/// Which limiter an [`IpLimit`] applies.
pub trait Policy: Send + Sync + 'static {
    fn limiter(limits: &RateLimits) -> &Limiter;
}

pub struct AuthPolicy;
impl Policy for AuthPolicy {
    fn limiter(limits: &RateLimits) -> &Limiter {
        &limits.auth
    }
}

pub struct AccountPolicy;
impl Policy for AccountPolicy {
    fn limiter(limits: &RateLimits) -> &Limiter {
        &limits.account
    }
}

pub struct TournamentReadPolicy;
impl Policy for TournamentReadPolicy {
    fn limiter(limits: &RateLimits) -> &Limiter {
        &limits.tournament_reads
    }
}

pub struct LivePolicy;
impl Policy for LivePolicy {
    fn limiter(limits: &RateLimits) -> &Limiter {
        &limits.live_connections
    }
}

pub struct RegistrationPolicy;
impl Policy for RegistrationPolicy {
    fn limiter(limits: &RateLimits) -> &Limiter {
        &limits.registrations_per_ip
    }
}

/// Extractor that counts the request against policy `P`'s limiter under the client's IP.
pub struct IpLimit<P>(PhantomData<P>);

impl<P: Policy> FromRequestParts<AppState> for IpLimit<P> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let Ok(ClientIp(ip)) = ClientIp::from_request_parts(parts, state).await;
        P::limiter(&state.limits).check(&ip.to_string())?;
        Ok(IpLimit(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_past_the_budget_and_says_when_to_retry() {
        let limiter = Limiter::new(true, 3, Duration::from_secs(60));
        for _ in 0..3 {
            assert!(limiter.check("1.2.3.4").is_ok());
        }
        match limiter.check("1.2.3.4") {
            Err(ApiError::RateLimited { retry_after }) => assert!((1..=20).contains(&retry_after)),
            other => panic!("expected 429, got {other:?}"),
        }
        assert!(limiter.check("5.6.7.8").is_ok(), "keys are independent");
    }

    #[test]
    fn disabled_limiter_lets_everything_through() {
        let limiter = Limiter::new(false, 1, Duration::from_secs(60));
        for _ in 0..100 {
            assert!(limiter.check("k").is_ok());
        }
    }
}

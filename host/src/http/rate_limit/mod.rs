//! Rate limits: an exact sliding window per key, with the platform's 429 answer (`retryAfter`
//! in the body and a `Retry-After` header, see `docs/api.md`). A handler opts in by taking an
//! extractor such as [`IpLimit<AuthPolicy>`], so its limit is visible in its signature.
//! `CRUCIBLE_RATE_LIMITS=off` turns every limiter into a no-op.
//!
//! Why a sliding window and not a token bucket: a published limit such as "10 per hour" must
//! hold for every hour, not only the first. A token bucket (GCRA) sized as "burst 10, one token
//! every 6 minutes" lets the full burst through and then keeps refilling, so about 19 requests fit
//! in the first hour. Here each key keeps the instants of its admissions within the last window;
//! a request passes only while fewer than `count` of them are younger than `window`, so no
//! window of that length, wherever it starts, ever holds more than `count` admissions, and a
//! client that waits a full window always gets its whole budget back. The cost is at most
//! `count` instants per active key. Time comes from the server's injected [`Clock`], so tests
//! move a manual clock instead of sleeping.

mod exact;
pub(crate) mod gossip;
mod window;

use std::marker::PhantomData;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use chrono::{DateTime, Utc};

use super::error::ApiError;
use crate::clock::Clock;
use crate::db::Store;
use crate::state::AppState;
use window::Window;

/// A request over its limit: whole seconds until the next one is allowed. Each HTTP family
/// answers it in its own 429 form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("rate limit exceeded: retry in {retry_after} s")]
pub struct Limited {
    pub retry_after: u64,
}

impl From<Limited> for ApiError {
    fn from(Limited { retry_after }: Limited) -> Self {
        ApiError::RateLimited { retry_after }
    }
}

/// How a limit holds across the nodes sharing one PostgreSQL database (on one node, every
/// limit is this node's memory alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// Exact across nodes: each check is a short transaction on the database. For limits that
    /// guard writes (sign-in, registrations, turns, agent creation), where the request writes
    /// anyway and a burst spread over the nodes must not get N times the budget.
    Exact,
    /// Each node counts in memory and tells the others what it admitted every
    /// [`gossip::FLUSH_EVERY`]: a read pays no database round trip, and the service as a whole
    /// admits at most the budget plus what the other nodes admitted in the last flush interval.
    Gossip,
}

/// Where a shared limiter coordinates, once the node shares its database with others.
enum Shared {
    Exact(Store),
    Gossip(tokio::sync::mpsc::UnboundedSender<gossip::Hit>),
}

/// One keyed limit: at most `count` requests in any `window`, per key.
pub struct Limiter {
    name: &'static str,
    sharing: Sharing,
    enabled: bool,
    count: usize,
    window: chrono::Duration,
    clock: Arc<dyn Clock>,
    /// This node's admissions.
    local: Window,
    /// What the other nodes reported they admitted ([`Sharing::Gossip`]).
    remote: Window,
    shared: OnceLock<Shared>,
}

impl Limiter {
    #[cfg(test)]
    pub(crate) fn new(enabled: bool, count: u32, window: Duration, clock: Arc<dyn Clock>) -> Self {
        Self::named("limit", Sharing::Gossip, enabled, count, window, clock)
    }

    fn named(
        name: &'static str,
        sharing: Sharing,
        enabled: bool,
        count: u32,
        window: Duration,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Limiter {
            name,
            sharing,
            enabled,
            count: count.max(1) as usize,
            window: chrono::Duration::from_std(window).unwrap_or(chrono::Duration::MAX),
            clock,
            local: Window::default(),
            remote: Window::default(),
            shared: OnceLock::new(),
        }
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    pub fn sharing(&self) -> Sharing {
        self.sharing
    }

    /// Count one request for `key`; refused with the whole seconds until enough admissions
    /// leave the window (so a retry at that time passes).
    pub async fn check(&self, key: &str) -> Result<(), Limited> {
        if !self.enabled {
            return Ok(());
        }
        let now = self.clock.now();
        match self.shared.get() {
            None => self.check_in_memory(key, now, false),
            Some(Shared::Gossip(outbox)) => {
                self.check_in_memory(key, now, true)?;
                // The gossip task ends only with the node.
                let _ = outbox.send(gossip::Hit {
                    limiter: self.name,
                    key: key.to_owned(),
                    at: now,
                });
                Ok(())
            }
            Some(Shared::Exact(store)) => {
                match exact::check(store, self.name, key, self.count, self.window, now).await {
                    Ok(verdict) => verdict,
                    Err(error) => {
                        // The database is what failed; the request will most likely fail on it
                        // too. Hold this node's share of the limit rather than refuse outright.
                        tracing::warn!(%error, limiter = self.name, "shared rate limit unreadable; counting on this node");
                        self.check_in_memory(key, now, false)
                    }
                }
            }
        }
    }

    /// The sliding window in this node's memory, plus (`with_remote`) what the other nodes
    /// reported admitting.
    fn check_in_memory(
        &self,
        key: &str,
        now: DateTime<Utc>,
        with_remote: bool,
    ) -> Result<(), Limited> {
        let remote = if with_remote {
            self.remote.recent(key, now, self.window)
        } else {
            Vec::new()
        };
        let mut admitted = self.local.lock();
        let recent = admitted.entry(key.to_owned()).or_default();
        window::prune(recent, now, self.window);
        if recent.len() + remote.len() < self.count {
            recent.push_back(now);
            return Ok(());
        }
        let mut all: Vec<DateTime<Utc>> = recent.iter().chain(remote.iter()).copied().collect();
        all.sort_unstable();
        Err(refusal(&all, self.count, self.window, now))
    }

    /// Admissions another node reported (gossip).
    fn heard(&self, key: &str, at: DateTime<Utc>, n: usize) {
        if self.sharing == Sharing::Gossip {
            self.remote.add(key, at, n.min(self.count));
        }
    }

    /// [`Limiter::check`] without the database, for unit tests.
    #[cfg(test)]
    fn check_now(&self, key: &str) -> Result<(), Limited> {
        self.check_in_memory(key, self.clock.now(), true)
    }

    /// Forget keys with no admission inside the window, so memory follows the active clients only.
    pub(crate) fn retain_recent(&self) {
        let now = self.clock.now();
        self.local.retain_recent(now, self.window);
        self.remote.retain_recent(now, self.window);
    }
}

/// The refusal for a key whose admissions inside the window are `admitted` (oldest first, at
/// least `count` of them): the wait until enough of them leave for one more to fit.
fn refusal(
    admitted: &[DateTime<Utc>],
    count: usize,
    window: chrono::Duration,
    now: DateTime<Utc>,
) -> Limited {
    let must_leave = admitted.len() + 1 - count;
    let free_at = admitted.get(must_leave - 1).map_or(now, |at| *at + window);
    let wait_ms = u64::try_from((free_at - now).num_milliseconds()).unwrap_or(0);
    Limited {
        retry_after: wait_ms.div_ceil(1000).max(1),
    }
}

/// Delete shared admissions older than any window (the node's housekeeping, on PostgreSQL).
pub(crate) async fn prune_shared(store: &Store, now: DateTime<Utc>) -> sqlx::Result<u64> {
    exact::prune(store, now).await
}

/// Every limiter of the server, built once from the configuration.
pub struct RateLimits {
    /// Sign-up, sign-in and nonce requests: brute-force protection, per client IP.
    pub auth: Limiter,
    /// Account and key-management requests, per client IP.
    pub account: Limiter,
    /// Tournament reads (list, detail, leaderboard, performance): 120 / 60 s per IP.
    pub tournament_reads: Limiter,
    /// Registrations: 10 / 60 s per IP, every request counted …
    pub registrations_per_ip: Limiter,
    /// … and 5 / 60 s per tournament and client (the account, else the IP), counting only
    /// well-formed requests for a tournament the client may see, so one client's junk never
    /// locks anyone else out; either limit gives 429.
    pub registrations_per_tournament: Limiter,
    /// Live leaderboard streams: 20 connections / 60 s per IP.
    pub live_connections: Limiter,
    /// Public dungeon reads (list, detail, quote, leaderboard, run page), like tournament reads:
    /// 120 / 60 s per IP.
    pub dungeon_reads: Limiter,
    /// Dungeon turns: 60 / 60 s per run (legal or not), so a looping client cannot flood the
    /// run's event log or the node.
    pub dungeon_turns: Limiter,
    /// Dungeon watch streams opened: 20 / 60 s per run.
    pub dungeon_watches: Limiter,
    /// `v1/public` agent creation (and strategy uploads): 10 per hour per account (all its keys).
    pub v1_create: Limiter,
    /// `v1/public` start / stop: 100 per hour per account.
    pub v1_control: Limiter,
    /// `v1/public` reads: 1000 per hour per account.
    pub v1_reads: Limiter,
}

impl RateLimits {
    /// Every limit of the contract, each read as "at most N in any window of that length".
    pub(crate) fn new(enabled: bool, clock: Arc<dyn Clock>) -> Self {
        let minute = Duration::from_secs(60);
        let hour = Duration::from_secs(3600);
        let limit = |name, sharing, count, window| {
            Limiter::named(name, sharing, enabled, count, window, clock.clone())
        };
        use Sharing::{Exact, Gossip};
        RateLimits {
            auth: limit("auth", Exact, 20, minute),
            account: limit("account", Gossip, 300, minute),
            tournament_reads: limit("tournament_reads", Gossip, 120, minute),
            registrations_per_ip: limit("registrations_per_ip", Exact, 10, minute),
            registrations_per_tournament: limit("registrations_per_tournament", Exact, 5, minute),
            live_connections: limit("live_connections", Exact, 20, minute),
            dungeon_reads: limit("dungeon_reads", Gossip, 120, minute),
            dungeon_turns: limit("dungeon_turns", Exact, 60, minute),
            dungeon_watches: limit("dungeon_watches", Exact, 20, minute),
            v1_create: limit("v1_create", Exact, 10, hour),
            v1_control: limit("v1_control", Exact, 100, hour),
            v1_reads: limit("v1_reads", Gossip, 1000, hour),
        }
    }

    /// Make every limit hold across the nodes sharing `store` (PostgreSQL): exact limits check
    /// on the database from now on; gossiped ones report to `gossip`.
    fn share(&self, store: &Store, gossip: &tokio::sync::mpsc::UnboundedSender<gossip::Hit>) {
        for limiter in self.all() {
            let shared = match limiter.sharing {
                Sharing::Exact => Shared::Exact(store.clone()),
                Sharing::Gossip => Shared::Gossip(gossip.clone()),
            };
            if limiter.shared.set(shared).is_err() {
                tracing::warn!(limiter = limiter.name, "rate limit shared already");
            }
        }
    }

    fn by_name(&self, name: &str) -> Option<&Limiter> {
        self.all().into_iter().find(|limiter| limiter.name == name)
    }

    /// Every limiter, for housekeeping.
    pub(crate) fn all(&self) -> Vec<&Limiter> {
        vec![
            &self.auth,
            &self.account,
            &self.tournament_reads,
            &self.registrations_per_ip,
            &self.registrations_per_tournament,
            &self.live_connections,
            &self.dungeon_reads,
            &self.dungeon_turns,
            &self.dungeon_watches,
            &self.v1_create,
            &self.v1_control,
            &self.v1_reads,
        ]
    }
}

/// The client's address: the peer of the connection or, behind `trusted_proxies` proxies the
/// host runs, the `X-Forwarded-For` hop that the outermost trusted proxy saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClientIp(pub IpAddr);

impl ClientIp {
    /// The address limits count under: an IPv4 address as it is, an IPv6 client by its /64
    /// (one subscriber is usually handed a whole /64, and could otherwise rotate through 2⁶⁴
    /// addresses to reset every limit). IPv4-mapped IPv6 counts as the IPv4 address.
    pub(crate) fn limit_key(self) -> IpAddr {
        match self.0 {
            IpAddr::V4(v4) => IpAddr::V4(v4),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => {
                    let s = v6.segments();
                    IpAddr::V6(Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
                }
            },
        }
    }
}

/// The client address in `X-Forwarded-For` (all such headers, in order) behind `trusted`
/// proxies. Each proxy appends the address it received the request from, so reading from the
/// right, the first `trusted - 1` hops are our own proxies and the next one is the client;
/// anything further left was written by the client and is never believed. `None` when the
/// header has fewer hops than that (a misconfigured chain) or the hop is not an address.
fn forwarded_client(headers: &axum::http::HeaderMap, trusted: usize) -> Option<IpAddr> {
    if trusted == 0 {
        return None;
    }
    let hops: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(str::trim)
        .filter(|hop| !hop.is_empty())
        .collect();
    let hop = hops.len().checked_sub(trusted).and_then(|i| hops.get(i))?;
    hop.parse::<IpAddr>().ok()
}

impl FromRequestParts<AppState> for ClientIp {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        if let Some(ip) = forwarded_client(&parts.headers, state.config.trusted_proxies) {
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
pub(crate) trait Policy: Send + Sync + 'static {
    fn limiter(limits: &RateLimits) -> &Limiter;
}

pub(crate) struct AuthPolicy;
impl Policy for AuthPolicy {
    fn limiter(limits: &RateLimits) -> &Limiter {
        &limits.auth
    }
}

pub(crate) struct AccountPolicy;
impl Policy for AccountPolicy {
    fn limiter(limits: &RateLimits) -> &Limiter {
        &limits.account
    }
}

pub(crate) struct TournamentReadPolicy;
impl Policy for TournamentReadPolicy {
    fn limiter(limits: &RateLimits) -> &Limiter {
        &limits.tournament_reads
    }
}

pub(crate) struct LivePolicy;
impl Policy for LivePolicy {
    fn limiter(limits: &RateLimits) -> &Limiter {
        &limits.live_connections
    }
}

pub(crate) struct RegistrationPolicy;
impl Policy for RegistrationPolicy {
    fn limiter(limits: &RateLimits) -> &Limiter {
        &limits.registrations_per_ip
    }
}

/// Extractor that counts the request against policy `P`'s limiter under the client's IP.
pub(crate) struct IpLimit<P>(PhantomData<P>);

impl<P: Policy> FromRequestParts<AppState> for IpLimit<P> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let Ok(client) = ClientIp::from_request_parts(parts, state).await;
        P::limiter(&state.limits)
            .check(&client.limit_key().to_string())
            .await?;
        Ok(IpLimit(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    #[test]
    fn ipv6_clients_count_by_their_slash_64() {
        let key = |text: &str| {
            ClientIp(text.parse().expect("address"))
                .limit_key()
                .to_string()
        };
        assert_eq!(key("2001:db8:1:2:aaaa::1"), "2001:db8:1:2::");
        assert_eq!(key("2001:db8:1:2:ffff:ffff:ffff:ffff"), "2001:db8:1:2::");
        assert_ne!(key("2001:db8:1:3::1"), key("2001:db8:1:2::1"));
        assert_eq!(key("::ffff:203.0.113.7"), "203.0.113.7");
        assert_eq!(key("203.0.113.7"), "203.0.113.7");
    }

    #[test]
    fn forwarded_for_is_read_from_the_right_past_the_trusted_proxies() {
        let headers = |values: &[&str]| {
            let mut map = axum::http::HeaderMap::new();
            for value in values {
                map.append("x-forwarded-for", value.parse().expect("header"));
            }
            map
        };
        let ip = |text: &str| Some(text.parse::<IpAddr>().expect("address"));
        // The client sent a forged hop; our one proxy appended the real address.
        let forged = headers(&["6.6.6.6, 198.51.100.4"]);
        assert_eq!(forwarded_client(&forged, 1), ip("198.51.100.4"));
        assert_eq!(
            forwarded_client(&forged, 0),
            None,
            "no proxy: never believed"
        );
        // Two proxies (CDN, then load balancer): the second hop from the right.
        let two = headers(&["6.6.6.6, 198.51.100.4", "10.0.0.2"]);
        assert_eq!(forwarded_client(&two, 2), ip("198.51.100.4"));
        assert_eq!(forwarded_client(&two, 1), ip("10.0.0.2"));
        // Fewer hops than proxies, or garbage: the peer address is used instead.
        assert_eq!(forwarded_client(&headers(&["198.51.100.4"]), 2), None);
        assert_eq!(forwarded_client(&headers(&["not-an-ip"]), 1), None);
        assert_eq!(
            forwarded_client(&headers(&["2001:db8::1"]), 1),
            ip("2001:db8::1")
        );
    }

    fn limiter(count: u32, window_secs: u64) -> (Limiter, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::new(crate::clock::from_millis(
            1_700_000_000_000,
        )));
        let limiter = Limiter::new(true, count, Duration::from_secs(window_secs), clock.clone());
        (limiter, clock)
    }

    fn retry_after(result: Result<(), Limited>) -> u64 {
        match result {
            Err(Limited { retry_after }) => retry_after,
            other => panic!("expected 429, got {other:?}"),
        }
    }

    #[test]
    fn refuses_past_the_budget_and_says_when_to_retry() {
        let (limiter, clock) = limiter(3, 60);
        for _ in 0..3 {
            assert!(limiter.check_now("1.2.3.4").is_ok());
        }
        assert_eq!(retry_after(limiter.check_now("1.2.3.4")), 60);
        assert!(limiter.check_now("5.6.7.8").is_ok(), "keys are independent");
        clock.advance(chrono::Duration::seconds(45));
        assert_eq!(retry_after(limiter.check_now("1.2.3.4")), 15);
    }

    #[test]
    fn n_pass_then_refused_until_the_whole_window_has_passed() {
        let (limiter, clock) = limiter(10, 3600);
        for n in 0..10 {
            assert!(limiter.check_now("key").is_ok(), "request {n}");
        }
        assert!(limiter.check_now("key").is_err(), "the 11th in the hour");
        // A token bucket refilling one every 6 minutes would let one through here.
        clock.advance(chrono::Duration::minutes(30));
        assert!(limiter.check_now("key").is_err(), "half an hour later");
        clock.advance(chrono::Duration::milliseconds(30 * 60 * 1000 - 1));
        assert_eq!(
            retry_after(limiter.check_now("key")),
            1,
            "1 ms before the hour"
        );
        clock.advance(chrono::Duration::milliseconds(1));
        for n in 0..10 {
            assert!(limiter.check_now("key").is_ok(), "next hour, request {n}");
        }
        assert!(limiter.check_now("key").is_err());
    }

    #[test]
    fn a_steady_drip_never_gets_more_than_n_into_any_window() {
        // 10 per 60 s, a request every 700 ms for 20 minutes.
        let (limiter, clock) = limiter(10, 60);
        let step = 700;
        let mut admitted = Vec::new();
        for tick in 0..(20 * 60 * 1000 / step) {
            if limiter.check_now("drip").is_ok() {
                admitted.push(tick * step);
            }
            clock.advance(chrono::Duration::milliseconds(step));
        }
        for (i, start) in admitted.iter().enumerate() {
            let in_window = admitted[i..]
                .iter()
                .take_while(|at| **at < start + 60_000)
                .count();
            assert!(
                in_window <= 10,
                "{in_window} admitted in the minute from {start} ms"
            );
        }
        // ... and the budget is really used: 10 a minute, 200 in 20 minutes.
        assert_eq!(admitted.len(), 200);
    }

    #[test]
    fn idle_keys_are_forgotten() {
        let (limiter, clock) = limiter(2, 60);
        assert!(limiter.check_now("a").is_ok());
        clock.advance(chrono::Duration::seconds(30));
        assert!(limiter.check_now("b").is_ok());
        clock.advance(chrono::Duration::seconds(30));
        limiter.retain_recent();
        let keys = limiter.local.keys();
        assert_eq!(keys, vec!["b".to_owned()]);
    }

    #[tokio::test]
    async fn disabled_limiter_lets_everything_through() {
        let clock = Arc::new(ManualClock::new(chrono::Utc::now()));
        let limiter = Limiter::new(false, 1, Duration::from_secs(60), clock);
        for _ in 0..100 {
            assert!(limiter.check("k").await.is_ok());
        }
    }

    #[test]
    fn what_other_nodes_admitted_counts_against_the_budget() {
        let (limiter, clock) = limiter(5, 60);
        let earlier = clock.now() - chrono::Duration::seconds(50);
        limiter.heard("1.2.3.4", earlier, 3);
        assert!(limiter.check_now("1.2.3.4").is_ok());
        assert!(limiter.check_now("1.2.3.4").is_ok());
        // 3 elsewhere + 2 here: the next waits until the oldest report leaves the window.
        assert_eq!(retry_after(limiter.check_now("1.2.3.4")), 10);
        clock.advance(chrono::Duration::seconds(10));
        assert!(
            limiter.check_now("1.2.3.4").is_ok(),
            "the reported ones left"
        );
        // A report can never count for more than the whole budget.
        limiter.heard("5.6.7.8", clock.now(), 1_000);
        assert_eq!(
            limiter
                .remote
                .recent("5.6.7.8", clock.now(), limiter.window)
                .len(),
            5
        );
    }

    #[test]
    fn a_refusal_waits_for_exactly_enough_admissions_to_leave() {
        let at = |s: i64| crate::clock::from_millis(s * 1000);
        let admitted = [at(0), at(10), at(20), at(30)];
        // 4 inside a 60 s window with a budget of 3: two must leave, the second at 70 s.
        let refused = refusal(&admitted, 3, chrono::Duration::seconds(60), at(40));
        assert_eq!(refused.retry_after, 30);
    }
}

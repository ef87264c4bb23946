//! Password hashing with argon2id (OWASP's minimum parameters: 19 MiB, 2 passes).
//!
//! Each hash takes 19 MiB and a core for tens of milliseconds, so a flood of sign-ups or logins
//! could take the host's memory if every request hashed at once. [`hash_limited`] and
//! [`verify_limited`] run at most [`MAX_CONCURRENT`] hashes at a time on the blocking pool; the
//! rest wait their turn, and a request that cannot get a turn within [`MAX_WAIT`] is told the
//! server is busy instead of piling up.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};
use tokio::sync::Semaphore;

use crate::domain::Password;

/// Hashes at once: one per core, at least two (≈ 19 MiB each).
pub static MAX_CONCURRENT: LazyLock<usize> = LazyLock::new(|| {
    std::thread::available_parallelism()
        .map(usize::from)
        .unwrap_or(2)
        .max(2)
});
/// Longest a request waits for a turn before it is answered "busy".
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(10);

static TURNS: LazyLock<Semaphore> = LazyLock::new(|| Semaphore::new(*MAX_CONCURRENT));
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// Why a limited hash did not run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HashError {
    #[error("too many sign-ins at once; try again in a few seconds")]
    Busy,
    #[error("password hashing failed: {0}")]
    Failed(String),
}

/// The most hashes that ever ran at once in this process (tests check the limit with it).
pub fn peak_concurrency() -> usize {
    PEAK.load(Ordering::SeqCst)
}

/// Run `work` on the blocking pool once a turn is free.
async fn limited<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, HashError> {
    let _turn = tokio::time::timeout(MAX_WAIT, TURNS.acquire())
        .await
        .map_err(|_| HashError::Busy)?
        .map_err(|_| HashError::Busy)?;
    let running = IN_FLIGHT.fetch_add(1, Ordering::SeqCst) + 1;
    PEAK.fetch_max(running, Ordering::SeqCst);
    let result = tokio::task::spawn_blocking(work).await;
    IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    result.map_err(|error| HashError::Failed(error.to_string()))
}

/// [`hash`], within the concurrency limit.
pub(crate) async fn hash_limited(password: Password) -> Result<String, HashError> {
    limited(move || hash(&password))
        .await?
        .map_err(|error| HashError::Failed(error.to_string()))
}

/// [`verify`], within the concurrency limit.
pub(crate) async fn verify_limited(
    candidate: String,
    stored: Option<String>,
) -> Result<bool, HashError> {
    limited(move || verify(&candidate, stored.as_deref())).await
}

fn hasher() -> Argon2<'static> {
    let params = Params::new(19 * 1024, 2, 1, None).unwrap_or_default();
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// The PHC string to store for `password`.
pub(crate) fn hash(password: &Password) -> anyhow::Result<String> {
    let salt = SaltString::generate(&mut rand::rngs::OsRng);
    hasher()
        .hash_password(password.expose().as_bytes(), &salt)
        .map(|phc| phc.to_string())
        .map_err(|error| anyhow::anyhow!("hashing the password failed: {error}"))
}

/// Whether `candidate` matches the stored PHC string. With no stored hash (unknown account) a
/// dummy hash is checked anyway, so "no such e-mail" and "wrong password" take the same time.
pub(crate) fn verify(candidate: &str, stored: Option<&str>) -> bool {
    const DUMMY: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$S0SbZf8Y1VwQeZQ3i4hBVTnlVVbvMZkOyxNV2vo6D+U";
    let phc = stored.unwrap_or(DUMMY);
    let Ok(parsed) = PasswordHash::new(phc) else {
        return false;
    };
    hasher()
        .verify_password(candidate.as_bytes(), &parsed)
        .is_ok()
        && stored.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verifies_only_the_right_password() {
        let password = Password::parse("correct horse 9").expect("valid");
        let stored = hash(&password).expect("hashes");
        assert!(stored.starts_with("$argon2id$"));
        assert!(verify("correct horse 9", Some(&stored)));
        assert!(!verify("correct horse 8", Some(&stored)));
        assert!(!verify("correct horse 9", None));
    }
}

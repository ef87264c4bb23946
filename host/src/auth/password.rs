//! Password hashing with argon2id (OWASP's minimum parameters: 19 MiB, 2 passes).

use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

use crate::domain::Password;

fn hasher() -> Argon2<'static> {
    let params = Params::new(19 * 1024, 2, 1, None).unwrap_or_default();
    Argon2::new(Algorithm::Argon2id, Version::V0x13, params)
}

/// The PHC string to store for `password`.
pub fn hash(password: &Password) -> anyhow::Result<String> {
    let salt = SaltString::generate(&mut rand::rngs::OsRng);
    hasher()
        .hash_password(password.expose().as_bytes(), &salt)
        .map(|phc| phc.to_string())
        .map_err(|error| anyhow::anyhow!("hashing the password failed: {error}"))
}

/// Whether `candidate` matches the stored PHC string. With no stored hash (unknown account) a
/// dummy hash is checked anyway, so "no such e-mail" and "wrong password" take the same time.
pub fn verify(candidate: &str, stored: Option<&str>) -> bool {
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

//! Secrets: random tokens, their one-way hashes, and sealing (authenticated encryption) of the
//! secrets we must be able to read back — custodial wallet keys and webhook secrets — under the
//! server's master key. Nothing secret is ever stored in plaintext.

use std::path::Path;

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use anyhow::{Context, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

const NONCE_LEN: usize = 12;
pub(crate) const MASTER_KEY_FILE: &str = "master.key";

/// `n` random bytes from the operating system's CSPRNG, base58-encoded.
pub fn random_base58(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    crucible_solana::base58::encode(&bytes)
}

/// A random identifier with a readable prefix, e.g. `acc_3mJr7…`.
pub(crate) fn new_id(prefix: &str) -> String {
    format!("{prefix}_{}", random_base58(16))
}

/// A random identifier that sorts by `at_ms` (Unix milliseconds), e.g. `dec_1Bx3kq9vW…`: the
/// time as 8 base-58 digits (the alphabet is in ASCII order, so a fixed width sorts as the
/// number does), then 17 random ones (98 bits). For rows inserted many at a time and keyed by
/// their id: a random id puts each new key on a random page of the key's index, a time-ordered
/// one puts them all on its last.
///
/// The random digits come from the thread's CSPRNG (seeded from the operating system's), not
/// from the operating system per id: these ids only need to be unique, and a tick writes one
/// for its decision, so a system call and a big-number base-58 encoding per id were about 6 %
/// of the ticker's runtime thread on PostgreSQL (docs/benchmarks.md, "Agent ticks").
pub(crate) fn ordered_id(prefix: &str, at_ms: i64) -> String {
    use crucible_solana::base58::ALPHABET;
    let mut digits = [0u8; 8];
    let mut rest = u64::try_from(at_ms).unwrap_or(0);
    for digit in digits.iter_mut().rev() {
        *digit = ALPHABET[(rest % 58) as usize];
        rest /= 58;
    }
    let mut id = String::with_capacity(prefix.len() + 1 + digits.len() + RANDOM_DIGITS);
    id.push_str(prefix);
    id.push('_');
    id.extend(digits.iter().map(|&digit| char::from(digit)));
    // 58^17 is below 2^100, so the remainders of a 128-bit draw are uniform to within 2^-28.
    let mut random: u128 = rand::Rng::r#gen(&mut rand::thread_rng());
    for _ in 0..RANDOM_DIGITS {
        id.push(char::from(ALPHABET[(random % 58) as usize]));
        random /= 58;
    }
    id
}

/// The random base-58 digits of an [`ordered_id`].
const RANDOM_DIGITS: usize = 17;

/// Lower-case hex SHA-256: how bearer secrets (sessions, API keys, run keys) are stored and found.
pub fn sha256_hex(data: impl AsRef<[u8]>) -> String {
    hex::encode(Sha256::digest(data.as_ref()))
}

/// Equality that takes the same time wherever the inputs differ.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

/// Encrypts and decrypts secrets at rest with AES-256-GCM under the master key.
pub struct Sealer {
    cipher: Aes256Gcm,
    /// Root of [`Sealer::derived_key`]: a one-way function of the master key, so a derived key
    /// never reveals the master key.
    derivation_root: [u8; 32],
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(..)")
    }
}

impl Sealer {
    pub fn new(key: [u8; 32]) -> Self {
        let mut root = Sha256::new();
        root.update(b"crucible key derivation\0");
        root.update(key);
        Sealer {
            cipher: Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(&key)),
            derivation_root: root.finalize().into(),
        }
    }

    /// The configured master key (64 hex characters) or, when none is configured, the one in
    /// `<data_dir>/master.key`, generated on first start.
    pub(crate) fn load(configured: Option<&str>, data_dir: &Path) -> anyhow::Result<Self> {
        if let Some(hex_key) = configured {
            return Ok(Sealer::new(
                parse_key(hex_key).context("CRUCIBLE_MASTER_KEY")?,
            ));
        }
        let path = data_dir.join(MASTER_KEY_FILE);
        if path.exists() {
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            return Ok(Sealer::new(
                parse_key(text.trim()).with_context(|| path.display().to_string())?,
            ));
        }
        let mut key = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut key);
        write_private(&path, &hex::encode(key))?;
        tracing::warn!(
            path = %path.display(),
            "no CRUCIBLE_MASTER_KEY set: generated a development master key; set one in production"
        );
        Ok(Sealer::new(key))
    }

    /// Encrypt `plaintext`; the result (base64 of nonce ‖ ciphertext ‖ tag) is safe to store.
    pub(crate) fn seal(&self, plaintext: &[u8]) -> String {
        let mut nonce = [0u8; NONCE_LEN];
        rand::rngs::OsRng.fill_bytes(&mut nonce);
        // Encryption with a valid key and a fresh nonce cannot fail for in-memory buffers.
        let ciphertext = self
            .cipher
            .encrypt(Nonce::from_slice(&nonce), plaintext)
            .unwrap_or_default();
        let mut out = nonce.to_vec();
        out.extend_from_slice(&ciphertext);
        BASE64.encode(out)
    }

    /// Decrypt what [`Sealer::seal`] produced; fails if it was tampered with or sealed under another key.
    pub fn open(&self, sealed: &str) -> anyhow::Result<Vec<u8>> {
        let bytes = BASE64
            .decode(sealed)
            .context("sealed secret is not base64")?;
        if bytes.len() < NONCE_LEN {
            bail!("sealed secret is too short");
        }
        let (nonce, ciphertext) = bytes.split_at(NONCE_LEN);
        self.cipher
            .decrypt(Nonce::from_slice(nonce), ciphertext)
            .map_err(|_| anyhow::anyhow!("sealed secret does not open with this master key"))
    }

    /// Open a sealed 32-byte secret key (custodial and server wallets).
    pub(crate) fn open_key(&self, sealed: &str) -> anyhow::Result<[u8; 32]> {
        self.open(sealed)?
            .try_into()
            .map_err(|_| anyhow::anyhow!("the sealed key is not 32 bytes"))
    }

    /// Open a sealed text secret (the dungeon's map salt, run keys).
    pub(crate) fn open_text(&self, sealed: &str) -> anyhow::Result<String> {
        String::from_utf8(self.open(sealed)?).context("the sealed secret is not UTF-8 text")
    }
}

impl Sealer {
    /// A 32-byte key for one `purpose` (e.g. signing dungeon quotes), derived from the master
    /// key: the same on every node and across restarts, different per purpose, and nothing to
    /// store.
    pub(crate) fn derived_key(&self, purpose: &str) -> [u8; 32] {
        use hmac::{Hmac, Mac};
        // HMAC accepts keys of any length, so this cannot fail.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.derivation_root)
            .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
        mac.update(purpose.as_bytes());
        mac.finalize().into_bytes().into()
    }
}

fn parse_key(hex_key: &str) -> anyhow::Result<[u8; 32]> {
    let bytes = hex::decode(hex_key.trim()).context("the master key must be 64 hex characters")?;
    bytes
        .try_into()
        .map_err(|_| anyhow::anyhow!("the master key must be 32 bytes (64 hex characters)"))
}

fn write_private(path: &Path, contents: &str) -> anyhow::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(contents.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_ids_sort_by_their_time() {
        let times = [
            0,
            57,
            58,
            1_764_000_000_000,
            1_764_000_000_001,
            99_999_999_999_999,
        ];
        let ids: Vec<String> = times.iter().map(|&t| ordered_id("dec", t)).collect();
        for pair in ids.windows(2) {
            assert!(
                pair[0][..12] < pair[1][..12],
                "{} before {}",
                pair[0],
                pair[1]
            );
        }
        assert!(
            ids.iter()
                .all(|id| id.starts_with("dec_") && id.len() == 4 + 8 + RANDOM_DIGITS)
        );
        assert_ne!(
            ordered_id("dec", 5),
            ordered_id("dec", 5),
            "the rest is random"
        );
    }

    #[test]
    fn sealed_keys_and_texts_open_typed() {
        let sealer = Sealer::new([3u8; 32]);
        assert_eq!(
            sealer.open_key(&sealer.seal(&[9u8; 32])).expect("key"),
            [9u8; 32]
        );
        assert!(
            sealer.open_key(&sealer.seal(&[9u8; 31])).is_err(),
            "wrong length"
        );
        assert_eq!(
            sealer.open_text(&sealer.seal(b"salt")).expect("text"),
            "salt"
        );
        assert!(
            sealer.open_text(&sealer.seal(&[0xff, 0xfe])).is_err(),
            "not UTF-8"
        );
    }

    #[test]
    fn sealed_secrets_open_only_with_their_key() {
        let sealer = Sealer::new([7; 32]);
        let sealed = sealer.seal(b"wallet secret");
        assert_ne!(sealed.as_bytes(), b"wallet secret");
        assert_eq!(sealer.open(&sealed).expect("opens"), b"wallet secret");
        assert!(Sealer::new([8; 32]).open(&sealed).is_err());
        let mut tampered = BASE64.decode(&sealed).expect("b64");
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        assert!(sealer.open(&BASE64.encode(tampered)).is_err());
    }

    #[test]
    fn dev_master_key_is_generated_once_and_reused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = Sealer::load(None, dir.path()).expect("generated");
        let sealed = first.seal(b"x");
        let second = Sealer::load(None, dir.path()).expect("reloaded");
        assert_eq!(second.open(&sealed).expect("same key"), b"x");
    }

    #[test]
    fn hashes_and_ids_have_the_expected_shape() {
        assert_eq!(sha256_hex("abc").len(), 64);
        assert!(new_id("acc").starts_with("acc_"));
        assert!(constant_time_eq(b"same", b"same"));
        assert!(!constant_time_eq(b"same", b"diff"));
        assert!(!constant_time_eq(b"same", b"longer"));
    }

    #[test]
    fn derived_keys_are_stable_per_master_key_and_purpose() {
        let sealer = Sealer::new([7; 32]);
        let key = sealer.derived_key("quotes");
        assert_eq!(Sealer::new([7; 32]).derived_key("quotes"), key);
        assert_ne!(sealer.derived_key("other"), key);
        assert_ne!(Sealer::new([8; 32]).derived_key("quotes"), key);
        assert_ne!(key, [7; 32], "never the master key itself");
    }
}

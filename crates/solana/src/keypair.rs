//! Keypairs in the Solana CLI file format: a JSON array of 64 numbers, the 32-byte ed25519
//! secret followed by the 32-byte public key (what `solana-keygen new` writes).

use std::path::Path;

use ed25519_dalek::SigningKey;

use crate::tx::Pubkey;

/// Why a keypair file cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum KeypairError {
    #[error("cannot read keypair file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write keypair file {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("{0} already exists; refusing to overwrite a keypair")]
    Exists(String),
    #[error("a keypair file must be a JSON array of 64 numbers 0–255")]
    Format,
    #[error("the public half of the keypair does not match its secret")]
    Mismatch,
}

/// An ed25519 keypair that signs Solana transactions.
pub struct Keypair(SigningKey);

impl std::fmt::Debug for Keypair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Keypair({})", self.pubkey())
    }
}

impl Keypair {
    /// A fresh keypair from the operating system's random source.
    pub fn generate() -> Self {
        Keypair(SigningKey::generate(&mut rand::rngs::OsRng))
    }

    /// The keypair of a 32-byte ed25519 secret.
    pub fn from_secret(secret: [u8; 32]) -> Self {
        Keypair(SigningKey::from_bytes(&secret))
    }

    /// The keypair of a key already opened (its public half computed once, there).
    pub fn from_signing_key(key: SigningKey) -> Self {
        Keypair(key)
    }

    /// The public key (the wallet's address).
    pub fn pubkey(&self) -> Pubkey {
        Pubkey(self.0.verifying_key().to_bytes())
    }

    /// The key that signs transactions.
    pub fn signing_key(&self) -> &SigningKey {
        &self.0
    }

    /// The 64 bytes of the file format.
    pub fn to_bytes(&self) -> [u8; 64] {
        self.0.to_keypair_bytes()
    }

    /// The file format's text: a JSON array of 64 numbers.
    pub fn to_json(&self) -> String {
        serde_json::to_string(&self.to_bytes().to_vec()).unwrap_or_default()
    }

    /// Parse the file format's text, checking that the public half matches the secret.
    pub fn from_json(text: &str) -> Result<Self, KeypairError> {
        let bytes: Vec<u8> = serde_json::from_str(text).map_err(|_| KeypairError::Format)?;
        let bytes: [u8; 64] = bytes.try_into().map_err(|_| KeypairError::Format)?;
        let key = SigningKey::from_keypair_bytes(&bytes).map_err(|_| KeypairError::Mismatch)?;
        Ok(Keypair(key))
    }

    /// Read a keypair file.
    pub fn read(path: &Path) -> Result<Self, KeypairError> {
        let text = std::fs::read_to_string(path).map_err(|source| KeypairError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_json(&text)
    }

    /// Write a new file (never overwrites; owner-only permissions on Unix).
    pub fn write_new(&self, path: &Path) -> Result<(), KeypairError> {
        use std::io::Write;
        let shown = path.display().to_string();
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let mut file = options.open(path).map_err(|source| {
            if source.kind() == std::io::ErrorKind::AlreadyExists {
                KeypairError::Exists(shown.clone())
            } else {
                KeypairError::Write {
                    path: shown.clone(),
                    source,
                }
            }
        })?;
        file.write_all(self.to_json().as_bytes())
            .map_err(|source| KeypairError::Write {
                path: shown,
                source,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cli_format_round_trips() {
        let keypair = Keypair::from_secret([9; 32]);
        let json = keypair.to_json();
        assert!(json.starts_with("[9,9,"));
        let numbers: Vec<u8> = serde_json::from_str(&json).expect("array");
        assert_eq!(numbers.len(), 64);
        assert_eq!(&numbers[32..], &keypair.pubkey().0);
        let back = Keypair::from_json(&json).expect("parse");
        assert_eq!(back.pubkey(), keypair.pubkey());
    }

    #[test]
    fn bad_files_are_refused() {
        assert!(matches!(
            Keypair::from_json("[1,2,3]"),
            Err(KeypairError::Format)
        ));
        assert!(matches!(
            Keypair::from_json("{}"),
            Err(KeypairError::Format)
        ));
        let mut bytes = Keypair::from_secret([1; 32]).to_bytes();
        bytes[40] ^= 1;
        let json = serde_json::to_string(&bytes.to_vec()).expect("json");
        assert!(matches!(
            Keypair::from_json(&json),
            Err(KeypairError::Mismatch)
        ));
    }

    #[test]
    fn files_are_never_overwritten() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("id.json");
        let keypair = Keypair::generate();
        keypair.write_new(&path).expect("write");
        assert_eq!(
            Keypair::read(&path).expect("read").pubkey(),
            keypair.pubkey()
        );
        assert!(matches!(
            Keypair::generate().write_new(&path),
            Err(KeypairError::Exists(_))
        ));
    }
}

//! On-disk cache of compiled components, keyed by the SHA-256 of the component bytes.
//!
//! `Component::deserialize` trusts its input completely (it is native code), so this cache only
//! ever loads files it wrote itself: each file starts with a magic, the engine's compatibility
//! hash and an HMAC-SHA256 of both with the artifact, keyed from the master key. A file that
//! does not verify — corrupted, written by another engine, or planted by someone who can write
//! to the data dir but does not hold the master key — is ignored and the component recompiled.

use std::hash::{Hash, Hasher};
use std::io::Write;
use std::path::{Path, PathBuf};

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use wasmtime::Engine;

const MAGIC: &[u8; 8] = b"CRUCWC02";
const HEADER: usize = 8 + 8 + 32;

/// A cache directory for one engine configuration.
pub(super) struct ComponentCache {
    dir: PathBuf,
    engine_hash: u64,
    key: [u8; 32],
}

impl ComponentCache {
    pub(super) fn new(dir: PathBuf, engine: &Engine, key: [u8; 32]) -> std::io::Result<Self> {
        std::fs::create_dir_all(&dir)?;
        let mut hasher = std::hash::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Ok(ComponentCache {
            dir,
            engine_hash: hasher.finish(),
            key,
        })
    }

    /// The tag of one file: the engine it was compiled for and the artifact's bytes.
    fn tag(&self, engine_hash: u64, artifact: &[u8]) -> Hmac<Sha256> {
        // HMAC accepts keys of any length, so this cannot fail.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC takes any key length"));
        mac.update(MAGIC);
        mac.update(&engine_hash.to_le_bytes());
        mac.update(artifact);
        mac
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir
            .join(format!("{key}-{:016x}.cwasm", self.engine_hash))
    }

    /// The artifact for `key`, if a file this server wrote is present and intact.
    pub(super) fn get(&self, key: &str) -> Option<Vec<u8>> {
        let bytes = std::fs::read(self.path(key)).ok()?;
        if bytes.len() < HEADER || &bytes[..8] != MAGIC {
            return None;
        }
        let engine_hash = u64::from_le_bytes(bytes[8..16].try_into().ok()?);
        let artifact = &bytes[HEADER..];
        if engine_hash != self.engine_hash {
            return None;
        }
        // Constant-time comparison (`verify_slice`): the tag is a secret-keyed MAC.
        self.tag(engine_hash, artifact)
            .verify_slice(&bytes[16..48])
            .ok()?;
        Some(artifact.to_vec())
    }

    /// Store an artifact atomically (write then rename), so a crash never leaves half a file.
    pub(super) fn put(&self, key: &str, artifact: &[u8]) -> std::io::Result<()> {
        let path = self.path(key);
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        let tag = self.tag(self.engine_hash, artifact).finalize().into_bytes();
        write_file(&tmp, self.engine_hash, &tag, artifact)?;
        std::fs::rename(&tmp, &path)
    }

    /// The file an artifact for `key` is (or would be) cached in.
    pub(super) fn file_of(&self, key: &str) -> PathBuf {
        self.path(key)
    }
}

fn write_file(path: &Path, engine_hash: u64, tag: &[u8], artifact: &[u8]) -> std::io::Result<()> {
    let mut file = std::fs::File::create(path)?;
    file.write_all(MAGIC)?;
    file.write_all(&engine_hash.to_le_bytes())?;
    file.write_all(tag)?;
    file.write_all(artifact)?;
    file.sync_all()
}

/// Hex SHA-256 of component bytes: the cache key and the component's identity.
pub(super) fn content_hash(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

//! "Is a server running on this data dir?" A running server holds an advisory lock on
//! `<data_dir>/server.lock` for as long as it runs (the operating system releases it when the
//! process ends, however it ends). Tools that must not run beside a server — restoring a backup,
//! rotating the master key — take the same lock and refuse when they cannot.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::Path;

pub(crate) const LOCK_FILE: &str = "server.lock";

/// The lock, held until dropped.
#[derive(Debug)]
pub(crate) struct DataDirLock {
    _file: File,
}

/// Take the data dir's lock without waiting: `Ok(None)` when another process holds it.
pub(crate) fn try_lock(data_dir: &Path) -> std::io::Result<Option<DataDirLock>> {
    std::fs::create_dir_all(data_dir)?;
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(data_dir.join(LOCK_FILE))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(DataDirLock { _file: file })),
        Err(TryLockError::WouldBlock) => Ok(None),
        Err(TryLockError::Error(error)) => Err(error),
    }
}

/// For a tool that needs the data dir to itself: the lock, or an error saying to stop the server.
pub(crate) fn exclusive(data_dir: &Path, doing: &str) -> anyhow::Result<DataDirLock> {
    try_lock(data_dir)?.ok_or_else(|| {
        anyhow::anyhow!(
            "a server is running on {}: stop it before {doing}",
            data_dir.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_is_exclusive_until_dropped() {
        let dir = tempfile::tempdir().expect("dir");
        let held = try_lock(dir.path()).expect("io").expect("free");
        assert!(
            try_lock(dir.path()).expect("io").is_none(),
            "held elsewhere"
        );
        assert!(exclusive(dir.path(), "restoring").is_err());
        drop(held);
        assert!(try_lock(dir.path()).expect("io").is_some(), "released");
    }
}

//! When a database error means "not now" rather than "wrong": the database cannot be reached
//! (refused, reset, shutting down, no connection free in time) or cannot write (its disk is full
//! or failing). A request that meets one is answered 503 with `Retry-After` and a message that
//! says which (`http::error`), never 500: nothing was changed, and the same request will work once
//! the database is back (docs/operations.md, "When the database fails").

/// Why the database cannot serve an operation right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outage {
    /// No connection: refused, reset, the server shutting down or starting, the pool empty.
    Unreachable,
    /// The disk under the database is full: nothing can be written; reads still work.
    OutOfSpace,
    /// The database cannot write to its storage for another reason (I/O error, read-only).
    StorageFailing,
}

/// SQLite's primary result codes (the low byte of an extended code).
const SQLITE_BUSY: i64 = 5;
const SQLITE_LOCKED: i64 = 6;
const SQLITE_READONLY: i64 = 8;
const SQLITE_IOERR: i64 = 10;
const SQLITE_FULL: i64 = 13;
const SQLITE_CANTOPEN: i64 = 14;

impl Outage {
    /// The outage `error` reports, if it is one.
    pub fn of(error: &sqlx::Error) -> Option<Outage> {
        match error {
            sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::WorkerCrashed => Some(Outage::Unreachable),
            sqlx::Error::Database(db) => db.code().and_then(|code| Self::of_code(&code)),
            _ => None,
        }
    }

    /// By the database's own code: a SQLite result code (a number) or a PostgreSQL SQLSTATE.
    fn of_code(code: &str) -> Option<Outage> {
        // A SQLSTATE is always five characters (some all digits, like 53100); SQLite's extended
        // codes stay below 10,000.
        if code.len() < 5
            && let Ok(extended) = code.parse::<i64>()
        {
            return match extended & 0xff {
                SQLITE_FULL => Some(Outage::OutOfSpace),
                SQLITE_IOERR | SQLITE_READONLY | SQLITE_CANTOPEN => Some(Outage::StorageFailing),
                // Another process holds the file (a backup) past the busy timeout.
                SQLITE_BUSY | SQLITE_LOCKED => Some(Outage::Unreachable),
                _ => None,
            };
        }
        match code {
            // disk_full
            "53100" => Some(Outage::OutOfSpace),
            // io_error, and a standby that refuses writes after a failover
            "58030" | "25006" => Some(Outage::StorageFailing),
            // admin_shutdown, crash_shutdown, cannot_connect_now
            "57P01" | "57P02" | "57P03" => Some(Outage::Unreachable),
            // connection exceptions (08…) and insufficient resources (53…: memory, connections)
            _ if code.starts_with("08") || code.starts_with("53") => Some(Outage::Unreachable),
            _ => None,
        }
    }

    /// What the client is told.
    pub fn message(self) -> &'static str {
        match self {
            Outage::Unreachable => "the database is unavailable; try again shortly",
            Outage::OutOfSpace => {
                "the server's disk is full, so nothing can be changed right now (reading still \
                 works); try again later"
            }
            Outage::StorageFailing => {
                "the database cannot write to its storage right now; try again later"
            }
        }
    }

    /// Seconds a client should wait before trying again.
    pub fn retry_after(self) -> u64 {
        match self {
            Outage::Unreachable => 5,
            Outage::OutOfSpace | Outage::StorageFailing => 30,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_codes_by_their_primary_byte() {
        assert_eq!(Outage::of_code("13"), Some(Outage::OutOfSpace));
        // SQLITE_IOERR_WRITE (10 | 3 << 8) and SQLITE_IOERR_FSYNC (10 | 4 << 8)
        assert_eq!(Outage::of_code("778"), Some(Outage::StorageFailing));
        assert_eq!(Outage::of_code("1034"), Some(Outage::StorageFailing));
        assert_eq!(Outage::of_code("5"), Some(Outage::Unreachable));
        // A constraint (19, 2067 unique) is the request's fault, not an outage.
        assert_eq!(Outage::of_code("19"), None);
        assert_eq!(Outage::of_code("2067"), None);
    }

    #[test]
    fn postgres_sqlstates() {
        assert_eq!(Outage::of_code("53100"), Some(Outage::OutOfSpace));
        assert_eq!(Outage::of_code("57P01"), Some(Outage::Unreachable));
        assert_eq!(Outage::of_code("08006"), Some(Outage::Unreachable));
        assert_eq!(Outage::of_code("53300"), Some(Outage::Unreachable));
        assert_eq!(Outage::of_code("23505"), None);
        assert_eq!(Outage::of_code("40001"), None);
    }

    #[test]
    fn pool_and_socket_failures_are_unreachable() {
        assert_eq!(
            Outage::of(&sqlx::Error::PoolTimedOut),
            Some(Outage::Unreachable)
        );
        assert_eq!(
            Outage::of(&sqlx::Error::Io(std::io::Error::from(
                std::io::ErrorKind::ConnectionReset
            ))),
            Some(Outage::Unreachable)
        );
        assert_eq!(Outage::of(&sqlx::Error::RowNotFound), None);
    }
}

//! The simnet's storage: accounts, blockhashes, transactions and counters in the database, so
//! a restart (or another process on the same database) sees the same ledger. Every function
//! takes a connection so callers compose them inside one transaction. Account kinds are
//! `wallet`, `mint`, `token`, `uninitialized` (created, not yet initialized), and the pool
//! program's `pool` (state) and `vault` (its SOL).

use std::collections::HashMap;

use crucible_solana::tx::Pubkey;

use crate::SimnetError;
use crate::executor::{Account, Accounts, Kind};
use crate::pool::POOL_PROGRAM;
use crate::sql::{self, Conn};

pub(crate) fn to_db(value: u64) -> Result<i64, SimnetError> {
    i64::try_from(value)
        .map_err(|_| SimnetError::params(format!("{value} is too large for simnet")))
}

fn from_db(value: i64) -> u64 {
    u64::try_from(value).unwrap_or_default()
}

type Row = (
    String,
    i64,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    i64,
    i64,
);

const COLUMNS: &str = "address, lamports, kind, program, mint, owner, amount, decimals";

fn decode(row: Row) -> Option<(Pubkey, Account)> {
    let (address, lamports, kind, program, mint, owner, amount, decimals) = row;
    let key = |v: Option<String>| v.and_then(|s| s.parse::<Pubkey>().ok());
    let decimals = u8::try_from(decimals).ok()?;
    let kind = match kind.as_str() {
        "wallet" => Kind::Wallet,
        // A mint keeps its supply in `amount` and its mint authority in `owner`.
        "mint" => Kind::Mint {
            program: key(program)?,
            decimals,
            supply: from_db(amount),
            authority: key(owner),
        },
        "token" => Kind::Token {
            program: key(program)?,
            mint: key(mint)?,
            owner: key(owner)?,
            amount: from_db(amount),
            decimals,
        },
        "pool" => Kind::Pool {
            usdc_mint: key(mint)?,
            lp_supply: from_db(amount),
        },
        "vault" => Kind::Vault { pool: key(owner)? },
        // Created for a program and not initialized: `program` owns it, `amount` is its size.
        "uninitialized" => Kind::Uninitialized {
            program: key(program)?,
            space: from_db(amount),
        },
        _ => return None,
    };
    Some((
        address.parse().ok()?,
        Account {
            lamports: from_db(lamports),
            kind,
        },
    ))
}

/// Load the given accounts (absent ones are simply missing from the map): one statement for
/// every [`KEYS_PER_STATEMENT`] keys, not one per key (a swap names a dozen accounts, and each
/// statement is a round trip to the database's worker), each key read by primary key
/// ([`point_reads`]).
pub(crate) async fn load(conn: &mut Conn<'_>, keys: &[Pubkey]) -> Result<Accounts, SimnetError> {
    let mut accounts = HashMap::with_capacity(keys.len());
    let mut wanted: Vec<String> = keys.iter().map(Pubkey::to_string).collect();
    wanted.sort_unstable();
    wanted.dedup();
    for chunk in wanted.chunks(KEYS_PER_STATEMENT) {
        let keys = padded(chunk);
        let sql = point_reads(
            &format!("SELECT {COLUMNS} FROM simnet_accounts WHERE address = "),
            keys.len(),
        );
        let mut query = sql::query(&sql);
        for key in keys {
            query = query.bind(key.as_str());
        }
        for row in query.fetch_all::<Row>(conn).await? {
            if let Some((address, account)) = decode(row) {
                accounts.insert(address, account);
            }
        }
    }
    Ok(accounts)
}

/// The two figures the block height is made of, as two columns: the slot counter and the
/// newest blockhash's issue time (`Shared::block_height`).
pub(crate) const HEIGHT_FIGURES: &str = "(SELECT value FROM simnet_counters WHERE name = 'slot'), \
     (SELECT issued_at FROM simnet_blockhashes ORDER BY seq DESC LIMIT 1)";

/// What a set of landings reads before it executes ([`read_set`]).
pub(crate) struct SetReads {
    /// The set's signatures the ledger already has.
    pub(crate) landed: HashMap<String, Landing>,
    /// The slot each asked blockhash was issued in, when the ledger issued it.
    pub(crate) issued: HashMap<String, i64>,
    /// The block height's two stored figures: the slot counter and the newest blockhash's
    /// issue time.
    pub(crate) counter: i64,
    pub(crate) newest: Option<i64>,
    pub(crate) accounts: Accounts,
}

/// A typed null, on either back end (a branch of a `UNION ALL` names its columns' types).
const NULL_INT: &str = "CAST(NULL AS BIGINT)";
const NULL_TEXT: &str = "CAST(NULL AS TEXT)";

/// A row of [`read_set`]'s statement: what it is (`s` a landing, `b` a blockhash, `h` the
/// height, `a` an account), its key, three numbers and four texts.
type SetRow = (
    String,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// Everything a set of landings reads before it executes, in one statement where it had been
/// three (a round trip each, in the ledger's one writer, on PostgreSQL): which of `signatures`
/// have landed, the slot of each of `blockhashes`, the block height and the accounts `keys`
/// name, each by primary key ([`point_reads`], padded). With no signatures nor blockhashes it
/// is an answer's accounts and context slot, one snapshot. `None` when a list is longer than
/// one statement carries ([`KEYS_PER_STATEMENT`]): read them apart then.
pub(crate) async fn read_set(
    conn: &mut Conn<'_>,
    signatures: &[&str],
    blockhashes: &[String],
    keys: &[Pubkey],
) -> Result<Option<SetReads>, SimnetError> {
    let mut addresses: Vec<String> = keys.iter().map(Pubkey::to_string).collect();
    addresses.sort_unstable();
    addresses.dedup();
    if [signatures.len(), blockhashes.len(), addresses.len()]
        .iter()
        .any(|&n| n > KEYS_PER_STATEMENT)
    {
        return Ok(None);
    }
    let (signatures, blockhashes, addresses) =
        (padded(signatures), padded(blockhashes), padded(&addresses));
    let mut parts: Vec<String> =
        Vec::with_capacity(signatures.len() + blockhashes.len() + addresses.len() + 1);
    let mut n = 0;
    let mut next = || {
        n += 1;
        n
    };
    for _ in &signatures {
        parts.push(format!(
            "SELECT 's', signature, slot, executed_at, {NULL_INT}, err, {NULL_TEXT}, {NULL_TEXT}, \
             {NULL_TEXT} FROM simnet_transactions WHERE signature = ${}",
            next()
        ));
    }
    for _ in &blockhashes {
        parts.push(format!(
            "SELECT 'b', hash, slot, {NULL_INT}, {NULL_INT}, {NULL_TEXT}, {NULL_TEXT}, \
             {NULL_TEXT}, {NULL_TEXT} FROM simnet_blockhashes WHERE hash = ${}",
            next()
        ));
    }
    parts.push(format!(
        "SELECT 'h', {NULL_TEXT}, {HEIGHT_FIGURES}, {NULL_INT}, {NULL_TEXT}, {NULL_TEXT}, \
         {NULL_TEXT}, {NULL_TEXT}"
    ));
    for _ in &addresses {
        parts.push(format!(
            "SELECT 'a', address, lamports, amount, decimals, kind, program, mint, owner \
             FROM simnet_accounts WHERE address = ${}",
            next()
        ));
    }
    let sql = parts.join(" UNION ALL ");
    let mut query = sql::query(&sql);
    for signature in signatures {
        query = query.bind(*signature);
    }
    for hash in blockhashes {
        query = query.bind(hash.as_str());
    }
    for address in addresses {
        query = query.bind(address.as_str());
    }
    let rows: Vec<SetRow> = query.fetch_all(conn).await?;
    let mut reads = SetReads {
        landed: HashMap::new(),
        issued: HashMap::new(),
        counter: 0,
        newest: None,
        accounts: HashMap::new(),
    };
    let mut height = false;
    for (part, key, n1, n2, n3, t1, t2, t3, t4) in rows {
        match (part.as_str(), key, n1, n2) {
            ("s", Some(signature), Some(slot), Some(executed_at)) => {
                reads.landed.insert(signature, (slot, executed_at, t1));
            }
            ("b", Some(hash), Some(slot), _) => {
                reads.issued.insert(hash, slot);
            }
            ("h", _, Some(counter), newest) => {
                (reads.counter, reads.newest, height) = (counter, newest, true);
            }
            ("a", Some(address), Some(lamports), Some(amount)) => {
                let (Some(decimals), Some(kind)) = (n3, t1) else {
                    continue;
                };
                let row = (address, lamports, kind, t2, t3, t4, amount, decimals);
                if let Some((address, account)) = decode(row) {
                    reads.accounts.insert(address, account);
                }
            }
            _ => {}
        }
    }
    if !height {
        return Err(sqlx::Error::RowNotFound.into());
    }
    Ok(Some(reads))
}

/// Keys one `IN` list carries at most.
pub(crate) const KEYS_PER_STATEMENT: usize = 128;
/// Accounts one multi-row upsert carries at most: 8 parameters each, 128 a statement (binding
/// a numbered parameter walks the statement's list of names, so a statement stays short).
const ACCOUNTS_PER_STATEMENT: usize = 16;

/// `rows` point reads by primary key in one statement: `{select}$1 UNION ALL {select}$2 …`,
/// where `select` ends in `… WHERE key = `.
///
/// Not `key IN ($1, …)`: PostgreSQL caches a prepared statement's generic plan, and one
/// planned while the table was small scans the whole table for an `IN` list ever after (seen:
/// 15–18 ms a read at 30,000 accounts, and an airdrop six times slower at 50,000). A point read
/// by primary key is planned as an index lookup at any size, on both back ends.
pub(crate) fn point_reads(select: &str, rows: usize) -> String {
    let mut sql = String::with_capacity(rows * (select.len() + 16));
    for row in 0..rows {
        if row > 0 {
            sql.push_str(" UNION ALL ");
        }
        sql.push_str(select);
        sql.push('$');
        sql.push_str(&(row + 1).to_string());
    }
    sql
}

/// `keys` padded to a power of two by naming the last one again, for [`point_reads`]: each
/// new shape of statement is planned anew, and a read of a few dozen keys took PostgreSQL a
/// millisecond to plan, in the ledger's one writer (`pg_stat_statements`: 202 ms of planning in
/// 4 s of swaps). Padded, the reads come in at most eight shapes, each planned once per
/// connection and then kept. The rows go into maps, where a key read twice is one entry.
pub(crate) fn padded<T>(keys: &[T]) -> Vec<&T> {
    let mut padded: Vec<&T> = keys.iter().collect();
    if let Some(last) = keys.last() {
        padded.resize(keys.len().next_power_of_two(), last);
    }
    padded
}

/// The numbered placeholders of a multi-row statement (`crucible_sql::value_rows`).
pub(crate) use crucible_sql::value_rows as placeholders;

/// Token accounts of `owner`, optionally restricted to a mint or a program.
pub(crate) async fn token_accounts(
    conn: &mut Conn<'_>,
    owner: &Pubkey,
    mint: Option<&Pubkey>,
    program: Option<&Pubkey>,
) -> Result<Vec<(Pubkey, Account)>, SimnetError> {
    let sql = format!(
        "SELECT {COLUMNS} FROM simnet_accounts WHERE owner = $1 AND kind = 'token' \
         AND ($2 = '' OR mint = $2) AND ($3 = '' OR program = $3) ORDER BY address"
    );
    let rows: Vec<Row> = sql::query(&sql)
        .bind(owner.to_string())
        .bind(mint.map(Pubkey::to_string).unwrap_or_default())
        .bind(program.map(Pubkey::to_string).unwrap_or_default())
        .fetch_all(conn)
        .await?;
    Ok(rows.into_iter().filter_map(decode).collect())
}

/// Write every account of `after` that differs from `before`, and delete those `after` no
/// longer has (a closed account ceases to exist, as on Solana): one upsert for the changed
/// accounts and one `DELETE` for the closed ones, in address order (two writers on
/// PostgreSQL never lock the same rows in opposite orders).
pub(crate) async fn save_changes(
    conn: &mut Conn<'_>,
    before: &Accounts,
    after: &Accounts,
) -> Result<(), SimnetError> {
    let (changed, closed) = changes(before, after);
    save_all(conn, &changed).await?;
    delete_all(conn, &closed).await
}

/// The accounts `after` changed from `before`, and those it closed, each in address order.
fn changes<'a>(
    before: &'a Accounts,
    after: &'a Accounts,
) -> (Vec<(&'a Pubkey, &'a Account)>, Vec<String>) {
    let mut changed: Vec<(&Pubkey, &Account)> = after
        .iter()
        .filter(|(key, account)| before.get(key) != Some(account))
        .collect();
    changed.sort_unstable_by_key(|(key, _)| **key);
    let mut closed: Vec<String> = before
        .keys()
        .filter(|key| !after.contains_key(key))
        .map(Pubkey::to_string)
        .collect();
    closed.sort_unstable();
    (changed, closed)
}

/// Delete closed accounts: rare, one statement each, by primary key.
async fn delete_all(conn: &mut Conn<'_>, closed: &[String]) -> Result<(), SimnetError> {
    for key in closed {
        sql::query("DELETE FROM simnet_accounts WHERE address = $1")
            .bind(key.as_str())
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// A landing of a set, as [`write_set`] records it.
pub(crate) struct SetLanding<'a> {
    pub(crate) signature: &'a str,
    /// `meta.err` as JSON text.
    pub(crate) err: Option<String>,
    /// The jsonParsed transaction, as text.
    pub(crate) rendered: &'a str,
    /// Its account keys, which index its signature.
    pub(crate) keys: &'a [Pubkey],
}

/// The PostgreSQL types of a landing's row in [`write_set`]: signature, place in the set,
/// `meta.err`, the rendered transaction.
const SET_TRANSACTION_TYPES: [&str; 4] = ["text", "int8", "text", sql::LONG_TEXT];
/// An address's row in the signature index: address, its landing's place, signature.
const SET_ADDRESS_TYPES: [&str; 3] = ["text", "int8", "text"];
/// An account's row: [`COLUMNS`].
const SET_ACCOUNT_TYPES: [&str; 8] = [
    "text", "int8", "text", "text", "text", "text", "int8", "int8",
];

/// On PostgreSQL, write a set of landings in one statement, where the slot counter, the
/// transactions, their signature index and the changed accounts had been a statement each
/// (a round trip each, in the ledger's one writer): each landing takes the next slot from the
/// counter in order; the accounts `after` changed from `before` are stored, those it closed
/// deleted (apart: rare). Returns the set's first slot.
pub(crate) async fn write_set(
    conn: &mut Conn<'_>,
    landings: &[SetLanding<'_>],
    executed_at: i64,
    before: &Accounts,
    after: &Accounts,
) -> Result<i64, SimnetError> {
    let count = i64::try_from(landings.len()).unwrap_or(i64::MAX);
    let mut transactions = sql::Rows::new(conn, &SET_TRANSACTION_TYPES);
    let mut addresses = sql::Rows::new(conn, &SET_ADDRESS_TYPES);
    for (place, landing) in (0_i64..).zip(landings) {
        transactions.push([
            landing.signature.into(),
            place.into(),
            landing.err.as_deref().into(),
            landing.rendered.into(),
        ]);
        for address in crate::signatures::addresses(landing.keys) {
            addresses.push([address.into(), place.into(), landing.signature.into()]);
        }
    }
    let (changed, closed) = changes(before, after);
    let mut accounts = sql::Rows::new(conn, &SET_ACCOUNT_TYPES);
    for (key, account) in &changed {
        let stored = columns(account);
        accounts.push([
            key.to_string().into(),
            to_db(account.lamports)?.into(),
            stored.kind.into(),
            stored.program.into(),
            stored.mint.into(),
            stored.owner.into(),
            to_db(stored.amount)?.into(),
            i64::from(stored.decimals).into(),
        ]);
    }
    let transactions_table = transactions.table(2);
    let addresses_table = addresses.table(2 + transactions.params());
    let saved = if accounts.is_empty() {
        String::new()
    } else {
        format!(
            ", saved AS (
                 INSERT INTO simnet_accounts ({COLUMNS})
                 SELECT v.column1, v.column2, v.column3, v.column4, v.column5, v.column6,
                        v.column7, v.column8
                 FROM {} AS v
                 ON CONFLICT (address) DO UPDATE SET lamports = excluded.lamports,
                     kind = excluded.kind, program = excluded.program, mint = excluded.mint,
                     owner = excluded.owner, amount = excluded.amount,
                     decimals = excluded.decimals)",
            accounts.table(2 + transactions.params() + addresses.params())
        )
    };
    let sql = format!(
        "WITH counter AS (
             UPDATE simnet_counters SET value = value + $1::int8 WHERE name = 'slot'
             RETURNING value - $1::int8 + 1 AS first),
         landed AS (
             INSERT INTO simnet_transactions (signature, slot, executed_at, err, rendered)
             SELECT v.column1, counter.first + v.column2, $2::int8, v.column3, v.column4
             FROM {transactions_table} AS v CROSS JOIN counter),
         indexed AS (
             INSERT INTO simnet_address_signatures (address, slot, signature)
             SELECT v.column1, counter.first + v.column2, v.column3
             FROM {addresses_table} AS v CROSS JOIN counter){saved}
         SELECT first FROM counter"
    );
    let mut query = sql::query(&sql).bind(count).bind(executed_at);
    query = addresses.bind(transactions.bind(query));
    if !accounts.is_empty() {
        query = accounts.bind(query);
    }
    let (first,): (i64,) = query.fetch_one(&mut *conn).await?;
    delete_all(conn, &closed).await?;
    Ok(first)
}

/// Store one account as it is now.
pub(crate) async fn save(
    conn: &mut Conn<'_>,
    key: &Pubkey,
    account: &Account,
) -> Result<(), SimnetError> {
    save_all(conn, &[(key, account)]).await
}

/// Store `accounts` as they are now, a few dozen per statement.
async fn save_all(
    conn: &mut Conn<'_>,
    accounts: &[(&Pubkey, &Account)],
) -> Result<(), SimnetError> {
    for chunk in accounts.chunks(ACCOUNTS_PER_STATEMENT) {
        let sql = format!(
            "INSERT INTO simnet_accounts ({COLUMNS}) VALUES {} \
             ON CONFLICT (address) DO UPDATE SET lamports = excluded.lamports, kind = excluded.kind, \
             program = excluded.program, mint = excluded.mint, owner = excluded.owner, \
             amount = excluded.amount, decimals = excluded.decimals",
            placeholders(chunk.len(), 8, 0)
        );
        let mut query = sql::query(&sql);
        for (key, account) in chunk {
            let stored = columns(account);
            query = query
                .bind(key.to_string())
                .bind(to_db(account.lamports)?)
                .bind(stored.kind)
                .bind(stored.program)
                .bind(stored.mint)
                .bind(stored.owner)
                .bind(to_db(stored.amount)?)
                .bind(i64::from(stored.decimals));
        }
        query.execute(conn).await?;
    }
    Ok(())
}

/// An account's stored columns after its address and lamports.
struct Columns {
    kind: &'static str,
    program: Option<String>,
    mint: Option<String>,
    owner: Option<String>,
    amount: u64,
    decimals: u8,
}

fn columns(account: &Account) -> Columns {
    let (kind, program, mint, owner, amount, decimals) = match &account.kind {
        Kind::Wallet => ("wallet", None, None, None, 0, 0),
        Kind::Mint {
            program,
            decimals,
            supply,
            authority,
        } => (
            "mint",
            Some(program.to_string()),
            None,
            authority.map(|a| a.to_string()),
            *supply,
            *decimals,
        ),
        Kind::Token {
            program,
            mint,
            owner,
            amount,
            decimals,
        } => (
            "token",
            Some(program.to_string()),
            Some(mint.to_string()),
            Some(owner.to_string()),
            *amount,
            *decimals,
        ),
        // Pool accounts reuse the generic columns: `program` is the pool program, `mint` the
        // pool's USDC mint, `amount` its LP supply; a vault's `owner` is its pool.
        Kind::Pool {
            usdc_mint,
            lp_supply,
        } => (
            "pool",
            Some(POOL_PROGRAM.to_owned()),
            Some(usdc_mint.to_string()),
            None,
            *lp_supply,
            0,
        ),
        Kind::Vault { pool } => (
            "vault",
            Some(POOL_PROGRAM.to_owned()),
            None,
            Some(pool.to_string()),
            0,
            0,
        ),
        Kind::Uninitialized { program, space } => (
            "uninitialized",
            Some(program.to_string()),
            None,
            None,
            *space,
            0,
        ),
    };
    Columns {
        kind,
        program,
        mint,
        owner,
        amount,
        decimals,
    }
}

/// Increment a counter and return its new value.
pub(crate) async fn next(conn: &mut Conn<'_>, name: &str) -> Result<i64, SimnetError> {
    advance(conn, name, 1).await
}

/// Move a counter on by `by` and return its new value.
pub(crate) async fn advance(conn: &mut Conn<'_>, name: &str, by: i64) -> Result<i64, SimnetError> {
    let (value,): (i64,) =
        sql::query("UPDATE simnet_counters SET value = value + $2 WHERE name = $1 RETURNING value")
            .bind(name)
            .bind(by)
            .fetch_one(conn)
            .await?;
    Ok(value)
}

/// A stored transaction: slot, execution time (ms), `meta.err` JSON, rendered JSON.
pub(crate) type StoredTransaction = (i64, i64, Option<String>, String);

pub(crate) async fn transaction(
    conn: &mut Conn<'_>,
    signature: &str,
) -> Result<Option<StoredTransaction>, SimnetError> {
    sql::query(
        "SELECT slot, executed_at, err, rendered FROM simnet_transactions WHERE signature = $1",
    )
    .bind(signature)
    .fetch_optional(conn)
    .await
    .map_err(SimnetError::from)
}

/// Where and how a transaction landed: slot, execution time (ms), `meta.err` JSON.
pub(crate) type Landing = (i64, i64, Option<String>);

/// The landings of `signatures` that the ledger has, by signature, in one statement per
/// [`KEYS_PER_STATEMENT`] (without the rendered transactions, which status checks never need).
pub(crate) async fn landings(
    conn: &mut Conn<'_>,
    signatures: &[&str],
) -> Result<HashMap<String, Landing>, SimnetError> {
    let mut found = HashMap::with_capacity(signatures.len());
    for chunk in signatures.chunks(KEYS_PER_STATEMENT) {
        let signatures = padded(chunk);
        let sql = point_reads(
            "SELECT signature, slot, executed_at, err FROM simnet_transactions WHERE signature = ",
            signatures.len(),
        );
        let mut query = sql::query(&sql);
        for signature in signatures {
            query = query.bind(*signature);
        }
        let rows: Vec<(String, i64, i64, Option<String>)> = query.fetch_all(conn).await?;
        for (signature, slot, executed_at, err) in rows {
            found.insert(signature, (slot, executed_at, err));
        }
    }
    Ok(found)
}

pub(crate) async fn insert_transaction(
    conn: &mut Conn<'_>,
    signature: &str,
    slot: i64,
    executed_at: i64,
    err: Option<String>,
    rendered: &str,
) -> Result<(), SimnetError> {
    let transaction = NewTransaction {
        signature,
        slot,
        executed_at,
        err,
        rendered,
    };
    insert_transactions(conn, &[transaction]).await
}

/// A transaction to record ([`insert_transactions`]).
pub(crate) struct NewTransaction<'a> {
    pub(crate) signature: &'a str,
    pub(crate) slot: i64,
    pub(crate) executed_at: i64,
    /// `meta.err` as JSON text.
    pub(crate) err: Option<String>,
    /// The jsonParsed transaction, as text.
    pub(crate) rendered: &'a str,
}

/// Transactions one multi-row insert carries at most (5 parameters each).
const TRANSACTIONS_PER_STATEMENT: usize = 32;

/// Record several landed transactions, a few dozen per statement.
pub(crate) async fn insert_transactions(
    conn: &mut Conn<'_>,
    transactions: &[NewTransaction<'_>],
) -> Result<(), SimnetError> {
    for chunk in transactions.chunks(TRANSACTIONS_PER_STATEMENT) {
        let sql = format!(
            "INSERT INTO simnet_transactions (signature, slot, executed_at, err, rendered) VALUES {}",
            placeholders(chunk.len(), 5, 0)
        );
        let mut query = sql::query(&sql);
        for t in chunk {
            query = query
                .bind(t.signature)
                .bind(t.slot)
                .bind(t.executed_at)
                .bind(t.err.as_deref())
                .bind(t.rendered);
        }
        query.execute(&mut *conn).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_keys_repeat_the_last_up_to_a_power_of_two() {
        assert_eq!(padded(&[1, 2, 3]), [&1, &2, &3, &3]);
        assert_eq!(padded(&[1, 2, 3, 4]), [&1, &2, &3, &4]);
        assert_eq!(padded(&[7]), [&7]);
        assert!(padded::<u8>(&[]).is_empty());
        assert_eq!(padded(&[0; 33]).len(), 64);
        assert_eq!(padded(&[0; KEYS_PER_STATEMENT]).len(), KEYS_PER_STATEMENT);
    }

    #[test]
    fn point_reads_join_one_primary_key_read_per_row() {
        assert_eq!(
            point_reads("SELECT a FROM t WHERE k = ", 3),
            "SELECT a FROM t WHERE k = $1 UNION ALL SELECT a FROM t WHERE k = $2 \
             UNION ALL SELECT a FROM t WHERE k = $3"
        );
        assert_eq!(
            point_reads("SELECT a FROM t WHERE k = ", 1),
            "SELECT a FROM t WHERE k = $1"
        );
    }
}

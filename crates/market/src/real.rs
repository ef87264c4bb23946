//! Real candles shipped with the binary, for calibrating the simulated market and for replays:
//! BTC/USDT, 2023-01-02 to 2023-02-09, derived from the candle fixture of freqtrade's test data
//! (`tests/testdata/orderflow/candles.json` in the `freqtrade/freqtrade` repository); see
//! `crates/market/data/real/README.md`.

use super::{CsvFeed, Interval, MarketError, Pair};

/// The last 14 days (2023-01-26 21:20 to 2023-02-09 21:15 UTC) of 5-minute candles.
pub const BTC_USDT_5M: &str = include_str!("../data/real/btc_usdt_5m.csv");
/// Hourly candles of the whole period (2023-01-02 17:00 to 2023-02-09 20:00 UTC), aggregated
/// from the 5-minute candles (whole hours only).
pub const BTC_USDT_1H: &str = include_str!("../data/real/btc_usdt_1h.csv");

/// The pair of the real candles.
pub fn real_pair() -> Pair {
    Pair::new("BTC", "USDT")
}

/// A replay of the real candles at `interval`: the 5-minute file for 5m and 15m, the hourly
/// file for 1h and coarser.
pub fn real_feed(interval: Interval) -> Result<CsvFeed, MarketError> {
    let text = match interval {
        Interval::M5 | Interval::M15 => BTC_USDT_5M,
        Interval::H1 | Interval::H4 | Interval::D1 => BTC_USDT_1H,
    };
    CsvFeed::parse(real_pair(), text)
}

//! Replay of historical candles from CSV: `ts,open,high,low,close,volume`, one candle a line,
//! oldest first. `ts` is Unix seconds, Unix milliseconds or RFC 3339; a header line is optional.
//! The file's own interval is inferred from the spacing; coarser intervals that are a multiple
//! of it are aggregated. CSV carries no signals: they read as neutral.

use std::path::Path;

use super::{Candle, Interval, MarketError, MarketFeed, Pair, Signals, is_usd_stable, merge};

/// A CSV replay of one pair.
#[derive(Debug, Clone)]
pub struct CsvFeed {
    pair: Pair,
    step: i64,
    candles: Vec<Candle>,
}

impl CsvFeed {
    /// Read a CSV file of `pair`'s candles.
    pub fn from_path(pair: Pair, path: &Path) -> Result<Self, MarketError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| MarketError::BadInput(format!("{}: {e}", path.display())))?;
        Self::parse(pair, &text)
    }

    /// Parse CSV text of `pair`'s candles.
    pub fn parse(pair: Pair, text: &str) -> Result<Self, MarketError> {
        let mut candles: Vec<Candle> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let raw = raw.trim();
            if raw.is_empty() {
                continue;
            }
            let fields: Vec<&str> = raw.split(',').map(str::trim).collect();
            if line == 1
                && fields.first().is_some_and(|f| {
                    f.eq_ignore_ascii_case("ts") || f.eq_ignore_ascii_case("timestamp")
                })
            {
                continue;
            }
            let err = |message: String| MarketError::Csv { line, message };
            let [ts, open, high, low, close, volume] = fields[..] else {
                return Err(err(format!(
                    "expected 6 fields ts,open,high,low,close,volume, got {}",
                    fields.len()
                )));
            };
            let num = |name: &str, v: &str| -> Result<f64, MarketError> {
                v.parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite() && *x >= 0.0)
                    .ok_or_else(|| err(format!("{name} `{v}` is not a non-negative number")))
            };
            let candle = Candle {
                ts: parse_ts(ts).ok_or_else(|| err(format!("timestamp `{ts}`")))?,
                open: num("open", open)?,
                high: num("high", high)?,
                low: num("low", low)?,
                close: num("close", close)?,
                volume: num("volume", volume)?,
            };
            if candle.close <= 0.0 || candle.high < candle.low {
                return Err(err("close must be positive and high ≥ low".into()));
            }
            if let Some(prev) = candles.last()
                && candle.ts <= prev.ts
            {
                return Err(err("timestamps must increase".into()));
            }
            candles.push(candle);
        }
        if candles.len() < 2 {
            return Err(MarketError::BadInput(
                "CSV needs at least two candles".into(),
            ));
        }
        let mut gaps: Vec<i64> = candles.windows(2).map(|w| w[1].ts - w[0].ts).collect();
        gaps.sort_unstable();
        let step = gaps[gaps.len() / 2];
        Ok(CsvFeed {
            pair,
            step,
            candles,
        })
    }

    /// Time range covered: first open, last close.
    pub fn span(&self) -> (i64, i64) {
        let first = self.candles.first().map_or(0, |c| c.ts);
        let last = self.candles.last().map_or(0, |c| c.ts + self.step);
        (first, last)
    }
}

fn parse_ts(s: &str) -> Option<i64> {
    if let Ok(n) = s.parse::<i64>() {
        // Seconds until the year 5138; milliseconds beyond.
        return Some(if n.abs() < 100_000_000_000 {
            n * 1000
        } else {
            n
        });
    }
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.timestamp_millis())
}

impl MarketFeed for CsvFeed {
    fn candles(
        &self,
        pair: &Pair,
        interval: Interval,
        end: i64,
        count: usize,
    ) -> Result<Vec<Candle>, MarketError> {
        if *pair != self.pair {
            return Err(MarketError::UnknownPair(pair.to_string()));
        }
        let width = interval.millis();
        if width < self.step || width % self.step != 0 {
            return Err(MarketError::BadInput(format!(
                "the CSV has {}-minute candles; {interval} is not a multiple of that",
                self.step / 60_000
            )));
        }
        // Complete source candles by `end`, grouped into buckets of `interval`.
        let upto = self.candles.partition_point(|c| c.ts + self.step <= end);
        let source = &self.candles[..upto];
        let mut out: Vec<Candle> = Vec::new();
        let mut start = 0;
        while start < source.len() {
            let bucket = source[start].ts.div_euclid(width);
            let len = source[start..]
                .iter()
                .take_while(|c| c.ts.div_euclid(width) == bucket)
                .count();
            let group = &source[start..start + len];
            // Only whole buckets: the last one may still be forming.
            if bucket * width + width <= end
                && let Some(c) = merge(bucket * width, group)
            {
                out.push(c);
            }
            start += len;
        }
        let skip = out.len().saturating_sub(count);
        Ok(out.split_off(skip))
    }

    fn signals(&self, pair: &Pair, _at: i64) -> Result<Signals, MarketError> {
        if *pair != self.pair {
            return Err(MarketError::UnknownPair(pair.to_string()));
        }
        Ok(Signals::NEUTRAL)
    }

    fn price_at(&self, token: &str, at: i64) -> Result<f64, MarketError> {
        if is_usd_stable(token) {
            return Ok(1.0);
        }
        if !token.eq_ignore_ascii_case(&self.pair.base) {
            return Err(MarketError::UnknownPair(token.to_string()));
        }
        let i = self.candles.partition_point(|c| c.ts <= at);
        if i == 0 {
            return Err(MarketError::OutOfRange(at));
        }
        Ok(self.candles[i - 1].close)
    }
}

#[cfg(test)]
#[expect(
    clippy::unwrap_used,
    reason = "a test that cannot go on should fail loudly"
)]
mod tests {
    use super::*;

    const CSV: &str = "ts,open,high,low,close,volume\n\
        1700000000,10,11,9,10.5,100\n\
        1700000300,10.5,12,10,11,50\n\
        1700000600,11,11.5,10.5,11.2,70\n\
        1700000900,11.2,11.3,10,10.1,20\n";

    #[test]
    fn parses_and_aggregates() {
        let pair = Pair::new("SOL", "USDC");
        let feed = CsvFeed::parse(pair.clone(), CSV).unwrap();
        assert_eq!(feed.step, Interval::M5.millis());
        let end = 1_700_001_200_000;
        let five = feed.candles(&pair, Interval::M5, end, 10).unwrap();
        assert_eq!(five.len(), 4);
        assert_eq!(five[1].close, 11.0);
        // 15-minute buckets are aligned to the epoch: [..., 1700000100) holds the first
        // candle alone, [1700000100, 1700001000) the next three.
        let fifteen = feed.candles(&pair, Interval::M15, end, 10).unwrap();
        assert_eq!(fifteen.len(), 2);
        assert_eq!(
            fifteen[1],
            Candle {
                ts: 1_700_000_100_000,
                open: 10.5,
                high: 12.0,
                low: 10.0,
                close: 10.1,
                volume: 140.0
            }
        );
        assert_eq!(
            feed.candles(&pair, Interval::M15, end, 1).unwrap(),
            vec![fifteen[1]]
        );
        assert_eq!(feed.price_at("SOL", 1_700_000_650_000).unwrap(), 11.2);
        assert_eq!(feed.signals(&pair, end).unwrap(), Signals::NEUTRAL);
    }

    #[test]
    fn rejects_bad_lines_with_line_numbers() {
        let pair = Pair::new("SOL", "USDC");
        let bad = "1700000000,10,11,9,10.5,100\n1700000300,10.5,abc,10,11,50\n";
        assert_eq!(
            CsvFeed::parse(pair.clone(), bad).unwrap_err(),
            MarketError::Csv {
                line: 2,
                message: "high `abc` is not a non-negative number".into()
            }
        );
        let back = "1700000300,10,11,9,10.5,100\n1700000000,10.5,12,10,11,50\n";
        assert!(matches!(
            CsvFeed::parse(pair.clone(), back),
            Err(MarketError::Csv { line: 2, .. })
        ));
        assert!(CsvFeed::parse(pair, "1,2,3\n").is_err());
    }
}

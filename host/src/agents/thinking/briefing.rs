//! The user message a model is sent each tick, and the answer schema. Everything in it is the
//! host's own data (the market feed, the paper ledger or the wallet, the class rule and the
//! agent's own earlier decisions); the only operator text a model sees is the personality, as
//! the system message. The layout is documented in `docs/agents.md`; the message is
//! deterministic for the same inputs, so its hash keys recorded completions for replay.

use std::fmt::Write as _;

use serde_json::json;

use super::verdict::Verdict;
use crate::market::Candle;
use crate::paper::PortfolioView;

/// Candles shown, newest last.
pub(crate) const CANDLES_SHOWN: usize = 24;
/// Earlier decisions shown, oldest first.
pub(crate) const DECISIONS_SHOWN: usize = 5;
/// Most tokens an answer may use: the object is about 60 tokens; room for a sentence of reason.
pub(crate) const MAX_ANSWER_TOKENS: u32 = 300;
/// Low but not zero: the same briefing should mostly get the same answer.
pub(crate) const TEMPERATURE: f32 = 0.2;

/// One of the agent's earlier decisions, as the next prompt recalls it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PastDecision {
    /// The market time of the tick, Unix ms.
    pub market_ts: i64,
    pub decided_by: String,
    pub verdict: Verdict,
}

/// What the model is told about one tick.
#[derive(Debug, Clone)]
pub(crate) struct Briefing<'a> {
    pub class: &'a str,
    pub base: &'a str,
    pub quote: &'a str,
    pub interval: &'a str,
    pub max_allocation: f64,
    /// Oldest first, as the strategy saw them.
    pub candles: &'a [Candle],
    pub portfolio: PortfolioView,
    pub proposal: &'a Verdict,
    /// Oldest first.
    pub recent: &'a [PastDecision],
}

/// What the class stands for, in one line.
fn class_line(class: &str) -> &'static str {
    match class {
        "fighter" => {
            "technical trend follower: enters when EMA(9) pulls clear above EMA(21) unless RSI(14) says overbought, exits when the trend turns"
        }
        "ranger" => {
            "social-sentiment trader: rides the crowd when smoothed sentiment is bullish on normal or rising mention volume"
        }
        "mage" => {
            "on-chain analyst: holds while accumulation dominates (tokens leaving exchanges, whales buying, wallets joining)"
        }
        "defender" => {
            "capital preserver: mostly in quote, small positions only in a calm uptrend, tight stop"
        }
        "gambler" => {
            "high-risk momentum: all in on a breakout above the 20-candle high, rides the swing until the 20-candle low breaks"
        }
        "rogue" => {
            "contrarian: buys two standard deviations below the 20-candle mean, sells once price reverts above it"
        }
        _ => "custom strategy",
    }
}

impl Briefing<'_> {
    /// The user message: the class, the market as a compact table (oldest to newest), the
    /// holdings, the rule's proposal, the last decisions, and how to answer.
    pub(crate) fn user_message(&self) -> String {
        let mut m = String::with_capacity(2_048);
        let pair = format!("{}/{}", self.base, self.quote);
        let _ = writeln!(
            m,
            "You trade {pair} on {} candles as a {} agent ({}).",
            self.interval,
            self.class,
            class_line(self.class)
        );
        let shown = &self.candles[self.candles.len().saturating_sub(CANDLES_SHOWN)..];
        let closes: Vec<f64> = self.candles.iter().map(|c| c.close).collect();
        let first = self.candles.len() - shown.len();
        let _ = writeln!(
            m,
            "\nLast {} candles, oldest first (time UTC, open, high, low, close, volume, RSI14, SMA20):",
            shown.len()
        );
        for (i, candle) in shown.iter().enumerate() {
            let upto = &closes[..=first + i];
            let _ = writeln!(
                m,
                "{} {} {} {} {} {} {} {}",
                time(candle.ts),
                num(candle.open),
                num(candle.high),
                num(candle.low),
                num(candle.close),
                num(candle.volume),
                rsi(upto, 14).map_or("-".into(), |v| format!("{v:.0}")),
                sma(upto, 20).map_or("-".into(), num),
            );
        }
        let p = &self.portfolio;
        let _ = writeln!(
            m,
            "\nHoldings: {} {} and {} {}; equity {} {}; average entry {}; at most {}% of equity may be in {}.",
            num(p.base),
            self.base,
            num(p.quote),
            self.quote,
            num(p.equity),
            self.quote,
            p.avg_entry_price.map_or("-".into(), num),
            num(self.max_allocation),
            self.base,
        );
        let _ = writeln!(
            m,
            "\nThe {} rule proposes: {}",
            self.class,
            describe(self.proposal)
        );
        if self.recent.is_empty() {
            let _ = writeln!(m, "\nYour last decisions: none yet.");
        } else {
            let _ = writeln!(m, "\nYour last decisions, oldest first:");
            for past in self.recent {
                let _ = writeln!(
                    m,
                    "{} by {}: {}",
                    time(past.market_ts),
                    past.decided_by,
                    describe(&past.verdict)
                );
            }
        }
        m.push_str(
            "\nDecide this tick. Answer with only a JSON object: {\"action\": \"buy\" | \"sell\" | \"hold\", \
             \"fraction\": 0..1, \"reason\": \"one short sentence\"}. For a buy, fraction is the share of \
             equity to spend; for a sell, the share of the holding to sell.",
        );
        m
    }
}

/// The schema the answer must follow (sent as the request's JSON schema).
pub(crate) fn answer_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "action": { "type": "string", "enum": ["buy", "sell", "hold"] },
            "fraction": { "type": "number", "minimum": 0, "maximum": 1 },
            "reason": { "type": "string", "maxLength": 200 }
        },
        "required": ["action", "fraction", "reason"],
        "additionalProperties": false
    })
}

fn describe(verdict: &Verdict) -> String {
    let what = match verdict.action {
        super::Action::Hold => "hold".to_owned(),
        action => format!("{} {}", action.as_str(), num(verdict.fraction)),
    };
    match &verdict.reason {
        Some(reason) => format!("{what} ({reason})"),
        None => what,
    }
}

fn time(ms: i64) -> String {
    crate::clock::from_millis(ms)
        .format("%Y-%m-%d %H:%M")
        .to_string()
}

/// A number in at most 6 significant digits, without trailing zeros.
fn num(value: f64) -> String {
    if !value.is_finite() {
        return "-".into();
    }
    let magnitude = if value == 0.0 {
        0
    } else {
        value.abs().log10().floor() as i32
    };
    let decimals = (5 - magnitude).clamp(0, 8) as usize;
    let text = format!("{value:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

fn sma(closes: &[f64], n: usize) -> Option<f64> {
    (closes.len() >= n).then(|| closes[closes.len() - n..].iter().sum::<f64>() / n as f64)
}

/// Wilder's RSI over the last `n` changes (simple averages: enough for a prompt).
fn rsi(closes: &[f64], n: usize) -> Option<f64> {
    if closes.len() <= n {
        return None;
    }
    let window = &closes[closes.len() - n - 1..];
    let (mut gain, mut loss) = (0.0, 0.0);
    for pair in window.windows(2) {
        let change = pair[1] - pair[0];
        if change > 0.0 {
            gain += change;
        } else {
            loss -= change;
        }
    }
    Some(if loss == 0.0 {
        100.0
    } else {
        100.0 - 100.0 / (1.0 + gain / loss)
    })
}

#[cfg(test)]
mod tests {
    use super::super::Action;
    use super::*;

    fn candles(n: usize) -> Vec<Candle> {
        (0..n)
            .map(|i| Candle {
                ts: 1_700_000_000_000 + i as i64 * 3_600_000,
                open: 100.0 + i as f64,
                high: 101.0 + i as f64,
                low: 99.0 + i as f64,
                close: 100.5 + i as f64,
                volume: 1_234.5,
            })
            .collect()
    }

    fn briefing<'a>(
        candles: &'a [Candle],
        proposal: &'a Verdict,
        recent: &'a [PastDecision],
    ) -> Briefing<'a> {
        Briefing {
            class: "fighter",
            base: "SOL",
            quote: "USDC",
            interval: "1h",
            max_allocation: 50.0,
            candles,
            portfolio: PortfolioView {
                base: 2.0,
                quote: 800.0,
                avg_entry_price: Some(101.25),
                equity: 1_050.0,
            },
            proposal,
            recent,
        }
    }

    #[test]
    fn the_message_holds_what_the_model_needs_in_order() {
        let candles = candles(200);
        let proposal = Verdict {
            action: Action::Buy,
            fraction: 0.3,
            reason: Some("EMA cross".into()),
        };
        let recent = [PastDecision {
            market_ts: 1_700_000_000_000,
            decided_by: "model".into(),
            verdict: Verdict {
                action: Action::Sell,
                fraction: 1.0,
                reason: Some("took profit".into()),
            },
        }];
        let text = briefing(&candles, &proposal, &recent).user_message();
        let order = [
            "SOL/USDC on 1h candles as a fighter agent",
            "Last 24 candles, oldest first",
            "Holdings: 2 SOL and 800 USDC; equity 1050 USDC; average entry 101.25",
            "at most 50% of equity may be in SOL",
            "The fighter rule proposes: buy 0.3 (EMA cross)",
            "by model: sell 1 (took profit)",
            "Answer with only a JSON object",
        ];
        let mut at = 0;
        for part in order {
            let found = text[at..]
                .find(part)
                .unwrap_or_else(|| panic!("{part}: {text}"));
            at += found;
        }
        // 24 candle rows: the last is the newest close.
        assert!(text.contains("299.5"), "{text}");
        assert_eq!(text.lines().filter(|l| l.starts_with("2023-")).count(), 25);
    }

    #[test]
    fn few_candles_and_no_history_still_make_a_message() {
        let candles = candles(3);
        let hold = Verdict::hold(None);
        let text = briefing(&candles, &hold, &[]).user_message();
        assert!(text.contains("Last 3 candles"));
        assert!(text.contains("proposes: hold"));
        assert!(text.contains("none yet"));
        assert!(text.contains(" - -"), "no RSI or SMA yet: {text}");
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(num(1_234.5), "1234.5");
        assert_eq!(num(0.000123456), "0.00012346", "at most 8 decimals");
        assert_eq!(num(100.0), "100");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(-2.5), "-2.5");
    }

    #[test]
    fn rsi_is_100_in_a_rising_market_and_undefined_early() {
        let rising: Vec<f64> = (0..20).map(f64::from).collect();
        assert_eq!(rsi(&rising, 14), Some(100.0));
        assert_eq!(rsi(&rising[..10], 14), None);
        assert_eq!(sma(&rising, 20), Some(9.5));
    }
}

//! A decision as the model states it and as the class rule's orders imply it: buy, sell or
//! hold, and a fraction. Reading a model's answer is strict (anything but the documented object
//! is refused, so the rule decides); turning a verdict into orders leaves `maxAllocation` and
//! the balances to the ledger, which clamps every order the same way whoever decided it.

use serde::Deserialize;

use crate::paper::{OrderRequest, OrderSize, PortfolioView, Side};

/// Longest reason kept, in bytes (as an order's reason).
pub(crate) const MAX_REASON_BYTES: usize = 200;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Action {
    Buy,
    Sell,
    Hold,
}

impl Action {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Action::Buy => "buy",
            Action::Sell => "sell",
            Action::Hold => "hold",
        }
    }

    pub(crate) fn parse(stored: &str) -> Action {
        match stored {
            "buy" => Action::Buy,
            "sell" => Action::Sell,
            _ => Action::Hold,
        }
    }
}

/// What to do this tick. `fraction` is of equity for a buy and of the base held for a sell.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Verdict {
    pub action: Action,
    pub fraction: f64,
    pub reason: Option<String>,
}

impl Verdict {
    pub(crate) fn hold(reason: Option<String>) -> Self {
        Verdict {
            action: Action::Hold,
            fraction: 0.0,
            reason,
        }
    }
}

/// The answer's JSON, as the schema in `briefing::answer_schema` asks for it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer {
    action: Action,
    fraction: f64,
    reason: String,
}

/// Read a model's answer: the JSON object `{"action", "fraction", "reason"}` and nothing else
/// (a Markdown code fence around it is tolerated: models add one even when asked not to).
/// `Err` says what was wrong, for the decision's record.
pub(crate) fn read_answer(text: &str) -> Result<Verdict, String> {
    let body = strip_fence(text.trim());
    let answer: Answer = serde_json::from_str(body).map_err(|error| {
        format!(
            "not the decision object ({error}): {}",
            cut(text.trim(), 120)
        )
    })?;
    if !(answer.fraction.is_finite() && (0.0..=1.0).contains(&answer.fraction)) {
        return Err(format!("fraction {} is not within 0..1", answer.fraction));
    }
    let reason = answer.reason.trim();
    if reason.is_empty() {
        return Err("the reason is empty".into());
    }
    Ok(Verdict {
        action: answer.action,
        fraction: answer.fraction,
        reason: Some(cut(reason, MAX_REASON_BYTES).to_owned()),
    })
}

fn strip_fence(text: &str) -> &str {
    let Some(inner) = text.strip_prefix("```") else {
        return text;
    };
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    inner.strip_suffix("```").unwrap_or(inner).trim()
}

/// `text` cut to at most `max` bytes on a character boundary.
pub(crate) fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// What the class rule's orders amount to, as a verdict (its first order decides; a rule that
/// places none holds).
pub(crate) fn of_orders(orders: &[OrderRequest], portfolio: &PortfolioView, price: f64) -> Verdict {
    let Some(order) = orders.first() else {
        return Verdict::hold(None);
    };
    let equity = portfolio.equity;
    let fraction = match (order.side, order.size) {
        (Side::Buy, OrderSize::FractionOfEquity(f)) => f,
        (Side::Buy, OrderSize::BaseAmount(a)) if equity > 0.0 => a * price / equity,
        (Side::Sell, OrderSize::All) => 1.0,
        (Side::Sell, OrderSize::BaseAmount(a)) if portfolio.base > 0.0 => a / portfolio.base,
        (Side::Sell, OrderSize::FractionOfEquity(f)) if portfolio.base > 0.0 && price > 0.0 => {
            f * equity / price / portfolio.base
        }
        _ => 1.0,
    };
    Verdict {
        action: match order.side {
            Side::Buy => Action::Buy,
            Side::Sell => Action::Sell,
        },
        fraction: fraction.clamp(0.0, 1.0),
        reason: order.reason.clone(),
    }
}

/// The orders a verdict places: a buy of `fraction` of equity, a sell of `fraction` of the base
/// held (all of it at 1), nothing for a hold, a zero fraction or a sell with nothing held.
pub(crate) fn orders_of(verdict: &Verdict, portfolio: &PortfolioView) -> Vec<OrderRequest> {
    let f = verdict.fraction;
    let size = match verdict.action {
        Action::Hold => return Vec::new(),
        _ if f <= 0.0 => return Vec::new(),
        Action::Buy => OrderSize::FractionOfEquity(f.min(1.0)),
        Action::Sell if portfolio.base <= 0.0 => return Vec::new(),
        Action::Sell if f >= 1.0 => OrderSize::All,
        Action::Sell => OrderSize::BaseAmount(portfolio.base * f),
    };
    let side = match verdict.action {
        Action::Buy => Side::Buy,
        _ => Side::Sell,
    };
    vec![OrderRequest {
        side,
        size,
        reason: verdict.reason.clone(),
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn portfolio(base: f64, quote: f64, price: f64) -> PortfolioView {
        PortfolioView {
            base,
            quote,
            avg_entry_price: None,
            equity: quote + base * price,
        }
    }

    #[test]
    fn the_documented_answer_is_read() {
        let verdict = read_answer(r#"{"action":"buy","fraction":0.25,"reason":"trend is up"}"#)
            .expect("read");
        assert_eq!(verdict.action, Action::Buy);
        assert_eq!(verdict.fraction, 0.25);
        assert_eq!(verdict.reason.as_deref(), Some("trend is up"));
        let fenced = "```json\n{\"action\":\"hold\",\"fraction\":0,\"reason\":\"wait\"}\n```";
        assert_eq!(read_answer(fenced).expect("fenced").action, Action::Hold);
    }

    #[test]
    fn anything_else_is_refused_with_what_was_wrong() {
        for (text, says) in [
            ("I think you should buy", "not the decision object"),
            (
                r#"{"action":"short","fraction":1,"reason":"x"}"#,
                "unknown variant",
            ),
            (
                r#"{"action":"buy","fraction":1.5,"reason":"x"}"#,
                "not within 0..1",
            ),
            (
                r#"{"action":"buy","fraction":-0.1,"reason":"x"}"#,
                "not within 0..1",
            ),
            (
                r#"{"action":"buy","fraction":0.5,"reason":"  "}"#,
                "reason is empty",
            ),
            (r#"{"action":"buy","fraction":0.5}"#, "missing field"),
            (
                r#"{"action":"buy","fraction":0.5,"reason":"x","leverage":10}"#,
                "unknown field",
            ),
        ] {
            let error = read_answer(text).expect_err(text);
            assert!(error.contains(says), "{text}: {error}");
        }
    }

    #[test]
    fn a_long_reason_is_cut_on_a_character_boundary() {
        let long = "é".repeat(300);
        let text = format!(r#"{{"action":"hold","fraction":0,"reason":"{long}"}}"#);
        let reason = read_answer(&text).expect("read").reason.expect("reason");
        assert!(reason.len() <= MAX_REASON_BYTES);
        assert!(reason.chars().all(|c| c == 'é'));
    }

    #[test]
    fn verdicts_become_orders_the_ledger_can_clamp() {
        let flat = portfolio(0.0, 1_000.0, 100.0);
        let buy = Verdict {
            action: Action::Buy,
            fraction: 0.4,
            reason: Some("r".into()),
        };
        let orders = orders_of(&buy, &flat);
        assert_eq!(orders.len(), 1);
        assert_eq!(orders[0].size, OrderSize::FractionOfEquity(0.4));
        assert_eq!(orders[0].reason.as_deref(), Some("r"));
        let sell = Verdict {
            action: Action::Sell,
            fraction: 0.5,
            reason: None,
        };
        assert!(orders_of(&sell, &flat).is_empty(), "nothing held to sell");
        let long = portfolio(4.0, 600.0, 100.0);
        assert_eq!(orders_of(&sell, &long)[0].size, OrderSize::BaseAmount(2.0));
        let all = Verdict {
            fraction: 1.0,
            ..sell
        };
        assert_eq!(orders_of(&all, &long)[0].size, OrderSize::All);
        assert!(orders_of(&Verdict::hold(None), &long).is_empty());
    }

    #[test]
    fn a_rules_orders_read_as_a_verdict() {
        let long = portfolio(4.0, 600.0, 100.0);
        let sell_all = OrderRequest {
            side: Side::Sell,
            size: OrderSize::All,
            reason: Some("exit".into()),
        };
        let verdict = of_orders(&[sell_all], &long, 100.0);
        assert_eq!((verdict.action, verdict.fraction), (Action::Sell, 1.0));
        let buy = OrderRequest {
            side: Side::Buy,
            size: OrderSize::BaseAmount(2.0),
            reason: None,
        };
        let verdict = of_orders(&[buy], &long, 100.0);
        assert_eq!((verdict.action, verdict.fraction), (Action::Buy, 0.2));
        assert_eq!(of_orders(&[], &long, 100.0).action, Action::Hold);
    }
}

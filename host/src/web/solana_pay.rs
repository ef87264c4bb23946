//! Solana Pay transfer requests for paid entries: the `solana:` URL a wallet app opens (amount,
//! SPL token, memo, label), and its QR code, drawn here as SVG so the page needs no script and
//! no outside service for it.

use qrcode::QrCode;
use qrcode::render::svg;

/// Percent-encoding as Solana Pay asks (spaces as `%20`: a `+` would reach some wallets as a
/// literal plus; a literal plus is already `%2B` here).
fn url_escape(text: &str) -> String {
    super::layout::url_escape(text).replace('+', "%20")
}

/// What the payer must send.
pub(super) struct Transfer<'a> {
    pub recipient: &'a str,
    /// Whole tokens as the API states them (`amountUi`); sent as a plain decimal.
    pub amount_ui: f64,
    pub spl_token: &'a str,
    pub memo: &'a str,
    pub label: &'a str,
}

impl Transfer<'_> {
    /// `solana:<recipient>?amount=…&spl-token=…&memo=…&label=…`, per the Solana Pay
    /// transfer-request format (amount in user units, never in exponent notation).
    pub(super) fn url(&self) -> String {
        format!(
            "solana:{}?amount={}&spl-token={}&memo={}&label={}",
            self.recipient,
            decimal(self.amount_ui),
            self.spl_token,
            url_escape(self.memo),
            url_escape(self.label),
        )
    }
}

/// A USDC amount (6 decimals) without trailing zeros or exponent.
fn decimal(amount: f64) -> String {
    let fixed = format!("{amount:.6}");
    let trimmed = fixed.trim_end_matches('0').trim_end_matches('.');
    if trimmed.is_empty() {
        "0".to_owned()
    } else {
        trimmed.to_owned()
    }
}

/// The QR code of `text` as an SVG document; `None` when the text is too long for a QR code.
pub(super) fn qr_svg(text: &str) -> Option<String> {
    let code = QrCode::new(text.as_bytes()).ok()?;
    Some(
        code.render::<svg::Color<'_>>()
            .min_dimensions(240, 240)
            .quiet_zone(true)
            .build(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_a_transfer_request() {
        let transfer = Transfer {
            recipient: "Esc1",
            amount_ui: 2.5,
            spl_token: "Mint1",
            memo: "reg:trn_1:abc",
            label: "Cup 1",
        };
        assert_eq!(
            transfer.url(),
            "solana:Esc1?amount=2.5&spl-token=Mint1&memo=reg%3Atrn_1%3Aabc&label=Cup%201"
        );
        assert_eq!(decimal(1.0), "1");
        assert_eq!(decimal(0.000001), "0.000001");
    }

    #[test]
    fn draws_an_svg() {
        let svg = qr_svg("solana:abc?amount=1").expect("fits");
        assert!(svg.contains("<svg"));
    }
}

//! Base58 (Bitcoin's alphabet, as Solana spells keys and signatures) encoding, faster than the
//! byte-at-a-time method: a key or a signature is encoded for every account a landing reads,
//! writes and indexes, and for every key a rendered transaction names, so on the live-swap path
//! the textbook loop (one division by 58 per input byte per output digit) took about 6 % of the
//! core in `perf`.
//!
//! The input is read as a big-endian number in 32-bit limbs and divided by 58⁵ per pass, so
//! each pass yields five digits with one 64-bit division per limb: for a 32-byte key nine passes
//! over eight limbs instead of some 700 byte steps. The output is the same as `bs58::encode`
//! (a property test compares them), leading zero bytes included (one `1` each).

/// The base-58 digits, in ASCII order (so fixed-width numbers sort as they compare).
pub const ALPHABET: &[u8; 58] = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/// 58⁵, the largest power of 58 below 2³².
const FIVE_DIGITS: u64 = 58 * 58 * 58 * 58 * 58;

/// `bytes` in base58.
pub fn encode(bytes: &[u8]) -> String {
    let zeros = bytes.iter().take_while(|&&byte| byte == 0).count();
    let rest = &bytes[zeros..];
    // Big-endian 32-bit limbs; the first takes the bytes a whole limb would not.
    let head = rest.len() % 4;
    let mut limbs: Vec<u32> = Vec::with_capacity(rest.len() / 4 + 1);
    if head > 0 {
        limbs.push(
            rest[..head]
                .iter()
                .fold(0, |limb, &byte| (limb << 8) | u32::from(byte)),
        );
    }
    limbs.extend(
        rest[head..]
            .chunks_exact(4)
            .map(|chunk| u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]])),
    );
    // Digits least significant first, five per division of the whole number by 58⁵.
    let mut digits: Vec<u8> = Vec::with_capacity(rest.len() * 138 / 100 + 5);
    let mut first = 0;
    while first < limbs.len() {
        let mut remainder: u64 = 0;
        for limb in &mut limbs[first..] {
            let value = (remainder << 32) | u64::from(*limb);
            // Below 2³²: `remainder` is below 58⁵.
            *limb = (value / FIVE_DIGITS) as u32;
            remainder = value % FIVE_DIGITS;
        }
        while first < limbs.len() && limbs[first] == 0 {
            first += 1;
        }
        for _ in 0..5 {
            digits.push((remainder % 58) as u8);
            remainder /= 58;
        }
    }
    // The last pass pads the most significant end with zero digits that are not the number's.
    while digits.last() == Some(&0) {
        digits.pop();
    }
    let mut text = String::with_capacity(zeros + digits.len());
    text.extend(std::iter::repeat_n('1', zeros));
    text.extend(
        digits
            .iter()
            .rev()
            .map(|&digit| char::from(ALPHABET[usize::from(digit)])),
    );
    text
}

/// Each ASCII byte's digit in [`ALPHABET`], or 0xFF for a byte that is none.
const DIGITS: [u8; 128] = {
    let mut table = [0xFF_u8; 128];
    let mut digit = 0;
    while digit < ALPHABET.len() {
        table[ALPHABET[digit] as usize] = digit as u8;
        digit += 1;
    }
    table
};

/// A text that is not base58: the first byte outside the alphabet, and where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotBase58 {
    pub byte: u8,
    pub at: usize,
}

/// The bytes `text` spells in base58, as `bs58::decode` reads them (a property test compares
/// them), by the method of [`encode`] run backwards: five digits at a time are folded into
/// 32-bit limbs, one multiplication by 58⁵ per limb, where the byte-at-a-time method multiplies
/// every byte of the result by 58 for every digit. Addresses are decoded on every swap an
/// agent makes (its wallet, the pool's accounts), where `bs58` took 4.5 % of the core.
pub fn decode(text: &str) -> Result<Vec<u8>, NotBase58> {
    let bytes = text.as_bytes();
    let zeros = bytes.iter().take_while(|&&byte| byte == b'1').count();
    // Little-endian 32-bit limbs of the number the digits after the leading ones spell.
    let mut limbs: Vec<u32> = Vec::with_capacity(bytes.len() / 5 + 1);
    for (group, chunk) in bytes[zeros..].chunks(5).enumerate() {
        let mut value: u64 = 0;
        let mut scale: u64 = 1;
        for (offset, &byte) in chunk.iter().enumerate() {
            let digit = DIGITS.get(usize::from(byte)).copied().unwrap_or(0xFF);
            if digit == 0xFF {
                let at = zeros + group * 5 + offset;
                return Err(NotBase58 { byte, at });
            }
            value = value * 58 + u64::from(digit);
            scale *= 58;
        }
        // Below 2⁶²: a limb times 58⁵ (below 2³⁰) plus a carry below 2³².
        let mut carry = value;
        for limb in &mut limbs {
            let product = u64::from(*limb) * scale + carry;
            *limb = product as u32;
            carry = product >> 32;
        }
        while carry > 0 {
            limbs.push(carry as u32);
            carry >>= 32;
        }
    }
    let mut out = Vec::with_capacity(zeros + limbs.len() * 4);
    out.resize(zeros, 0);
    let mut significant = false;
    for limb in limbs.iter().rev() {
        for byte in limb.to_be_bytes() {
            significant |= byte != 0;
            if significant {
                out.push(byte);
            }
        }
    }
    Ok(out)
}

/// The 32 bytes `text` spells in base58: a key or an address, or `None`.
pub fn decode_32(text: &str) -> Option<[u8; 32]> {
    decode(text).ok()?.try_into().ok()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn known_spellings() {
        assert_eq!(encode(&[0; 32]), "11111111111111111111111111111111");
        assert_eq!(encode(&[]), "");
        assert_eq!(encode(&[0, 0, 1]), "112");
        assert_eq!(encode(&[57]), "z");
        assert_eq!(encode(&[58]), "21");
        assert_eq!(
            encode(&[255; 32]),
            "JEKNVnkbo3jma5nREBBJCDoXFVeKkD56V3xKrvRmWxFG"
        );
    }

    #[test]
    fn reads_known_spellings_and_refuses_what_is_not_base58() {
        assert_eq!(decode("11111111111111111111111111111111"), Ok(vec![0; 32]));
        assert_eq!(decode(""), Ok(vec![]));
        assert_eq!(decode("112"), Ok(vec![0, 0, 1]));
        assert_eq!(decode("21"), Ok(vec![58]));
        assert_eq!(
            decode_32("JEKNVnkbo3jma5nREBBJCDoXFVeKkD56V3xKrvRmWxFG"),
            Some([255; 32])
        );
        assert_eq!(decode("12O4"), Err(NotBase58 { byte: b'O', at: 2 }));
        assert_eq!(decode("abc0"), Err(NotBase58 { byte: b'0', at: 3 }));
        assert_eq!(decode("1é").map_err(|error| error.at), Err(1));
        assert_eq!(decode_32("2"), None);
    }

    proptest! {
        #[test]
        fn reads_as_bs58_does(bytes in proptest::collection::vec(any::<u8>(), 0..100),
                              zeros in 0usize..4) {
            let mut input = vec![0u8; zeros];
            input.extend(bytes);
            let text = bs58::encode(&input).into_string();
            prop_assert_eq!(decode(&text), Ok(input));
        }

        #[test]
        fn any_text_is_read_or_refused_as_bs58_does(text in "[1-9A-Za-z0lIO]{0,60}") {
            let ours = decode(&text).ok();
            let theirs = bs58::decode(&text).into_vec().ok();
            prop_assert_eq!(ours, theirs);
        }

        #[test]
        fn spells_as_bs58_does(bytes in proptest::collection::vec(any::<u8>(), 0..100),
                               zeros in 0usize..4) {
            let mut input = vec![0u8; zeros];
            input.extend(bytes);
            prop_assert_eq!(encode(&input), bs58::encode(&input).into_string());
        }
    }
}

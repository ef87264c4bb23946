//! Where webhooks may go. A webhook URL is chosen by a key owner, so without a guard the server
//! would POST on their behalf to its own network: loopback admin ports, cloud metadata
//! (169.254.169.254), private ranges. By default deliveries go to public addresses only: an
//! IP-literal host is checked before sending, and names are resolved by the webhook sender's
//! resolver (`sender`), which drops private and reserved addresses — so a name that resolves to
//! one cannot be used to rebind past the check. `CRUCIBLE_WEBHOOK_ALLOW_PRIVATE=true` lifts this (tests, or receivers
//! inside your own network).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether `ip` is a public unicast address a webhook may be sent to.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public_v4(v4),
            None => is_public_v6(v6),
        },
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_documentation()
        || ip.is_multicast()
        || a == 0
        || (a == 100 && (64..128).contains(&b)) // shared address space (carrier-grade NAT)
        || (a == 192 && b == 0 && ip.octets()[2] == 0) // IETF protocol assignments
        || (a == 198 && (18..20).contains(&b)) // benchmarking
        || a >= 240) // reserved
}

/// IPv6 ranges that are not public, or that carry an IPv4 address a gateway would reach for us
/// (NAT64, 6to4, Teredo, IPv4-compatible): those would let a URL name a private IPv4 host
/// through an IPv6 spelling, so they are refused whole.
fn is_public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || s[..6] == [0; 6] // IPv4-compatible ::a.b.c.d (deprecated, never public)
        || (s[0], s[1], s[2], s[3], s[4], s[5]) == (0x64, 0xff9b, 0, 0, 0, 0) // NAT64 64:ff9b::/96
        || (s[0], s[1]) == (0x64, 0xff9b) && s[2] == 1 // local-use NAT64 64:ff9b:1::/48
        || (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
        || (s[0] & 0xffc0) == 0xfe80 // link local fe80::/10
        || (s[0] & 0xffc0) == 0xfec0 // site local fec0::/10 (deprecated)
        || s[0] == 0x2002 // 6to4 2002::/16
        || (s[0], s[1]) == (0x2001, 0) // Teredo 2001::/32
        || (s[0], s[1]) == (0x2001, 0x0db8) // documentation
        || s[0] == 0x0100 && s[1..4] == [0; 3]) // discard-only 100::/64
}

/// Refuse a URL whose host is an IP literal outside the public range (names are checked when
/// they are resolved). URLs are parsed as browsers do (WHATWG), so the other spellings of an IPv4
/// address — one decimal number, octal or hex parts — arrive here as the address they mean.
pub(crate) fn check_literal(url: &str) -> Result<(), String> {
    let parsed = url::Url::parse(url).map_err(|error| format!("bad webhook URL: {error}"))?;
    check_parsed(&parsed)
}

/// [`check_literal`] for a URL parsed already.
pub(crate) fn check_parsed(parsed: &url::Url) -> Result<(), String> {
    let ip = match parsed.host() {
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip),
        _ => return Ok(()),
    };
    if is_public(ip) {
        Ok(())
    } else {
        Err(refusal(&ip.to_string()))
    }
}

/// Why a host (a literal, or a name with no public address) is refused.
pub(super) fn refusal(host: &str) -> String {
    format!(
        "refused: {host} is a private or reserved address; webhooks are delivered to public \
         addresses only (the server host can allow private ones with CRUCIBLE_WEBHOOK_ALLOW_PRIVATE)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_reserved_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(!is_public(ip.parse().expect("ip")), "{ip}");
        }
        for ip in ["93.184.216.34", "1.1.1.1", "2606:4700::1111"] {
            assert!(is_public(ip.parse().expect("ip")), "{ip}");
        }
    }

    #[test]
    fn ipv6_spellings_of_ipv4_and_deprecated_ranges_are_not_public() {
        for ip in [
            "64:ff9b::7f00:1",     // NAT64 of 127.0.0.1
            "64:ff9b::808:808",    // NAT64 of a public address: still through a gateway
            "64:ff9b:1::a00:1",    // local-use NAT64
            "::127.0.0.1",         // IPv4-compatible
            "::10.0.0.1",          // IPv4-compatible
            "2002:7f00:1::1",      // 6to4 of 127.0.0.1
            "2002:c0a8:101::1",    // 6to4 of 192.168.1.1
            "2001:0:4136:e378::1", // Teredo
            "fec0::1",             // site local
            "fed0:1::1",           // site local
            "100::1",              // discard only
        ] {
            assert!(!is_public(ip.parse().expect("ip")), "{ip}");
        }
        for ip in ["2001:4860:4860::8888", "2a00:1450:4001::200e"] {
            assert!(is_public(ip.parse().expect("ip")), "{ip}");
        }
    }

    #[test]
    fn decimal_octal_and_hex_spellings_of_private_ipv4_are_refused() {
        for url in [
            "http://2130706433/hook",        // 127.0.0.1 as one number
            "http://0177.0.0.1/hook",        // octal
            "http://0x7f.0.0.1/hook",        // hex
            "http://0x7f000001/hook",        // hex, one number
            "http://017700000001/hook",      // octal, one number
            "http://127.1/hook",             // short form
            "http://0xa9.0xfe.0xa9.0xfe/",   // 169.254.169.254
            "http://3232235777/",            // 192.168.1.1
            "http://[64:ff9b::7f00:1]/hook", // NAT64 literal
            "http://[::ffff:7f00:1]/hook",   // IPv4-mapped
        ] {
            assert!(check_literal(url).is_err(), "{url}");
        }
        assert!(
            check_literal("http://16843009/hook").is_ok(),
            "1.1.1.1 as one number"
        );
    }

    #[test]
    fn literal_hosts_are_checked_names_pass_to_the_resolver() {
        assert!(check_literal("http://127.0.0.1:9000/hook").is_err());
        assert!(check_literal("http://[::1]/hook").is_err());
        assert!(check_literal("https://169.254.169.254/latest").is_err());
        assert!(check_literal("https://1.1.1.1/hook").is_ok());
        assert!(check_literal("https://hooks.example.com/in").is_ok());
    }
}

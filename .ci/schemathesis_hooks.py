"""Schemathesis hooks for the Crucible API (loaded by .ci/schemathesis.sh).

The document marks Solana addresses with the custom format `solana-address` (and a query list
of them with `solana-address-list`): base58 of exactly 32 bytes, which its pattern can only
approximate. These strategies generate addresses that really decode to 32 bytes, so data the
document calls valid is valid; likewise `ed25519-signature` (a wallet proof's signature) is
base58 of exactly 64 bytes.
"""

import schemathesis
from hypothesis import strategies as st

ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def base58(data: bytes) -> str:
    number = int.from_bytes(data, "big")
    digits = ""
    while number:
        number, rest = divmod(number, 58)
        digits = ALPHABET[rest] + digits
    zeros = len(data) - len(data.lstrip(b"\0"))
    return "1" * zeros + digits


addresses = st.binary(min_size=32, max_size=32).map(base58)

schemathesis.openapi.format("solana-address", addresses)
schemathesis.openapi.format(
    "solana-address-list",
    st.lists(addresses, min_size=1, max_size=10, unique=True).map(",".join),
)
schemathesis.openapi.format(
    "ed25519-signature", st.binary(min_size=64, max_size=64).map(base58)
)

"""The state blob a strategy carries from one tick to the next, as JSON.

The host hands back exactly the bytes the previous tick returned (at most 64 KiB), and nothing
else survives between ticks: every tick runs in a fresh instance. JSON keeps the state readable
in the agent's records and stable across versions of a strategy.
"""

from __future__ import annotations

import json
from typing import Any

MAX_STATE_BYTES = 64 * 1024


def load(blob: bytes, default: Any = None) -> Any:
    """Decode the previous tick's state; ``default`` on the first tick or if it is not JSON
    (a strategy whose state format changed starts over rather than failing every tick)."""
    if not blob:
        return default
    try:
        return json.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return default


def dump(value: Any) -> bytes:
    """Encode state for the next tick. Raises ``ValueError`` above the host's 64 KiB limit, so
    the mistake shows in the strategy, not as a host refusal."""
    blob = json.dumps(value, separators=(",", ":"), sort_keys=True).encode("utf-8")
    if len(blob) > MAX_STATE_BYTES:
        raise ValueError(f"state is {len(blob)} bytes; the host keeps at most {MAX_STATE_BYTES}")
    return blob

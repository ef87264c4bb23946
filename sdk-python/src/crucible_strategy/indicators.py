"""Technical indicators over price lists (oldest first).

Each returns the value at the last element, or ``None`` when there is not enough history.
They follow the Rust SDK (``crucible_sdk::indicators``) exactly: Wilder's smoothing for RSI and
ATR, EMA seeded with the SMA of its first ``period`` values, population standard deviation for
Bollinger bands and the z-score. The tests in ``sdk-python/tests`` pin the same values as the
Rust SDK's tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence


def sma(values: Sequence[float], period: int) -> Optional[float]:
    """Simple moving average of the last ``period`` values."""
    if period <= 0 or len(values) < period:
        return None
    return sum(values[-period:]) / period


def ema_series(values: Sequence[float], period: int) -> list[float]:
    """EMA series seeded with the SMA of the first ``period`` values; element ``i`` is the EMA
    at ``values[period - 1 + i]``."""
    if period <= 0 or len(values) < period:
        return []
    alpha = 2.0 / (period + 1.0)
    ema_value = sum(values[:period]) / period
    out = [ema_value]
    for v in values[period:]:
        ema_value += alpha * (v - ema_value)
        out.append(ema_value)
    return out


def ema(values: Sequence[float], period: int) -> Optional[float]:
    """Exponential moving average at the last value (``ema_series(...)[-1]``, without building
    the series: a strategy's tick runs interpreted, and the list was most of its cost)."""
    if period <= 0 or len(values) < period:
        return None
    alpha = 2.0 / (period + 1.0)
    ema_value = sum(values[:period]) / period
    for v in values[period:]:
        ema_value += alpha * (v - ema_value)
    return ema_value


def rsi(values: Sequence[float], period: int = 14) -> Optional[float]:
    """Wilder's relative strength index (0..100) over ``period`` changes."""
    if period <= 0 or len(values) < period + 1:
        return None
    gain = loss = 0.0
    prev = values[0]
    for v in values[1 : period + 1]:
        change = v - prev
        prev = v
        if change > 0:
            gain += change
        else:
            loss -= change
    gain /= period
    loss /= period
    keep, add = (period - 1.0) / period, 1.0 / period
    # Wilder's step is `avg * keep + move * add` for both sides; the side that did not move adds
    # exactly 0.0, so it is left out (the same floats, fewer interpreted operations).
    for v in values[period + 1 :]:
        change = v - prev
        prev = v
        if change > 0:
            gain = gain * keep + change * add
            loss = loss * keep
        else:
            gain = gain * keep
            loss = loss * keep + -change * add
    if loss == 0.0:
        return 50.0 if gain == 0.0 else 100.0
    return 100.0 - 100.0 / (1.0 + gain / loss)


@dataclass(frozen=True)
class Macd:
    macd: float
    signal: float
    histogram: float


def macd(
    values: Sequence[float], fast: int = 12, slow: int = 26, signal: int = 9
) -> Optional[Macd]:
    """MACD: ``fast``/``slow`` EMAs of price and a ``signal`` EMA of their difference."""
    if fast <= 0 or fast >= slow:
        return None
    fast_series = ema_series(values, fast)
    slow_series = ema_series(values, slow)
    if not slow_series:
        return None
    offset = slow - fast
    line = [fast_series[i + offset] - s for i, s in enumerate(slow_series)]
    sig = ema(line, signal)
    if sig is None:
        return None
    return Macd(macd=line[-1], signal=sig, histogram=line[-1] - sig)


@dataclass(frozen=True)
class Bands:
    lower: float
    middle: float
    upper: float


def bollinger(values: Sequence[float], period: int = 20, k: float = 2.0) -> Optional[Bands]:
    """Bollinger bands: SMA ± ``k`` population standard deviations."""
    stats = _mean_sd(values, period)
    if stats is None:
        return None
    mean, sd = stats
    return Bands(lower=mean - k * sd, middle=mean, upper=mean + k * sd)


def atr(
    high: Sequence[float], low: Sequence[float], close: Sequence[float], period: int = 14
) -> Optional[float]:
    """Wilder's average true range over ``period`` candles (needs ``period + 1`` candles)."""
    n = min(len(high), len(low), len(close))
    if period <= 0 or n < period + 1:
        return None

    def true_range(i: int) -> float:
        prev = close[i - 1]
        return max(high[i] - low[i], abs(high[i] - prev), abs(low[i] - prev))

    value = sum(true_range(i) for i in range(1, period + 1)) / period
    for i in range(period + 1, n):
        value = (value * (period - 1.0) + true_range(i)) / period
    return value


def zscore(values: Sequence[float], period: int) -> Optional[float]:
    """Standard deviations between the last value and the mean of the last ``period``; 0 when
    the window is flat."""
    stats = _mean_sd(values, period)
    if stats is None:
        return None
    mean, sd = stats
    return 0.0 if sd == 0.0 else (values[-1] - mean) / sd


def highest(values: Sequence[float], period: int) -> Optional[float]:
    """Highest of the last ``period`` values."""
    if period <= 0 or len(values) < period:
        return None
    return max(values[-period:])


def lowest(values: Sequence[float], period: int) -> Optional[float]:
    """Lowest of the last ``period`` values."""
    if period <= 0 or len(values) < period:
        return None
    return min(values[-period:])


def _mean_sd(values: Sequence[float], period: int) -> Optional[tuple[float, float]]:
    if period <= 0 or len(values) < period:
        return None
    window = values[-period:]
    mean = sum(window) / period
    var = sum((v - mean) * (v - mean) for v in window) / period
    return mean, math.sqrt(var)

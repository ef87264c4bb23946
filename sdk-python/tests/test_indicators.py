"""The Python indicators give the Rust SDK's values (the same cases as its unit tests)."""

import math
import random
import unittest

from crucible_strategy import indicators as ind
from crucible_strategy import state


def close(a, b, tol=1e-6):
    return abs(a - b) < tol


class Indicators(unittest.TestCase):
    def test_sma(self):
        v = [float(x) for x in range(1, 11)]
        self.assertEqual(ind.sma(v, 5), 8.0)
        self.assertIsNone(ind.sma(v, 11))
        self.assertIsNone(ind.sma(v, 0))

    def test_ema_seeds_with_sma(self):
        self.assertEqual(ind.ema_series([1.0, 2.0, 3.0, 4.0, 5.0], 3), [2.0, 3.0, 4.0])
        self.assertIsNone(ind.ema([1.0, 2.0], 3))

    def test_rsi_wilder_reference(self):
        p = [44.34, 44.09, 44.15, 43.61, 44.33, 44.83, 45.10, 45.42, 45.84, 46.08, 45.89,
             46.03, 45.61, 46.28, 46.28]
        self.assertTrue(abs(ind.rsi(p, 14) - 70.464) < 0.01)
        self.assertTrue(abs(ind.rsi(p + [46.00], 14) - 66.25) < 0.1)

    def test_fast_paths_give_the_plain_definitions_floats(self):
        # `ema` and `rsi` skip work the plain formulas do (the series list, the side that adds
        # 0.0); on any prices they must return the very same floats.
        def plain_rsi(v, period):
            changes = [b - a for a, b in zip(v, v[1:])]
            gain = sum(c for c in changes[:period] if c > 0) / period
            loss = sum(-c for c in changes[:period] if c <= 0) / period
            keep, add = (period - 1.0) / period, 1.0 / period
            for c in changes[period:]:
                up, down = (c, 0.0) if c > 0 else (0.0, -c)
                gain, loss = gain * keep + up * add, loss * keep + down * add
            if loss == 0.0:
                return 50.0 if gain == 0.0 else 100.0
            return 100.0 - 100.0 / (1.0 + gain / loss)

        rng = random.Random(16)
        for _ in range(200):
            price, prices = rng.uniform(1.0, 500.0), []
            for _ in range(rng.randint(15, 220)):
                price = price if rng.random() < 0.1 else price * (1 + rng.gauss(0, 0.02))
                prices.append(price)
            for period in (1, 2, 12, 14, 48):
                self.assertEqual(ind.ema(prices, period), (ind.ema_series(prices, period) or [None])[-1])
                if len(prices) > period:
                    self.assertEqual(ind.rsi(prices, period), plain_rsi(prices, period))

    def test_rsi_extremes(self):
        up = [float(x) for x in range(1, 21)]
        self.assertEqual(ind.rsi(up, 14), 100.0)
        self.assertTrue(close(ind.rsi(list(reversed(up)), 14), 0.0))
        self.assertEqual(ind.rsi([1.0] * 20, 14), 50.0)

    def test_macd(self):
        m = ind.macd([10.0] * 60)
        self.assertTrue(close(m.macd, 0) and close(m.signal, 0) and close(m.histogram, 0))
        line = [float(x) for x in range(200)]
        m = ind.macd(line)
        self.assertTrue(abs(m.macd - 7.0) < 1e-6)
        self.assertTrue(abs(m.histogram) < 1e-6)
        self.assertIsNone(ind.macd(line[:30]))

    def test_bollinger_and_zscore(self):
        v = [1.0, 2.0, 3.0, 4.0, 5.0]
        b = ind.bollinger(v, 5, 2.0)
        self.assertTrue(close(b.middle, 3.0))
        self.assertTrue(close(b.upper, 3.0 + 2.0 * math.sqrt(2)))
        self.assertTrue(close(b.lower, 3.0 - 2.0 * math.sqrt(2)))
        self.assertTrue(close(ind.zscore(v, 5), math.sqrt(2)))
        self.assertEqual(ind.zscore([7.0] * 5, 5), 0.0)

    def test_atr_constant_ranges(self):
        self.assertTrue(close(ind.atr([11.0] * 20, [9.0] * 20, [10.0] * 20, 14), 2.0))
        self.assertIsNone(ind.atr([1.0] * 5, [1.0] * 5, [1.0] * 5, 14))

    def test_highest_lowest(self):
        v = [3.0, 1.0, 4.0, 1.0, 5.0]
        self.assertEqual(ind.highest(v, 3), 5.0)
        self.assertEqual(ind.lowest(v, 3), 1.0)
        self.assertIsNone(ind.highest(v, 6))


class State(unittest.TestCase):
    def test_round_trip_and_first_tick(self):
        self.assertEqual(state.load(b"", {"n": 0}), {"n": 0})
        blob = state.dump({"n": 3, "entry": 101.5})
        self.assertEqual(state.load(blob), {"n": 3, "entry": 101.5})
        self.assertEqual(state.load(b"\xff not json", "fresh"), "fresh")

    def test_limit(self):
        with self.assertRaises(ValueError):
            state.dump("x" * (64 * 1024))


if __name__ == "__main__":
    unittest.main()

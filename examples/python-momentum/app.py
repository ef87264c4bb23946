"""A trend-following strategy in Python: EMA crossover, confirmed by RSI, with a trailing stop.

Built into a WebAssembly component with componentize-py (see build.sh); the server runs it in
the same sandbox as the built-in classes. Every tick is a fresh instance, so anything to
remember goes into the returned state.
"""

import wit_world
from wit_world.imports import host, types

from crucible_strategy import indicators, orders, state

FAST, SLOW = 12, 48
TRAIL = 0.06  # give back at most 6 % from the high since entry


class WitWorld(wit_world.WitWorld):
    def on_tick(self, ctx: types.TickContext) -> types.TickOutput:
        closes = ctx.candles.close
        memory = state.load(ctx.state, {"peak": None})
        fast = indicators.ema(closes, FAST)
        slow = indicators.ema(closes, SLOW)
        rsi = indicators.rsi(closes, 14)
        if fast is None or slow is None or rsi is None:
            return orders.output([], state.dump(memory))

        price = closes[-1]
        holding = ctx.portfolio.base > 0
        placed = []
        if holding:
            peak = max(memory["peak"] or price, price)
            memory["peak"] = peak
            if price < peak * (1 - TRAIL):
                placed.append(orders.sell_all(f"trailing stop {TRAIL:.0%} under {peak:.2f}"))
                memory["peak"] = None
            elif fast < slow:
                placed.append(orders.sell_all("fast EMA crossed under slow"))
                memory["peak"] = None
        elif fast > slow and 50 < rsi < 70:
            allocation = ctx.config.max_allocation / 100
            placed.append(orders.buy(allocation, f"EMA{FAST} over EMA{SLOW}, RSI {rsi:.0f}"))
            memory["peak"] = price
            host.log(host.Level.INFO, f"entering at {price:.2f}")
        return orders.output(placed, state.dump(memory))

"""{{name}}: a Crucible strategy in Python.

Buys when the fast EMA (``fast`` candles, 12 by default) crosses over the slow one with RSI not
overbought, sells on the opposite cross. Every tick runs in a fresh instance: what must survive
goes into the returned state.
"""

from typing import List

import wit_world
from wit_world.imports import types

from crucible_strategy import indicators, orders, state
from crucible_strategy.params import IntParam, specs

# A tunable parameter: an operator sets it per agent (`strategy.params`), `crucible strategy
# optimize` searches its range, and the default runs otherwise. Declare more the same way
# (FloatParam, ChoiceParam), list them in `params` and read them with `.get(ctx)`.
FAST = IntParam("fast", "fast EMA period, candles", 3, 30, 12)


class WitWorld(wit_world.WitWorld):
    def params(self) -> List[types.ParamSpec]:
        return specs([FAST])

    def on_tick(self, ctx: types.TickContext) -> types.TickOutput:
        closes = ctx.candles.close
        memory = state.load(ctx.state, {"fast_above": None})
        period = FAST.get(ctx)
        fast = indicators.ema(closes, period)
        slow = indicators.ema(closes, 48)
        rsi = indicators.rsi(closes, 14)
        if fast is None or slow is None or rsi is None:
            return orders.output([], state.dump(memory))
        above = fast > slow
        crossed_up = above and memory["fast_above"] is False
        crossed_down = not above and memory["fast_above"] is True
        memory["fast_above"] = above
        placed = []
        holding = ctx.portfolio.base > 0
        if holding and crossed_down:
            placed.append(orders.sell_all(f"EMA {period}/48 crossed down"))
        elif not holding and crossed_up and rsi < 70:
            placed.append(orders.buy(0.5, f"EMA {period}/48 crossed up"))
        return orders.output(placed, state.dump(memory))

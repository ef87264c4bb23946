"""A trend-following strategy in Python: EMA crossover, confirmed by RSI, with a trailing stop.

Built into a WebAssembly component with componentize-py (see build.sh); the server runs it in
the same sandbox as the built-in classes. Every tick is a fresh instance, so anything to
remember goes into the returned state.

An agent with a personality also asks its language model (``crucible_strategy.model``) to confirm
each entry the rule signals, with a JSON-schema answer; the model's reason goes into the order's
reason. A declined entry is not asked about again for a few candles (calls count against the
agent's budget). When the model gives no answer (no key, budget spent, timeout...), the rule
decides alone. Exits (the trailing stop, the EMA cross under) never wait for the model. Without a
personality (backtests, the upload's dry tick) the model is never asked.

Its numbers are tunable parameters (world 0.3.0, ``crucible_strategy.params``): ``fast`` and
``slow`` (the EMA periods, 12 and 48 candles), ``rsi_period`` (14) and ``rsi_max`` (70: no entry
at or above it, nor at 50 and below), ``trail`` (the trailing stop, 6 %) and ``quiet`` (candles
without asking again after the model declines, 6). An agent sets them with ``strategy.params``;
the defaults are the values given here.
"""

from typing import List, Optional

import wit_world
from wit_world.imports import host, types

from crucible_strategy import indicators, orders, state
from crucible_strategy.model import ModelError, ask_model
from crucible_strategy.params import FloatParam, IntParam, specs

FAST = IntParam("fast", "fast EMA period, candles", 3, 30, 12)
SLOW = IntParam("slow", "slow EMA period, candles", 20, 120, 48)
RSI_PERIOD = IntParam("rsi_period", "RSI period, candles", 5, 30, 14)
RSI_MAX = FloatParam("rsi_max", "no entry while RSI (0-100) is at or above this", 55.0, 90.0, 70.0)
TRAIL = FloatParam("trail", "trailing stop: most to give back from the high since entry, fraction",
                   0.01, 0.2, 0.06)
QUIET = IntParam("quiet", "candles without asking the model again after it declines an entry",
                 0, 48, 6)
PARAMS = [FAST, SLOW, RSI_PERIOD, RSI_MAX, TRAIL, QUIET]

CONFIRM = {
    "type": "object",
    "properties": {
        "confirm": {"type": "boolean"},
        # No maxLength: strict structured-output modes refuse it; the reason is cut here instead.
        "reason": {"type": "string"},
    },
    "required": ["confirm", "reason"],
    "additionalProperties": False,
}


def confirm_entry(ctx: types.TickContext, price: float, fast: float, slow: float, rsi: float):
    """The model's verdict on entering now: ``(confirm, reason)``. Raises ``ModelError`` when
    the model gives no usable answer."""
    s = ctx.signals
    question = (
        f"{ctx.config.base}/{ctx.config.quote} on {ctx.config.interval} candles, last close "
        f"{price:.4f}. EMA{FAST.get(ctx)} {fast:.4f} is over EMA{SLOW.get(ctx)} {slow:.4f}, "
        f"RSI {rsi:.0f}. "
        f"Signals: sentiment {s.sentiment:+.2f}, mention volume {s.mention_volume:.2f}x, "
        f"exchange net flow {s.exchange_net_flow:+.4f}, whale net buy {s.whale_net_buy:+.2f}, "
        f"active wallets {s.active_wallets_change:+.1%}. A momentum rule says buy now. "
        "Confirm or decline the entry, with a short reason."
    )
    answer = ask_model(question, max_tokens=150, temperature=0.0, json_schema=CONFIRM).json()
    if not isinstance(answer, dict) or not isinstance(answer.get("confirm"), bool):
        raise ModelError("malformed", reason="the answer does not follow the schema")
    return answer["confirm"], str(answer.get("reason", "")).strip()[:120]


def entry_reason(ctx: types.TickContext, memory: dict, price: float, fast: float, slow: float,
                 rsi: float) -> Optional[str]:
    """Why to enter now, or ``None`` when the agent's model declines the entry."""
    rule = f"EMA{FAST.get(ctx)} over EMA{SLOW.get(ctx)}, RSI {rsi:.0f}"
    if not ctx.config.personality:
        return rule
    try:
        confirmed, why = confirm_entry(ctx, price, fast, slow, rsi)
    except ModelError as error:
        host.log(host.Level.WARN, f"model gave no answer ({error}); the rule decides")
        return rule
    if not confirmed:
        host.log(host.Level.INFO, f"model declined the entry: {why}")
        memory["quiet"] = QUIET.get(ctx)
        return None
    return f"{rule}; model: {why}"


class WitWorld(wit_world.WitWorld):
    def params(self) -> List[types.ParamSpec]:
        return specs(PARAMS)

    def on_tick(self, ctx: types.TickContext) -> types.TickOutput:
        closes = ctx.candles.close
        memory = state.load(ctx.state, {"peak": None})
        fast = indicators.ema(closes, FAST.get(ctx))
        slow = indicators.ema(closes, SLOW.get(ctx))
        rsi = indicators.rsi(closes, RSI_PERIOD.get(ctx))
        if fast is None or slow is None or rsi is None:
            return orders.output([], state.dump(memory))

        price = closes[-1]
        trail = TRAIL.get(ctx)
        holding = ctx.portfolio.base > 0
        placed = []
        if holding:
            peak = max(memory["peak"] or price, price)
            memory["peak"] = peak
            if price < peak * (1 - trail):
                placed.append(orders.sell_all(f"trailing stop {trail:.0%} under {peak:.2f}"))
                memory["peak"] = None
            elif fast < slow:
                placed.append(orders.sell_all("fast EMA crossed under slow"))
                memory["peak"] = None
        elif memory.get("quiet", 0) > 0:
            memory["quiet"] -= 1
        elif fast > slow and 50 < rsi < RSI_MAX.get(ctx):
            reason = entry_reason(ctx, memory, price, fast, slow, rsi)
            if reason is not None:
                allocation = ctx.config.max_allocation / 100
                placed.append(orders.buy(allocation, reason))
                memory["peak"] = price
                host.log(host.Level.INFO, f"entering at {price:.2f}")
        return orders.output(placed, state.dump(memory))

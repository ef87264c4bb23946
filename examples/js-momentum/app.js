// A Crucible strategy in JavaScript, built into a component with componentize-js (build.mjs).
// Buys when the fast EMA crosses over the slow one, sells on the opposite cross. Every tick runs
// in a fresh instance: what must survive goes into the returned state (bytes; JSON here).

function ema(values, period) {
  if (period <= 0 || values.length < period) return null;
  const alpha = 2 / (period + 1);
  let value = values.slice(0, period).reduce((a, b) => a + b, 0) / period;
  for (const v of values.slice(period)) value += alpha * (v - value);
  return value;
}

function load(bytes) {
  try {
    return bytes.length ? JSON.parse(new TextDecoder().decode(bytes)) : {};
  } catch {
    return {};
  }
}

export function onTick(ctx) {
  const closes = ctx.candles.close;
  const memory = load(ctx.state);
  const fast = ema(closes, 12);
  const slow = ema(closes, 48);
  const orders = [];
  if (fast !== null && slow !== null) {
    const above = fast > slow;
    const holding = ctx.portfolio.base > 0;
    if (holding && memory.fastAbove === true && !above) {
      orders.push({ side: 'sell', size: { tag: 'all' }, reason: 'EMA 12/48 crossed down' });
    } else if (!holding && memory.fastAbove === false && above) {
      orders.push({ side: 'buy', size: { tag: 'fraction-of-equity', val: 0.5 }, reason: 'EMA 12/48 crossed up' });
    }
    memory.fastAbove = above;
  }
  return { orders, state: new TextEncoder().encode(JSON.stringify(memory)) };
}

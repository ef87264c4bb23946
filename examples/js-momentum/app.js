// A Crucible strategy in JavaScript, built into a component with componentize-js (build.mjs).
// Buys when the fast EMA crosses over the slow one, sells on the opposite cross. Every tick runs
// in a fresh instance: what must survive goes into the returned state (bytes; JSON here).
//
// Its numbers are tunable parameters (crucible:strategy@0.3.0): `fast` and `slow`, the EMA
// periods (12 and 48 candles), and `size`, the fraction of equity a buy spends (0.5). `params`
// declares them; `onTick` reads the tick's values from `ctx.params` (the agent's, or these
// defaults).
//
// An agent with a personality also asks its language model to confirm each buy, with a
// JSON-schema answer whose reason goes into the order's; when the model gives no answer (no key,
// budget spent, timeout...), the rule decides alone. Sells never wait for the model. Without a
// personality (backtests, the upload's dry tick) the model is never asked.
import { log } from 'crucible:strategy/host@0.3.0';
import { complete } from 'crucible:strategy/model@0.3.0';

// The tick's value of parameter `name` ({tag, val}, the WIT's param-value), or undefined.
function paramValue(ctx, name) {
  return (ctx.params ?? []).find((param) => param.name === name)?.value;
}

// An integer parameter from `min` to `max` (both included). `.spec` is its declaration (s64 is a
// BigInt in the bindings); `.get(ctx)` the tick's value as a number, clamped into the range, or
// the default when there is none or it is of another kind.
function intParam(name, description, min, max, fallback) {
  return {
    name,
    spec: {
      name,
      description,
      kind: { tag: 'int', val: { min: BigInt(min), max: BigInt(max) } },
      default: { tag: 'int', val: BigInt(fallback) },
    },
    get(ctx) {
      const value = paramValue(ctx, name);
      if (value?.tag !== 'int') return fallback;
      return Math.min(Math.max(Number(value.val), min), max);
    },
  };
}

// A real parameter from `min` to `max` (both included), as `intParam`.
function floatParam(name, description, min, max, fallback) {
  return {
    name,
    spec: {
      name,
      description,
      kind: { tag: 'float', val: { min, max } },
      default: { tag: 'float', val: fallback },
    },
    get(ctx) {
      const value = paramValue(ctx, name);
      if (value?.tag !== 'float' || !Number.isFinite(value.val)) return fallback;
      return Math.min(Math.max(value.val, min), max);
    },
  };
}

const FAST = intParam('fast', 'fast EMA period, candles', 3, 30, 12);
const SLOW = intParam('slow', 'slow EMA period, candles', 20, 120, 48);
const SIZE = floatParam('size', 'fraction of equity a buy spends (capped by max allocation)',
  0.1, 1, 0.5);

// The component's parameters (the WIT's `params` export): called once when the host loads it.
export function params() {
  return [FAST, SLOW, SIZE].map((param) => param.spec);
}

// The model gave no answer. `kind` is the WIT's model-error case: no-endpoint, no-key,
// budget-exhausted, timeout, refused (with `status` and `reason`) or malformed (with `reason`).
class ModelError extends Error {
  constructor(kind, { status, reason } = {}) {
    super([kind, status, reason].filter((part) => part !== undefined).join(': '));
    this.name = 'ModelError';
    this.kind = kind;
    this.status = status;
    this.reason = reason;
  }
}

// One turn: a string is the user's; [role, text] or {role, content} give the role. There is no
// system turn: the host sends the agent's personality as the system message.
function turn(message) {
  const [role, content] =
    typeof message === 'string'
      ? ['user', message]
      : Array.isArray(message)
        ? message
        : [message?.role ?? 'user', message?.content];
  if (role !== 'user' && role !== 'assistant') {
    throw new TypeError(`a turn's role is user or assistant, not ${role}`);
  }
  if (typeof content !== 'string') throw new TypeError("a turn's content is a string");
  return { role, content };
}

// Ask the agent's model (crucible:strategy/model@0.3.0) for one completion: returns
// {text, promptTokens, completionTokens, latencyMs}, throws ModelError when there is no answer.
// `jsonSchema` (an object) asks for an answer following it; `json: true` also parses the answer
// (an answer that is not JSON is a `malformed` ModelError, so one catch covers it).
function askModel(messages, { maxTokens = 256, temperature = 0, jsonSchema, json = false } = {}) {
  const turns = (typeof messages === 'string' ? [messages] : messages).map(turn);
  if (turns.length === 0) throw new TypeError('askModel needs at least one message');
  let answer;
  try {
    answer = complete({
      messages: turns,
      maxTokens,
      temperature,
      jsonSchema: jsonSchema === undefined ? undefined : JSON.stringify(jsonSchema),
    });
  } catch (error) {
    // componentize-js throws an import's `err` as a ComponentError carrying it in `payload`.
    const failure = error?.payload ?? error;
    if (typeof failure?.tag !== 'string') throw error;
    const detail =
      failure.tag === 'refused' ? failure.val : failure.tag === 'malformed' ? { reason: failure.val } : {};
    throw new ModelError(failure.tag, detail);
  }
  if (!json) return answer;
  try {
    return { ...answer, json: JSON.parse(answer.text) };
  } catch (error) {
    throw new ModelError('malformed', { reason: `answer is not JSON: ${error.message}` });
  }
}

const CONFIRM = {
  type: 'object',
  properties: { confirm: { type: 'boolean' }, reason: { type: 'string' } },
  required: ['confirm', 'reason'],
  additionalProperties: false,
};

// Why to buy now, or null when the agent's model declines.
function buyReason(ctx, fast, slow) {
  const [fastPeriod, slowPeriod] = [FAST.get(ctx), SLOW.get(ctx)];
  const rule = `EMA ${fastPeriod}/${slowPeriod} crossed up`;
  if (!ctx.config.personality) return rule;
  const { base, quote, interval } = ctx.config;
  const s = ctx.signals;
  const price = ctx.candles.close[ctx.candles.close.length - 1];
  try {
    const { json } = askModel(
      `${base}/${quote} on ${interval} candles, last close ${price.toFixed(4)}. ` +
        `EMA${fastPeriod} ${fast.toFixed(4)} just crossed over EMA${slowPeriod} ` +
        `${slow.toFixed(4)}. Signals: sentiment ` +
        `${s.sentiment.toFixed(2)}, mention volume ${s.mentionVolume.toFixed(2)}x, exchange net flow ` +
        `${s.exchangeNetFlow.toFixed(4)}, whale net buy ${s.whaleNetBuy.toFixed(2)}, active wallets ` +
        `${(s.activeWalletsChange * 100).toFixed(1)}%. A momentum rule says buy now. Confirm or ` +
        'decline the entry, with a short reason.',
      { maxTokens: 150, temperature: 0, jsonSchema: CONFIRM, json: true },
    );
    if (typeof json?.confirm !== 'boolean') {
      throw new ModelError('malformed', { reason: 'the answer does not follow the schema' });
    }
    const why = String(json.reason ?? '').trim().slice(0, 120);
    if (!json.confirm) {
      log('info', `model declined the entry: ${why}`);
      return null;
    }
    return `${rule}; model: ${why}`;
  } catch (error) {
    if (!(error instanceof ModelError)) throw error;
    log('warn', `model gave no answer (${error.message}); the rule decides`);
    return rule;
  }
}

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
  const fast = ema(closes, FAST.get(ctx));
  const slow = ema(closes, SLOW.get(ctx));
  const orders = [];
  if (fast !== null && slow !== null) {
    const above = fast > slow;
    const holding = ctx.portfolio.base > 0;
    if (holding && memory.fastAbove === true && !above) {
      const reason = `EMA ${FAST.get(ctx)}/${SLOW.get(ctx)} crossed down`;
      orders.push({ side: 'sell', size: { tag: 'all' }, reason });
    } else if (!holding && memory.fastAbove === false && above) {
      const reason = buyReason(ctx, fast, slow);
      if (reason !== null) {
        const size = { tag: 'fraction-of-equity', val: SIZE.get(ctx) };
        orders.push({ side: 'buy', size, reason });
      }
    }
    memory.fastAbove = above;
  }
  return { orders, state: new TextEncoder().encode(JSON.stringify(memory)) };
}

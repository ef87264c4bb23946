// Agents pages, for the signed-in operator. They call the v1 agents API through the web app's
// /web-api/v1/… routes, which act for the session (same origin, CSRF token): no page asks for
// or holds a key. The list, an agent's status/ticks/faults/equity/performance, start/stop,
// funding on simnet, strategy uploads and webhook deliveries are all drawn from the API's answers.
"use strict";

(function () {
  const C = window.Crucible;
  const PERIODS = ["24h", "7d", "30d", "all"];

  function config() {
    const node = document.getElementById("agents-config");
    try { return node ? JSON.parse(node.textContent) : {}; } catch (_) { return {}; }
  }

  function badge(status) {
    return C.el("span", { class: "badge " + status, text: status });
  }

  // ---- list ----
  async function loadList() {
    const holder = document.getElementById("agents-list");
    if (!holder) return;
    const result = await C.api("GET", "/web-api/v1/public/agents?pageSize=50");
    if (result.status !== 200) { holder.replaceChildren(C.el("p", { class: "error", text: C.human(result).text })); return; }
    const agents = result.body.data || [];
    if (agents.length === 0) { holder.replaceChildren(C.el("p", { class: "empty", text: "No agent yet: create one below." })); return; }
    const rows = agents.map(function (agent) {
      return C.el("tr", {}, [
        C.el("td", {}, [C.el("a", { href: "/agents/" + encodeURIComponent(agent.agentId), text: agent.name })]),
        C.el("td", { text: "@" + agent.username }),
        C.el("td", { text: agent.class }),
        C.el("td", {}, [badge(agent.status), agent.statusReason ? " " + agent.statusReason : null]),
        C.el("td", { class: "num", text: String(agent.ticks) }),
        C.el("td", { class: "num", text: agent.paper ? C.usdc(agent.paper.equity) : (agent.live ? C.usdc(agent.live.equity) : "—") }),
      ]);
    });
    const head = C.el("thead", {}, [C.el("tr", {}, ["Name", "Username", "Class", "Status", "Ticks", "Equity"].map(function (h, i) {
      return C.el("th", { class: i >= 4 ? "num" : "", text: h });
    }))]);
    holder.replaceChildren(C.el("div", { class: "scroll" }, [C.el("table", {}, [head, C.el("tbody", {}, rows)])]));
    loadStrategies();
  }

  // ---- the strategy parameters of the creation form ----
  // Whatever class and strategy are chosen, the form offers what that component declares
  // (GET /api/v1/public/strategies/params): an empty field keeps the declared default.
  async function loadParams() {
    const holder = document.getElementById("agent-params");
    const klass = document.getElementById("agent-class");
    const strategy = document.getElementById("agent-strategy");
    if (!holder || !klass || !strategy) return;
    const asked = klass.value + " " + strategy.value;
    holder.dataset.asked = asked;
    const query = "?class=" + encodeURIComponent(klass.value) + "&type=" + encodeURIComponent(strategy.value);
    const result = await C.api("GET", "/web-api/v1/public/strategies/params" + query);
    // A later choice may have been made while this one was asked about.
    if (holder.dataset.asked !== asked) return;
    const legend = C.el("legend", { text: "Strategy parameters" });
    if (result.status !== 200) {
      holder.replaceChildren(legend, C.el("p", { class: "error", text: C.human(result).text }));
      return;
    }
    const params = (result.body.data && result.body.data.params) || [];
    if (params.length === 0) {
      holder.replaceChildren(legend, C.el("p", { class: "muted", text: "This strategy declares no parameters." }));
      return;
    }
    holder.replaceChildren(legend,
      C.el("p", { class: "muted", text: "Leave a field empty to keep the strategy's default." }),
      ...params.map(paramField));
  }

  function paramField(p) {
    const id = "param-" + p.name;
    const name = "strategy.params." + p.name;
    const shown = String(p.default);
    let input;
    let range;
    if (p.kind === "choice") {
      range = "one of " + p.choices.join(", ");
      input = C.el("select", { id: id, name: name, "data-type": "optional" },
        [C.el("option", { value: "", text: "Default (" + shown + ")" })].concat(p.choices.map(function (c) {
          return C.el("option", { value: c, text: c });
        })));
    } else {
      range = p.min + " to " + p.max;
      input = C.el("input", {
        id: id, name: name, type: "number", min: String(p.min), max: String(p.max),
        step: p.kind === "int" ? "1" : "any", placeholder: shown, "data-type": "number",
      });
    }
    const words = p.name + (p.description ? ": " + p.description : "") + " (" + range + "; default " + shown + ")";
    return C.el("div", { class: "field" }, [C.el("label", { for: id, text: words }), input]);
  }

  async function loadStrategies() {
    const holder = document.getElementById("strategies-list");
    if (!holder) return;
    const result = await C.api("GET", "/web-api/v1/public/strategies");
    if (result.status !== 200) return;
    const list = result.body.data || [];
    if (list.length === 0) { holder.replaceChildren(); return; }
    holder.replaceChildren(C.el("ul", {}, list.map(function (s) {
      return C.el("li", {}, [s.name + ": use ", C.el("code", { text: s.strategyType }), " (" + s.sizeBytes + " bytes)"]);
    })));
    // A strategy uploaded on this page becomes a choice of the creation form at once.
    const select = document.getElementById("agent-strategy");
    if (!select) return;
    const offered = new Set(Array.from(select.options).map(function (o) { return o.value; }));
    for (const s of list) {
      if (!offered.has(s.strategyType)) select.append(C.el("option", { value: s.strategyType, text: "Uploaded: " + s.name }));
    }
  }

  async function upload(event) {
    event.preventDefault();
    const form = event.currentTarget;
    const region = document.getElementById("upload-status");
    const file = form.elements.component.files[0];
    if (!file) { C.say(region, "Choose a .wasm file first.", "error"); return; }
    C.say(region, "Uploading…");
    const bytes = await file.arrayBuffer();
    const path = "/web-api/v1/public/strategies?name=" + encodeURIComponent(form.elements.name.value);
    const result = await C.api("POST", path, null, { raw: bytes, contentType: "application/wasm" });
    if (result.status === 200 || result.status === 201) {
      C.say(region, "Uploaded: create an agent with strategy type " + result.body.data.strategyType + ".", "ok");
      loadStrategies();
    } else {
      C.say(region, C.human(result).text, "error");
    }
  }

  // ---- one agent ----
  const samples = { times: [], equity: [] };
  let equityChart = null;
  let lastPerformance = 0;
  let equityLoaded = false;

  // Time labels in UTC, as every time on the page: the day and the hour whenever the chart
  // spans more than a day (hourly marks), the hour and minute otherwise.
  const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
  function timeLabel(seconds, withDay) {
    const d = new Date(seconds * 1000);
    const hm = String(d.getUTCHours()).padStart(2, "0") + ":" + String(d.getUTCMinutes()).padStart(2, "0");
    return withDay ? d.getUTCDate() + " " + MONTHS[d.getUTCMonth()] + " " + hm : hm;
  }
  function timeAxis(u, splits) {
    const span = splits.length > 1 ? splits[splits.length - 1] - splits[0] : 0;
    const withDay = span >= 86400 || (samples.times.length > 1 && samples.times[samples.times.length - 1] - samples.times[0] >= 86400);
    return splits.map(function (t) { return timeLabel(t, withDay); });
  }

  function drawEquity() {
    const holder = document.getElementById("equity-chart");
    if (!holder || !window.uPlot || samples.times.length < 2) return;
    const data = [samples.times, samples.equity];
    if (equityChart) { equityChart.setData(data); return; }
    holder.replaceChildren();
    equityChart = new window.uPlot({
      width: Math.min(holder.clientWidth || 640, 900), height: 220,
      series: [{ label: "Time (UTC)", value: function (u, t) { return t === null ? "—" : timeLabel(t, true); } },
        { label: "Equity (USDC)", stroke: "#2563eb", width: 2 }],
      axes: [{ values: timeAxis, space: 80 }, { label: "USDC" }],
    }, data, holder);
  }

  function text(id, value) {
    const node = document.getElementById(id);
    if (node) node.textContent = value === null || value === undefined || value === "" ? "—" : String(value);
  }

  function renderAgent(agent) {
    document.getElementById("agent-loading").hidden = true;
    document.getElementById("agent-body").hidden = false;
    const status = document.getElementById("agent-status");
    status.textContent = agent.status;
    status.className = "badge " + agent.status;
    text("agent-reason", agent.statusReason || "");
    text("agent-class", agent.class + " · " + agent.modelId + " · @" + agent.username);
    const chosen = Object.entries(agent.strategy.params || {}).map(function (pair) { return pair[0] + "=" + pair[1]; });
    text("agent-strategy", agent.strategy.type + " · " + agent.strategy.tokenPair.base + "/" + agent.strategy.tokenPair.quote +
      " · every " + agent.strategy.timeInterval + " · up to " + agent.strategy.maxAllocation + " % · " +
      (chosen.length ? "parameters " + chosen.join(", ") : "default parameters"));
    text("agent-mode", agent.isPaperTrading ? "paper trading" : "live (swaps on chain)");
    text("agent-wallet", agent.walletAddress);
    text("agent-ticks", agent.ticks);
    text("agent-faults", agent.faults);
    text("agent-last-fault", agent.lastFault || "none");
    text("agent-last-tick", agent.lastTickAt ? C.when(agent.lastTickAt) : "not yet");
    const model = agent.model;
    const modelStatus = document.getElementById("agent-model-status");
    modelStatus.textContent = model.status.replace(/_/g, " ");
    modelStatus.className = "badge model-" + model.status;
    text("agent-model-name", agent.modelId + (model.lastError ? " · last error: " + model.lastError : ""));
    text("agent-tokens", model.tokensToday.toLocaleString("en") + " of " + model.tokensPerDay.toLocaleString("en"));
    const account = agent.live || agent.paper;
    text("agent-equity", account ? C.usdc(account.equity) : "—");
    text("agent-trades", agent.paper ? String(agent.paper.totalTrades) : agent.live ? "live (see the trade list)" : "—");
    // Orders the ledger or the chain refused: not faults, but why an agent did not trade.
    text("agent-refused", account ? account.refusedOrders + (account.lastRefusal ? " (last: " + account.lastRefusal + ")" : "") : "—");
    document.getElementById("agent-start").disabled = agent.status === "active";
    document.getElementById("agent-stop").disabled = agent.status !== "active";
    if (account && typeof account.equity === "number") {
      const now = Date.now() / 1000;
      samples.times.push(now);
      samples.equity.push(account.equity);
      drawEquity();
    }
  }

  // The hourly marks the server kept, before the samples of this visit.
  async function loadEquityHistory(agentId) {
    const result = await C.api("GET", "/web-api/v1/public/agents/" + encodeURIComponent(agentId) + "/equity?points=200");
    if (result.status !== 200 || !Array.isArray(result.body.data)) return;
    const times = [], equity = [];
    for (const point of result.body.data) { times.push(Date.parse(point.at) / 1000); equity.push(point.equity); }
    samples.times = times.concat(samples.times);
    samples.equity = equity.concat(samples.equity);
    drawEquity();
  }

  let oldestTrade = null;
  let newestTradeId = null;

  function tradeRow(trade) {
    const explorer = trade.txSignature && !config().simnet;
    const link = trade.txSignature
      ? (explorer
          ? C.el("a", { href: "https://explorer.solana.com/tx/" + encodeURIComponent(trade.txSignature), rel: "noopener", text: C.shortText(trade.txSignature) })
          : C.el("code", { text: C.shortText(trade.txSignature), title: trade.txSignature }))
      : document.createTextNode("paper");
    return C.el("tr", {}, [
      C.el("td", { text: C.when(trade.executedAt) }),
      C.el("td", {}, [C.el("span", { class: "badge " + trade.side, text: trade.side })]),
      C.el("td", { class: "num", text: trade.baseAmount.toFixed(4) + " " + trade.baseToken }),
      C.el("td", { class: "num", text: trade.price.toFixed(2) }),
      C.el("td", { class: "num", text: C.usdc(trade.notional) }),
      C.el("td", { class: "num", text: C.usdc(trade.fee) }),
      C.el("td", { class: "num", text: trade.realizedPnl === null ? "—" : C.usdc(trade.realizedPnl) }),
      C.el("td", { text: trade.reason || "—" }),
      C.el("td", {}, [link]),
    ]);
  }

  // `older`: the next page below what is shown; otherwise the newest page (refreshing the top).
  async function loadTrades(agentId, older) {
    const body = document.querySelector("#agent-trade-list tbody");
    if (!body) return;
    let path = "/web-api/v1/public/agents/" + encodeURIComponent(agentId) + "/trades?limit=50";
    if (older && oldestTrade) path += "&before=" + encodeURIComponent(oldestTrade);
    const result = await C.api("GET", path);
    if (result.status !== 200) return;
    const trades = result.body.data || [];
    if (older) {
      for (const trade of trades) body.append(tradeRow(trade));
    } else {
      if (trades.length && trades[0].tradeId === newestTradeId) return;
      body.replaceChildren.apply(body, trades.length ? trades.map(tradeRow) : [C.el("tr", {}, [C.el("td", { colspan: "9", text: "No trade yet." })])]);
    }
    if (trades.length) {
      oldestTrade = trades[trades.length - 1].tradeId;
      if (!older) newestTradeId = trades[0].tradeId;
    }
    const more = document.getElementById("agent-more-trades");
    if (more) more.hidden = trades.length < 50;
  }

  let oldestDecision = null;
  let newestDecisionId = null;

  // One decision as a turn of the conversation: what the model was told (folded), then its
  // answer, or the rule's verdict and why the rule decided.
  function decisionItem(d) {
    const verdict = d.action === "hold" ? "hold" : d.action + " " + Math.round(d.fraction * 100) + " %";
    const meta = d.decidedBy === "model"
      ? "by " + d.model + " · " + (d.promptTokens + d.completionTokens) + " tokens · " + d.latencyMs + " ms"
      : "by the class rule · " + (d.why || "").replace(/_/g, " ") + (d.whyDetail ? ": " + d.whyDetail : "");
    const children = [];
    if (d.prompt) {
      children.push(C.el("details", { class: "prompt" }, [
        C.el("summary", { text: "What the model was told" }),
        C.el("pre", { text: d.prompt }),
      ]));
    }
    children.push(C.el("p", { class: "answer " + d.decidedBy }, [
      C.el("span", { class: "badge " + d.action, text: verdict }),
      document.createTextNode(" " + (d.reason || "")),
    ]));
    children.push(C.el("p", { class: "muted meta", text: C.when(d.decidedAt) + " · " + meta }));
    return C.el("li", { class: "decision" }, children);
  }

  async function loadDecisions(agentId, older) {
    const list = document.getElementById("agent-decisions");
    if (!list) return;
    let path = "/web-api/v1/public/agents/" + encodeURIComponent(agentId) + "/decisions?limit=20";
    if (older && oldestDecision) path += "&before=" + encodeURIComponent(oldestDecision);
    const result = await C.api("GET", path);
    if (result.status !== 200) return;
    const decisions = result.body.data || [];
    if (older) {
      for (const d of decisions) list.append(decisionItem(d));
    } else {
      if (decisions.length && decisions[0].decisionId === newestDecisionId) return;
      list.replaceChildren.apply(list, decisions.length ? decisions.map(decisionItem) : [C.el("li", { class: "muted", text: "No decision yet: the first comes with the first tick." })]);
    }
    if (decisions.length) {
      oldestDecision = decisions[decisions.length - 1].decisionId;
      if (!older) newestDecisionId = decisions[0].decisionId;
    }
    const more = document.getElementById("agent-more-decisions");
    if (more) more.hidden = decisions.length < 20;
  }

  async function loadPerformance(agentId) {
    const body = document.querySelector("#agent-performance tbody");
    const rows = [];
    for (const period of PERIODS) {
      const result = await C.api("GET", "/web-api/v1/public/agents/" + encodeURIComponent(agentId) + "/performance?period=" + period);
      if (result.status !== 200) { rows.push(C.el("tr", {}, [C.el("td", { colspan: "6", text: C.human(result).text })])); break; }
      const m = result.body.data.metrics;
      rows.push(C.el("tr", {}, [
        C.el("td", { text: period }),
        C.el("td", { class: "num", text: C.usdc(m.totalPnl) }),
        C.el("td", { class: "num", text: C.pct(m.totalPnlPercent) }),
        C.el("td", { class: "num", text: (m.winRate * 100).toFixed(0) + " %" }),
        C.el("td", { class: "num", text: String(m.totalTrades) }),
        C.el("td", { class: "num", text: C.usdc(m.avgTradeSize) }),
      ]));
    }
    body.replaceChildren.apply(body, rows);
  }

  async function refreshAgent(agentId) {
    const result = await C.api("GET", "/web-api/v1/public/agents/" + encodeURIComponent(agentId));
    if (result.status !== 200) {
      const loading = document.getElementById("agent-loading");
      loading.hidden = false;
      loading.textContent = C.human(result).text;
      return;
    }
    if (samples.times.length === 0 && !equityLoaded) { equityLoaded = true; await loadEquityHistory(agentId); }
    renderAgent(result.body.data);
    loadTrades(agentId, false);
    loadDecisions(agentId, false);
    if (Date.now() - lastPerformance > 10000) {
      lastPerformance = Date.now();
      loadPerformance(agentId);
    }
  }

  async function control(agentId, action) {
    const region = document.getElementById("agent-action-status");
    C.say(region, action === "start" ? "Starting…" : "Stopping…");
    const result = await C.api("POST", "/web-api/v1/public/agents/" + encodeURIComponent(agentId) + "/" + action);
    if (result.status === 200) {
      C.say(region, action === "start" ? "Started." : "Stopped.", "ok");
      lastPerformance = 0;
      refreshAgent(agentId);
    } else {
      C.say(region, C.human(result).text, "error");
    }
  }

  async function fund(agentId) {
    const region = document.getElementById("agent-action-status");
    const wallet = document.getElementById("agent-wallet").textContent;
    C.say(region, "Asking simnet for an airdrop…");
    // Simnet's faucet: 0.05 SOL for fees and 100 USDC.
    const response = await fetch("/simnet/rpc", {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "requestAirdrop", params: [wallet, 50000000, { stablecoinAmount: 100000000 }] }),
    }).catch(function () { return null; });
    const reply = response ? await response.json().catch(function () { return null; }) : null;
    if (reply && reply.result !== undefined && !reply.error) C.say(region, "Funded on simnet: 0.05 SOL and 100 USDC.", "ok");
    else C.say(region, "Simnet refused the airdrop: " + (reply && reply.error ? reply.error.message : "no answer"), "error");
    refreshAgent(agentId);
  }

  // ---- webhook deliveries ----
  async function loadDeliveries() {
    const holder = document.getElementById("deliveries");
    if (!holder) return;
    const result = await C.api("GET", "/web-api/v1/webhooks/deliveries");
    if (result.status !== 200) { holder.replaceChildren(C.el("p", { class: "error", text: C.human(result).text })); return; }
    const list = result.body.data || [];
    if (list.length === 0) { holder.replaceChildren(C.el("p", { class: "empty", text: "No delivery yet: mint a key with a webhook URL, then start an agent." })); return; }
    const head = C.el("thead", {}, [C.el("tr", {}, ["Event", "URL", "Status", "Attempts", "Last code", "Last error", "When"].map(function (h) { return C.el("th", { text: h }); }))]);
    const rows = list.map(function (d) {
      return C.el("tr", {}, [
        C.el("td", { text: d.event }), C.el("td", { text: d.url }), C.el("td", {}, [badge(d.status)]),
        C.el("td", { class: "num", text: String(d.attempts) }),
        C.el("td", { text: d.lastStatusCode === null ? "—" : String(d.lastStatusCode) }),
        C.el("td", { text: d.lastError ? d.lastError + (d.errorCategory ? " (" + d.errorCategory + ")" : "") : "—" }),
        C.el("td", { text: C.when(d.lastAttemptAt || d.createdAt) }),
      ]);
    });
    holder.replaceChildren(C.el("div", { class: "scroll" }, [C.el("table", {}, [head, C.el("tbody", {}, rows)])]));
  }

  document.addEventListener("DOMContentLoaded", function () {
    const agentNode = document.getElementById("agent");
    if (agentNode) {
      const agentId = agentNode.dataset.agent;
      document.getElementById("agent-start").addEventListener("click", function () { control(agentId, "start"); });
      document.getElementById("agent-stop").addEventListener("click", function () { control(agentId, "stop"); });
      const fundButton = document.getElementById("agent-fund");
      if (fundButton && config().simnet) fundButton.addEventListener("click", function () { fund(agentId); });
      const moreTrades = document.getElementById("agent-more-trades");
      if (moreTrades) moreTrades.addEventListener("click", function () { loadTrades(agentId, true); });
      const moreDecisions = document.getElementById("agent-more-decisions");
      if (moreDecisions) moreDecisions.addEventListener("click", function () { loadDecisions(agentId, true); });
      refreshAgent(agentId);
      setInterval(function () { refreshAgent(agentId); }, 2000);
      return;
    }
    if (document.getElementById("deliveries")) {
      loadDeliveries();
      setInterval(loadDeliveries, 10000);
      return;
    }
    const uploadForm = document.getElementById("upload-strategy");
    if (uploadForm) uploadForm.addEventListener("submit", upload);
    for (const id of ["agent-class", "agent-strategy"]) {
      const select = document.getElementById(id);
      if (select) select.addEventListener("change", loadParams);
    }
    loadParams();
    loadList();
  });
})();

// A tournament's page (and the home page's live board): the leaderboard kept live over the
// API's SSE stream, the agents' latest trades polled every few seconds, the performance chart
// (uPlot) with a wallet picker, the payment details and Solana Pay QR code for an entry, and the
// registration form that follows 202 (payment not final yet) until 201.
"use strict";

(function () {
  const C = window.Crucible;

  function island(id) {
    const node = document.getElementById(id);
    try { return node ? JSON.parse(node.textContent) : null; } catch (_) { return null; }
  }

  // A private tournament's invite code (from the page's ?invite=), added to every API call.
  const invite = (island("tournament-data") || {}).invite || "";
  function withInvite(path) {
    if (!invite) return path;
    return path + (path.indexOf("?") < 0 ? "?" : "&") + "inviteCode=" + encodeURIComponent(invite);
  }

  function renderBoard(board) {
    const table = document.getElementById("board");
    if (!table) return;
    const ended = table.dataset.ended === "true";
    const body = table.tBodies[0];
    // The home page shows only the top of the board.
    const limit = (island("tournament-data") || {}).boardRows || Infinity;
    const rows = (board.entries || []).slice(0, limit).map(function (row) {
      const cells = [
        C.el("td", { class: "num", text: String(row.finalRank || row.rank) }),
        C.el("td", {}, [C.el("code", { title: row.wallet, text: C.shortText(row.wallet) }),
          row.displayName ? " " + row.displayName : null]),
        C.el("td", { class: "num", text: C.usdc(row.currentValue) }),
        C.el("td", { class: "num", text: C.usdc(row.pnl) }),
        C.el("td", { class: "num", text: C.pct(row.pnlPercent) }),
      ];
      if (ended) {
        const prize = C.el("td", { class: "num", text: C.usdc(row.prizeAwarded) });
        if (row.prizeTxSignature) {
          const info = island("tournament-data") || {};
          prize.append(C.el("br"), info.simnet
            ? C.el("code", { title: row.prizeTxSignature, text: C.shortText(row.prizeTxSignature) })
            : C.el("a", { href: "https://explorer.solana.com/tx/" + encodeURIComponent(row.prizeTxSignature), rel: "noopener", text: C.shortText(row.prizeTxSignature) }));
        }
        cells.push(prize);
      }
      return C.el("tr", {}, cells);
    });
    if (rows.length === 0) rows.push(C.el("tr", {}, [C.el("td", { colspan: "6", text: "No wallet registered yet." })]));
    body.replaceChildren.apply(body, rows);
    const seats = document.getElementById("seats");
    if (seats && typeof board.totalEntries === "number") {
      seats.textContent = board.totalEntries + " / " + seats.textContent.split("/").pop().trim();
    }
    const state = document.getElementById("board-state");
    if (state) {
      state.textContent = (board.stale ? "The newest valuation is more than 2 hours old. " : "") +
        "Updated " + new Date().toLocaleTimeString() + ".";
    }
    addWallets((board.entries || []).map(function (row) { return row.wallet; }));
  }

  function follow(id) {
    if (!window.EventSource) return;
    const source = new EventSource(withInvite("/api/tournaments/" + encodeURIComponent(id) + "/live"));
    source.addEventListener("leaderboard:update", function (event) {
      try { renderBoard(JSON.parse(event.data)); } catch (_) { /* a malformed frame: keep the last board */ }
    });
    source.addEventListener("tournament:ended", function () {
      source.close();
      const state = document.getElementById("board-state");
      if (state) state.textContent = "The tournament has ended: showing the final standings…";
      setTimeout(function () { location.reload(); }, 1500);
    });
  }

  // ---- latest trades ----
  function tradeRow(trade, simnet) {
    const signature = trade.txSignature;
    const link = simnet
      ? C.el("code", { title: signature, text: C.shortText(signature) })
      : C.el("a", { href: "https://explorer.solana.com/tx/" + encodeURIComponent(signature), rel: "noopener", text: C.shortText(signature) });
    return C.el("tr", {}, [
      C.el("td", { text: C.when(trade.executedAt) }),
      C.el("td", {}, [trade.agentName + " ", C.el("span", { class: "muted", text: "(" + trade.agentClass + ")" })]),
      C.el("td", {}, [C.el("span", { class: "badge " + trade.side, text: trade.side })]),
      C.el("td", { class: "num", text: trade.baseAmount.toFixed(4) + " " + trade.baseToken }),
      C.el("td", { class: "num", text: trade.price.toFixed(2) }),
      C.el("td", { class: "num", text: C.usdc(trade.notional) }),
      C.el("td", { text: trade.reason || "—" }),
      C.el("td", {}, [link]),
    ]);
  }

  function followTrades(info) {
    const table = document.getElementById("live-trades");
    if (!table) return;
    let newest = null;
    async function refresh() {
      const result = await C.api("GET", withInvite("/api/tournaments/" + encodeURIComponent(info.id) + "/trades?limit=10"));
      if (result.status !== 200) return;
      const trades = result.body.trades || [];
      if (trades.length === 0 || trades[0].tradeId === newest) return;
      newest = trades[0].tradeId;
      const body = table.tBodies[0];
      body.replaceChildren.apply(body, trades.map(function (trade) { return tradeRow(trade, info.simnet); }));
    }
    setInterval(refresh, 5000);
  }

  // ---- chart ----
  let chart = null;
  const known = new Set();

  function addWallets(wallets) {
    const select = document.getElementById("chart-wallet");
    if (!select) return;
    for (const wallet of wallets) {
      if (known.has(wallet)) continue;
      known.add(wallet);
      select.append(C.el("option", { value: wallet, text: C.shortText(wallet) }));
    }
  }

  function draw(performance) {
    const holder = document.getElementById("chart");
    if (!holder || !window.uPlot) return;
    const series = (performance && performance.series) || [];
    addWallets(series.map(function (s) { return s.wallet; }));
    if (chart) { chart.destroy(); chart = null; }
    holder.replaceChildren();
    const times = Array.from(new Set(series.flatMap(function (s) {
      return s.points.map(function (p) { return Date.parse(p.at) / 1000; });
    }))).sort(function (a, b) { return a - b; });
    if (times.length < 2) {
      holder.append(C.el("p", { class: "empty", text: "Not enough valuations yet to draw a chart." }));
      return;
    }
    const data = [times].concat(series.map(function (s) {
      const byTime = new Map(s.points.map(function (p) { return [Date.parse(p.at) / 1000, p.valueUsd]; }));
      return times.map(function (t) { return byTime.has(t) ? byTime.get(t) : null; });
    }));
    const palette = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777", "#4b5563", "#65a30d"];
    const options = {
      width: Math.min(holder.clientWidth || 640, 900),
      height: 280,
      series: [{}].concat(series.map(function (s, i) {
        return { label: "#" + s.rank + " " + C.shortText(s.wallet), stroke: palette[i % palette.length], width: 2, spanGaps: true };
      })),
      axes: [{}, { label: "USD" }],
    };
    chart = new window.uPlot(options, data, holder);
  }

  async function pick(id, wallet) {
    const path = "/api/tournaments/" + encodeURIComponent(id) + "/performance" +
      (wallet ? "?wallet=" + encodeURIComponent(wallet) : "");
    const result = await C.api("GET", withInvite(path));
    if (result.status === 200) draw(result.body);
    else {
      const holder = document.getElementById("chart");
      holder.replaceChildren(C.el("p", { class: "error", text: C.human(result).text }));
    }
  }

  // ---- entering ----
  function wallets(text) {
    return text.split(/[\s,]+/).map(function (w) { return w.trim(); }).filter(Boolean);
  }

  async function showPayment(event, info) {
    event.preventDefault();
    const form = event.currentTarget;
    const list = wallets(form.elements.wallets.value);
    const path = "/api/tournaments/" + encodeURIComponent(info.id) + "/registration-memo?wallets=" +
      encodeURIComponent(list.join(","));
    const result = await C.api("GET", withInvite(path));
    const box = document.getElementById("payment");
    C.clearFieldErrors(form);
    if (result.status !== 200) {
      C.showFieldError(form, "wallets", C.human(result).text);
      box.hidden = true;
      return;
    }
    const memo = result.body;
    document.getElementById("pay-amount").textContent = memo.amountUi + " USDC (" + memo.amountRaw + " raw units)";
    document.getElementById("pay-recipient").textContent = memo.escrowWalletAddress;
    document.getElementById("pay-memo").textContent = memo.memo;
    const url = "solana:" + memo.escrowWalletAddress + "?amount=" + memo.amountUi +
      "&spl-token=" + encodeURIComponent(info.mint) + "&memo=" + encodeURIComponent(memo.memo) +
      "&label=" + encodeURIComponent("Crucible tournament " + info.id);
    const link = document.getElementById("pay-url");
    link.href = url;
    link.title = url;
    document.getElementById("pay-qr").src = "/tournaments/" + encodeURIComponent(info.id) +
      "/pay.svg?wallets=" + encodeURIComponent(list.join(",")) +
      (invite ? "&invite=" + encodeURIComponent(invite) : "");
    const registerWallets = document.getElementById("reg-wallets");
    if (registerWallets && !registerWallets.value) registerWallets.value = list.join(", ");
    box.hidden = false;
  }

  async function register(event, info) {
    event.preventDefault();
    const form = event.currentTarget;
    const region = document.getElementById("register-status");
    const button = form.querySelector('button[type="submit"]');
    const list = wallets(form.elements.wallets.value);
    const body = list.length === 1 ? { registeredWallet: list[0] } : { registeredWallets: list };
    if (form.dataset.paid === "true") {
      body.payerWallet = form.elements.payerWallet.value.trim();
      body.txSignature = form.elements.txSignature.value.trim();
    } else {
      body.txSignature = null;
    }
    if (invite) body.inviteCode = invite;
    C.clearFieldErrors(form);
    button.disabled = true;
    const path = "/web-api/tournaments/" + encodeURIComponent(info.id) + "/register";
    // 202: the payment is not final (or not seen) yet; the API asks for the same request again.
    for (let attempt = 1; attempt <= 40; attempt++) {
      C.say(region, attempt === 1 ? "Checking the payment…" : "Payment pending: waiting for it to be final (check " + attempt + ")…");
      const result = await C.api("POST", path, body);
      if (result.status === 201) {
        C.say(region, "Registered " + result.body.count + " wallet(s).", "ok");
        button.disabled = false;
        return;
      }
      if (result.status !== 202) {
        C.say(region, C.human(result).text, "error");
        button.disabled = false;
        return;
      }
      C.say(region, "Payment pending: " + (result.body.message || "not final yet") + ".", "pending");
      await new Promise(function (resolve) { setTimeout(resolve, 3000); });
    }
    C.say(region, "The payment is still not final; send the form again in a minute.", "error");
    button.disabled = false;
  }

  document.addEventListener("DOMContentLoaded", function () {
    const info = island("tournament-data");
    if (!info) return;
    draw(island("performance-data"));
    const select = document.getElementById("chart-wallet");
    if (select) select.addEventListener("change", function () { pick(info.id, select.value); });
    if (info.status === "live" || info.status === "upcoming") follow(info.id);
    if (info.status === "live") followTrades(info);
    const memoForm = document.getElementById("memo-form");
    if (memoForm) memoForm.addEventListener("submit", function (event) { showPayment(event, info); });
    const registerForm = document.getElementById("register-form");
    if (registerForm) registerForm.addEventListener("submit", function (event) { register(event, info); });
  });
})();

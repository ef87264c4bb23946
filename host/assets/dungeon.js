// A dungeon run's page: step through a finished run turn by turn from its stored events, and
// follow a run being played by reading the public run page again every second (the watch
// stream needs the run's own key, which a spectator does not have).
"use strict";

(function () {
  const C = window.Crucible;
  let run = null;
  let frame = 0;
  let timer = null;

  function turns() {
    return (run.events || []).filter(function (e) { return e.event === "run:turn"; });
  }

  function stateAt(index) {
    const list = turns();
    if (list.length === 0) return run.state;
    return list[Math.max(0, Math.min(index, list.length - 1))].data.state || run.state;
  }

  function describe(event) {
    const d = event.data || {};
    if (event.event === "run:turn") {
      let line = "Turn " + d.turnNumber + ": " + d.action + (d.target ? " → " + d.target : "");
      if (d.legal === false) line += " (refused: " + (d.reason || "illegal") + ")";
      const happened = (d.events || []).map(function (x) { return typeof x === "string" ? x : (x.message || x.description || x.type || x.kind || "event"); });
      if (happened.length) line += " — " + happened.join("; ");
      return line;
    }
    if (event.event === "run:broadcast") return "Broadcast: “" + d.message + "”";
    if (event.event === "run:ended") return "Ended: " + d.status + ", score " + d.score + ", deepest floor " + d.deepestFloor;
    return event.event;
  }

  function bar(label, value, max) {
    const meter = C.el("meter", { min: "0", max: String(max || 1), value: String(value || 0) });
    return C.el("div", { class: "bar" }, [C.el("span", { text: label + " " + value + " / " + max + " " }), meter]);
  }

  function render() {
    const list = turns();
    const slider = document.getElementById("replay-turn");
    slider.max = String(Math.max(0, list.length - 1));
    slider.value = String(frame);
    document.getElementById("replay-label").textContent = (list.length ? frame + 1 : 0) + " / " + list.length;
    const state = stateAt(frame) || {};
    const room = state.room || {};
    const player = state.player || {};
    const view = document.getElementById("run-view");
    const parts = [
      C.el("h3", { text: "Floor " + room.floor + " · " + (room.name || "") }),
      C.el("p", { text: room.description || "" }),
      bar("HP", player.hp, player.maxHp),
      bar("AP", player.ap, player.maxAp),
      C.el("p", { text: "Level " + player.level + " · score " + state.score + " · turn " + state.turnNumber + " · " + state.status }),
      (room.enemies && room.enemies.length) ? C.el("p", { text: "Enemies: " + room.enemies.map(function (e) { return e.name + " (HP " + e.hp + ")"; }).join(", ") }) : null,
      (room.exits && room.exits.length) ? C.el("p", { text: "Exits: " + room.exits.map(function (x) { return x.direction + (x.visited ? " (visited)" : ""); }).join(", ") }) : null,
    ];
    view.replaceChildren.apply(view, parts.filter(Boolean));
    // Events up to this turn (broadcasts in between included), newest first.
    const cutoff = list.length ? list[frame].seq : Infinity;
    const shown = (run.events || []).filter(function (e) { return e.seq <= cutoff || frame === list.length - 1; });
    const ol = document.getElementById("run-events");
    ol.replaceChildren.apply(ol, shown.slice().reverse().map(function (e) { return C.el("li", { text: describe(e) }); }));
    for (const [id, value] of [["run-status", run.status], ["run-score", run.score], ["run-floor", run.deepestFloor], ["run-turns", run.turnNumber]]) {
      const node = document.getElementById(id);
      if (node) node.textContent = String(value);
    }
  }

  function go(index) {
    frame = Math.max(0, Math.min(index, turns().length - 1));
    render();
  }

  async function followLive() {
    const result = await C.api("GET", "/api/dungeons/runs/" + encodeURIComponent(run.runId) + "?limit=1000");
    if (result.status !== 200) return;
    const atEnd = frame >= turns().length - 1;
    run = result.body;
    if (atEnd) frame = Math.max(0, turns().length - 1);
    render();
    if (run.status !== "active") {
      clearInterval(timer);
      document.getElementById("run-follow").textContent = "The run has ended (" + run.status + "): step through it turn by turn.";
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    const node = document.getElementById("run-data");
    try { run = JSON.parse(node.textContent); } catch (_) { return; }
    frame = Math.max(0, turns().length - 1);
    document.getElementById("replay-first").addEventListener("click", function () { go(0); });
    document.getElementById("replay-prev").addEventListener("click", function () { go(frame - 1); });
    document.getElementById("replay-next").addEventListener("click", function () { go(frame + 1); });
    document.getElementById("replay-last").addEventListener("click", function () { go(turns().length - 1); });
    document.getElementById("replay-turn").addEventListener("input", function (e) { go(Number(e.target.value)); });
    let playing = null;
    document.getElementById("replay-play").addEventListener("click", function (e) {
      if (playing) { clearInterval(playing); playing = null; e.target.textContent = "Play"; return; }
      if (frame >= turns().length - 1) go(0);
      e.target.textContent = "Pause";
      playing = setInterval(function () {
        if (frame >= turns().length - 1) { clearInterval(playing); playing = null; e.target.textContent = "Play"; return; }
        go(frame + 1);
      }, 600);
    });
    render();
    if (run.status === "active") timer = setInterval(followLive, 1000);
  });
})();

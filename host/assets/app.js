// Crucible web app: what every page shares. Forms marked `data-api="METHOD /path"` are sent
// as JSON to the API (cookie-authenticated writes through /web-api with the page's CSRF token;
// the agents pages too, acting for the session: no page holds a key), and the API's answer is
// shown in words: a v1 validation error beside its field, any other error in the form's status
// line.
"use strict";

(function () {
  function csrfToken() {
    const meta = document.querySelector('meta[name="csrf-token"]');
    return meta ? meta.content : "";
  }

  // One API call. `opts.raw` sends a body as is.
  async function api(method, path, body, opts) {
    opts = opts || {};
    const headers = { "accept": "application/json" };
    if (path.startsWith("/web-api/")) headers["x-csrf-token"] = csrfToken();
    let payload;
    if (opts.raw !== undefined) {
      payload = opts.raw;
      headers["content-type"] = opts.contentType || "application/octet-stream";
    } else if (body !== undefined && body !== null) {
      payload = JSON.stringify(body);
      headers["content-type"] = "application/json";
    } else if (method !== "GET" && method !== "DELETE") {
      // The agents API reads an empty JSON body on start/stop; an absent body is fine too.
      payload = undefined;
    }
    let response;
    try {
      response = await fetch(path, { method, headers, body: payload, credentials: "same-origin" });
    } catch (error) {
      return { status: 0, body: { error: "the server could not be reached: check your connection and try again" } };
    }
    const text = await response.text();
    let parsed = null;
    try { parsed = text ? JSON.parse(text) : null; } catch (_) { parsed = { error: text }; }
    return { status: response.status, body: parsed };
  }

  // The API's error in words a person understands.
  function human(result) {
    const body = result.body || {};
    let message = "";
    let field = null;
    if (typeof body.error === "string") message = body.error;
    else if (body.error && typeof body.error === "object") {
      message = body.error.message || body.error.code || "";
      field = body.error.details && body.error.details.field;
    }
    const lead = {
      0: "No connection.",
      400: "Please check the form:",
      401: "You are not signed in, or your key is not valid (any more).",
      402: "Not enough funds:",
      403: "Not allowed:",
      404: "Not found:",
      409: "Already done:",
      410: "Closed:",
      422: "That did not check out:",
      429: "Too many requests; wait a moment:",
      503: "The service is busy or unreachable; try again shortly:",
    }[result.status] || ("The server answered " + result.status + ":");
    if (result.status === 401 && !message) message = "";
    return { text: (lead + " " + message).trim(), field };
  }

  function say(region, text, kind) {
    if (!region) return;
    region.textContent = text;
    region.className = "status" + (kind ? " " + kind : "");
  }

  function setPath(target, dotted, value) {
    const parts = dotted.split(".");
    let node = target;
    for (let i = 0; i < parts.length - 1; i++) {
      node[parts[i]] = node[parts[i]] || {};
      node = node[parts[i]];
    }
    node[parts[parts.length - 1]] = value;
  }

  // A form's fields as the API's JSON body (see data-type in docs/web.md).
  function formBody(form) {
    const body = {};
    const lists = {};
    for (const element of form.elements) {
      if (!element.name || element.type === "submit" || element.type === "button" || element.type === "file") continue;
      const type = element.dataset.type || "";
      if (type === "list") {
        lists[element.name] = lists[element.name] || [];
        if (element.checked) lists[element.name].push(element.value);
        continue;
      }
      if (type === "bool") { setPath(body, element.name, element.checked); continue; }
      const value = element.value;
      if (type === "number") { if (value !== "") setPath(body, element.name, Number(value)); continue; }
      if (type === "optional") { if (value !== "") setPath(body, element.name, value); continue; }
      if (type === "nullable") { setPath(body, element.name, value === "" ? null : value); continue; }
      setPath(body, element.name, value);
    }
    for (const name in lists) setPath(body, name, lists[name]);
    return body;
  }

  function clearFieldErrors(form) {
    for (const old of form.querySelectorAll(".field-error")) old.remove();
    for (const bad of form.querySelectorAll("[aria-invalid]")) bad.removeAttribute("aria-invalid");
  }

  // Show `text` beside the field the API named; false when the form has no such field.
  function showFieldError(form, field, text) {
    if (!field) return false;
    const target = form.querySelector('[name="' + CSS.escape(field) + '"]') ||
      form.querySelector('[data-field="' + CSS.escape(field) + '"]') ||
      form.querySelector('[name^="' + CSS.escape(field + ".") + '"]');
    if (!target) return false;
    const note = document.createElement("p");
    note.className = "field-error";
    note.id = "error-" + field.replace(/[^a-zA-Z0-9]/g, "-");
    note.textContent = text;
    target.setAttribute("aria-invalid", "true");
    target.setAttribute("aria-describedby", note.id);
    const holder = target.closest(".field, fieldset") || target.parentElement;
    holder.appendChild(note);
    target.focus();
    return true;
  }

  function showSecret(created) {
    const data = created.data || created;
    const box = document.getElementById("secret-box");
    if (!box) return;
    document.getElementById("secret-key").textContent = data.key || "";
    const webhookRow = document.getElementById("secret-webhook-row");
    if (data.webhookSecret) {
      document.getElementById("secret-webhook").textContent = data.webhookSecret;
      webhookRow.hidden = false;
    } else {
      webhookRow.hidden = true;
    }
    box.hidden = false;
    box.scrollIntoView();
    box.focus();
  }

  async function submitForm(event) {
    const form = event.currentTarget;
    event.preventDefault();
    const [method, template] = form.dataset.api.split(" ");
    // `{name}` in the path is filled from the form's field of that name (e.g. a hash to ban).
    const body = formBody(form);
    const path = template.replace(/\{(\w+)\}/g, function (_, name) {
      const value = body[name];
      delete body[name];
      return encodeURIComponent(value === undefined || value === null ? "" : String(value).trim());
    });
    const region = form.querySelector(".status");
    const button = form.querySelector('button[type="submit"]');
    clearFieldErrors(form);
    say(region, "Sending…");
    if (button) button.disabled = true;
    if (form.dataset.confirm && !window.confirm(form.dataset.confirm)) { if (button) button.disabled = false; say(region, ""); return; }
    const result = await api(method, path, body);
    if (button) button.disabled = false;
    if (result.status >= 200 && result.status < 300) {
      say(region, "Done.", "ok");
      if (form.dataset.show === "secret") { form.reset(); showSecret(result.body); return; }
      if (form.dataset.nextAgent && result.body && result.body.data) {
        location.assign("/agents/" + encodeURIComponent(result.body.data.agentId));
        return;
      }
      if (form.dataset.next) { location.assign(form.dataset.next); return; }
      location.reload();
      return;
    }
    const problem = human(result);
    if (!showFieldError(form, problem.field, problem.text)) say(region, problem.text, "error");
    else say(region, "Please correct the field marked below.", "error");
  }

  async function revoke(event) {
    const button = event.currentTarget;
    const name = button.dataset.name || "this key";
    if (!window.confirm("Revoke " + name + "? Anything using it stops working at once. This cannot be undone.")) return;
    const result = await api("DELETE", button.dataset.revoke);
    const region = document.getElementById("revoke-status");
    if (result.status >= 200 && result.status < 300) { location.reload(); return; }
    say(region, human(result).text, "error");
  }

  async function copy(event) {
    const source = document.getElementById(event.currentTarget.dataset.copy);
    const text = source ? source.textContent : "";
    try {
      await navigator.clipboard.writeText(text);
      event.currentTarget.textContent = "Copied";
    } catch (_) {
      const range = document.createRange();
      range.selectNodeContents(source);
      const selection = getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      event.currentTarget.textContent = "Selected: press Ctrl+C";
    }
  }

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const name in attrs || {}) {
      if (name === "text") node.textContent = attrs[name];
      else if (name === "class") node.className = attrs[name];
      else node.setAttribute(name, attrs[name]);
    }
    for (const child of children || []) if (child) node.append(child);
    return node;
  }

  function usdc(value) {
    if (value === null || value === undefined || isNaN(value)) return "—";
    const abs = Math.abs(value);
    return (abs !== 0 && abs < 0.01 ? value.toFixed(6) : value.toFixed(2)) + " USDC";
  }

  function pct(value) {
    if (value === null || value === undefined || isNaN(value)) return "—";
    return (value >= 0 ? "+" : "") + value.toFixed(2) + " %";
  }

  function shortText(text) {
    if (!text) return "—";
    return text.length > 12 ? text.slice(0, 4) + "…" + text.slice(-4) : text;
  }

  function when(iso) {
    return iso ? iso.slice(0, 16).replace("T", " ") + " UTC" : "—";
  }

  window.Crucible = { api, human, say, el, usdc, pct, shortText, when, formBody, showFieldError, clearFieldErrors };

  document.addEventListener("DOMContentLoaded", function () {
    for (const form of document.querySelectorAll("form[data-api]")) form.addEventListener("submit", submitForm);
    for (const button of document.querySelectorAll("[data-revoke]")) button.addEventListener("click", revoke);
    for (const button of document.querySelectorAll("[data-copy]")) button.addEventListener("click", copy);
  });
})();

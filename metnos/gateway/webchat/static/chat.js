// Metnos web chat: plain JavaScript, no build step. The page holds no token: the browser
// sends the HttpOnly session cookie; every request is same-origin.
"use strict";

(() => {
  const S = JSON.parse(document.getElementById("metnos-strings").textContent);
  const $ = (id) => document.getElementById(id);
  const messages = $("messages");
  const statusLine = $("status");
  const form = $("composer");
  const input = $("text");
  const SESSION_KEY = "metnos.session";
  let sessionId = sessionStorage.getItem(SESSION_KEY) || null;

  function fill(template, vars) {
    return template.replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
  }

  function showSession() {
    $("session-line").textContent = sessionId ? fill(S.session, { id: sessionId.slice(0, 8) }) : "";
  }

  function bubble(who, text) {
    const item = document.createElement("li");
    item.className = "msg " + who;
    const label = document.createElement("span");
    label.className = "who";
    label.textContent = who === "me" ? S.you : S.metnos;
    const body = document.createElement("div");
    body.className = "text";
    body.textContent = text;
    item.append(label, body);
    messages.append(item);
    item.scrollIntoView({ block: "end" });
    return item;
  }

  function setStatus(text) {
    statusLine.textContent = text || "";
  }

  async function api(method, path, body) {
    const response = await fetch(path, {
      method,
      credentials: "same-origin",
      headers: body ? { "Content-Type": "application/json", "Accept-Language": S.locale } : { "Accept-Language": S.locale },
      body: body ? JSON.stringify(body) : undefined,
    });
    let data = null;
    try { data = await response.json(); } catch (e) { data = null; }
    if (!response.ok) {
      const message = data && data.error ? data.error.message : fill(S.httpError, { status: response.status });
      throw new Error(message);
    }
    return data;
  }

  function approvalCard(approval) {
    const item = document.createElement("li");
    item.className = "msg card";
    item.dataset.approval = approval.approval_id;
    const title = document.createElement("p");
    title.className = "card-title";
    title.textContent = fill(S.approvalTitle, { executor: approval.executor });
    item.append(title);
    if (approval.why) {
      const why = document.createElement("p");
      why.className = "card-why";
      why.textContent = approval.why;
      item.append(why);
    }
    const args = document.createElement("pre");
    args.textContent = JSON.stringify(approval.args, null, 2);
    item.append(args);
    // files: {path: fingerprint of its content now, or null when it does not exist yet}
    const paths = approval.files ? Object.keys(approval.files) : [];
    if (paths.length) {
      const files = document.createElement("ul");
      files.className = "files";
      files.setAttribute("aria-label", S.files);
      for (const path of paths) {
        const li = document.createElement("li");
        li.textContent = fill(approval.files[path] ? S.fileExists : S.fileNew, { path });
        files.append(li);
      }
      item.append(files);
    }
    const buttons = document.createElement("div");
    buttons.className = "buttons";
    for (const [decision, label] of [["approve", S.approve], ["deny", S.deny]]) {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = label;
      button.className = decision;
      button.addEventListener("click", () => decide(item, approval.approval_id, decision));
      buttons.append(button);
    }
    item.append(buttons);
    messages.append(item);
    item.scrollIntoView({ block: "end" });
  }

  async function decide(card, approvalId, decision) {
    for (const b of card.querySelectorAll("button")) b.disabled = true;
    try {
      await api("POST", `/api/approvals/${encodeURIComponent(approvalId)}`, { decision });
      const done = document.createElement("p");
      done.className = "card-outcome";
      done.textContent = decision === "approve" ? S.approved : S.denied;
      card.append(done);
      setStatus(S.working);
    } catch (error) {
      for (const b of card.querySelectorAll("button")) b.disabled = false;
      bubble("error", error.message);
    }
  }

  function follow(turnId, seen) {
    // Server-sent events of the turn: status lines, approval cards, the reply.
    const source = new EventSource(`/api/turns/${encodeURIComponent(turnId)}/events`);
    source.addEventListener("status", (e) => {
      const data = JSON.parse(e.data);
      setStatus(S.status[data.status] || "");
    });
    source.addEventListener("step", (e) => {
      const data = JSON.parse(e.data);
      if (data.state === "started") setStatus(fill(S.using, { executor: data.executor }));
    });
    source.addEventListener("approval", (e) => {
      const data = JSON.parse(e.data);
      if (!seen.has(data.approval_id)) { seen.add(data.approval_id); approvalCard(data); }
      setStatus(S.status.awaiting_approval);
    });
    source.addEventListener("reply", (e) => {
      const data = JSON.parse(e.data);
      if (data.text && !seen.has("reply:" + data.text)) { seen.add("reply:" + data.text); bubble("metnos", data.text); }
    });
    source.addEventListener("end", () => { source.close(); setStatus(""); input.focus(); });
    source.onerror = () => { source.close(); setStatus(""); };
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    input.value = "";
    bubble("me", text);
    setStatus(S.status.planning);
    $("send").disabled = true;
    try {
      // answered at once: the progress, the approval cards and the reply come as events
      const turn = await api("POST", "/api/turns?wait=false",
                             { text, session_id: sessionId, lang: S.locale });
      sessionId = turn.session_id;
      sessionStorage.setItem(SESSION_KEY, sessionId);
      showSession();
      follow(turn.turn_id, new Set());
    } catch (error) {
      setStatus("");
      bubble("error", error.message);
    } finally {
      $("send").disabled = false;
    }
  });

  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); form.requestSubmit(); }
  });

  $("locale").addEventListener("change", async (event) => {
    // Only the chrome changes: a running session keeps its interaction language.
    try {
      await api("POST", "/api/ui-locale", { locale: event.target.value });
      window.location.reload();
    } catch (error) { bubble("error", error.message); }
  });

  $("new-session").addEventListener("click", () => {
    sessionId = null;
    sessionStorage.removeItem(SESSION_KEY);
    messages.replaceChildren();
    showSession();
    input.focus();
  });

  $("show-audit").addEventListener("click", async (event) => {
    const panel = $("audit");
    const open = panel.hidden;
    panel.hidden = !open;
    event.target.setAttribute("aria-expanded", String(open));
    if (!open) return;
    const list = $("audit-lines");
    list.replaceChildren();
    try {
      const query = sessionId ? `?limit=100&session_id=${encodeURIComponent(sessionId)}` : "?limit=100";
      for (const line of await api("GET", "/api/audit" + query)) {
        const li = document.createElement("li");
        li.textContent = [line.ts, line.action, line.decision, line.outcome].filter(Boolean).join(" · ");
        list.append(li);
      }
      if (!list.children.length) list.append(Object.assign(document.createElement("li"), { textContent: S.auditEmpty }));
    } catch (error) { bubble("error", error.message); }
  });

  async function showPairing() {
    // Who waits for a pairing code to be approved, and who is paired already.
    const data = await api("GET", "/api/pairing");
    const pending = $("pairing-pending");
    const paired = $("pairing-paired");
    pending.replaceChildren();
    paired.replaceChildren();
    for (const p of data.pending) {
      pending.append(Object.assign(document.createElement("li"),
        { textContent: fill(S.pairingWaiting, { channel: p.channel, sender: p.sender_id }) }));
    }
    for (const p of data.paired) {
      paired.append(Object.assign(document.createElement("li"),
        { textContent: fill(S.pairingMember, { channel: p.channel, sender: p.sender_id, role: p.role }) }));
    }
    if (!data.pending.length) pending.append(Object.assign(document.createElement("li"), { textContent: S.pairingNone }));
    if (!data.paired.length) paired.append(Object.assign(document.createElement("li"), { textContent: S.pairingNone }));
  }

  $("show-pairing").addEventListener("click", async (event) => {
    const panel = $("pairing");
    const open = panel.hidden;
    panel.hidden = !open;
    event.target.setAttribute("aria-expanded", String(open));
    if (!open) return;
    try { await showPairing(); $("pairing-code").focus(); } catch (error) { bubble("error", error.message); }
  });

  $("pairing-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const field = $("pairing-code");
    const result = $("pairing-result");
    try {
      const change = await api("POST", "/api/pairing/approve", { code: field.value.trim() });
      result.textContent = change.message;
      field.value = "";
      await showPairing();
    } catch (error) { result.textContent = error.message; }
  });

  $("logout").addEventListener("click", async () => {
    try { await api("POST", "/api/logout"); } catch (error) { /* already logged out */ }
    sessionStorage.removeItem(SESSION_KEY);
    window.location.reload();
  });

  showSession();
  input.focus();
})();

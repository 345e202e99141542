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
  const R = window.MetnosRender;
  const SESSION_KEY = "metnos.session";
  // the turn still running, {turn, session, text}: followed again after a reload (its messages
  // are stored when it ends)
  const TURN_KEY = "metnos.turn";
  const STREAM_RENDER_MS = 60;
  let sessionId = sessionStorage.getItem(SESSION_KEY) || null;
  let source = null; // the EventSource of the turn on screen
  let earlierBefore = null; // `before` for the older messages of the conversation on screen
  let sessionsOffset = 0;

  function fill(template, vars) {
    return template.replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
  }

  function showSession() {
    $("session-line").textContent = sessionId ? fill(S.session, { id: sessionId.slice(0, 8) }) : "";
  }

  // A message item: the user's text as typed, Metnos's as sanitised markdown.
  function makeBubble(who, text) {
    const item = document.createElement("li");
    item.className = "msg " + who;
    const label = document.createElement("span");
    label.className = "who";
    label.textContent = who === "me" ? S.you : S.metnos;
    const body = document.createElement("div");
    body.className = "text";
    if (who === "metnos") { body.classList.add("md"); R.markdown(body, text); }
    else body.textContent = text;
    item.append(label, body);
    return item;
  }

  function bubble(who, text) {
    const item = makeBubble(who, text);
    messages.append(item);
    item.scrollIntoView({ block: "end" });
    return item;
  }

  function addActivity(item, activity) {
    if (activity && activity.length) item.append(R.activity(activity, S.activity));
  }

  // A tool message: collapsed, its content as plain text (it is data, never markup).
  function makeToolItem(message) {
    const item = document.createElement("li");
    item.className = "msg tool";
    const details = document.createElement("details");
    const summary = document.createElement("summary");
    summary.textContent = fill(S.toolResult, { executor: message.name || "?" });
    const pre = document.createElement("pre");
    pre.textContent = message.content || "";
    details.append(summary, pre);
    item.append(details);
    return item;
  }

  // The stored messages as items, oldest first.
  function historyItems(list) {
    const fragment = document.createDocumentFragment();
    for (const m of list) {
      if (m.role === "user") fragment.append(makeBubble("me", m.content || ""));
      else if (m.role === "tool") fragment.append(makeToolItem(m));
      else if (m.role === "assistant" && (m.content || (m.activity && m.activity.length))) {
        const item = makeBubble("metnos", m.content || "");
        item.dataset.turn = m.turn_id || "";
        addActivity(item, m.activity);
        fragment.append(item);
      }
    }
    return fragment;
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
      throw Object.assign(new Error(message), { status: response.status });
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

  function closeStream() {
    if (source) { source.close(); source = null; }
  }

  function follow(turnId, seen) {
    // Server-sent events of the turn: status lines, approval cards, the text as it streams
    // (`delta`), then the reply that replaces it, with what ran beside it.
    closeStream();
    const events = new EventSource(`/api/turns/${encodeURIComponent(turnId)}/events`);
    source = events;
    let live = null; // the streaming bubble: {item, text}
    const settle = () => {
      // what streamed stays as it is (a step waits, or the turn ended without a reply)
      if (!live) return;
      live.text.finish(live.text.text);
      live.item.classList.remove("streaming");
      if (!live.text.text.trim()) live.item.remove();
      live = null;
    };
    const done = (ended) => {
      events.close();
      if (source === events) { source = null; setStatus(""); }
      // only its end forgets the turn: an error may be the page going away (a reload)
      const stored = JSON.parse(sessionStorage.getItem(TURN_KEY) || "null");
      if (ended && stored && stored.turn === turnId) sessionStorage.removeItem(TURN_KEY);
    };
    events.addEventListener("status", (e) => {
      const data = JSON.parse(e.data);
      setStatus(S.status[data.status] || "");
    });
    events.addEventListener("step", (e) => {
      const data = JSON.parse(e.data);
      if (data.state === "started") setStatus(fill(S.using, { executor: data.executor }));
    });
    events.addEventListener("approval", (e) => {
      const data = JSON.parse(e.data);
      settle();
      if (!seen.has(data.approval_id)) { seen.add(data.approval_id); approvalCard(data); }
      setStatus(S.status.awaiting_approval);
    });
    events.addEventListener("delta", (e) => {
      const data = JSON.parse(e.data);
      if (!live) {
        const item = bubble("metnos", "");
        item.classList.add("streaming");
        live = { item, text: R.streaming(item.querySelector(".text"), STREAM_RENDER_MS) };
      }
      live.text.add(String(data.text || ""), data.think);
      live.item.scrollIntoView({ block: "end" });
    });
    events.addEventListener("reply", (e) => {
      const data = JSON.parse(e.data);
      if (!data.text) { settle(); return; }
      if (seen.has("reply:" + data.text)) {
        if (live) { live.item.remove(); live = null; } // shown already, from the stored messages
        return;
      }
      seen.add("reply:" + data.text);
      let item = live ? live.item : null;
      if (live) { live.text.finish(data.text); item.classList.remove("streaming"); live = null; }
      else item = bubble("metnos", data.text);
      item.dataset.turn = turnId;
      addActivity(item, data.activity);
      item.scrollIntoView({ block: "end" });
    });
    events.addEventListener("end", () => { settle(); done(true); input.focus(); });
    events.onerror = () => done(false);
  }

  function showSummary(text) {
    $("summary").hidden = !text;
    $("summary-text").textContent = text || "";
  }

  // Show conversation `id` from its stored messages, and follow its turn if one still runs.
  async function openSession(id) {
    const page = await api("GET", `/api/sessions/${encodeURIComponent(id)}/messages?limit=100`);
    closeStream();
    sessionId = id;
    sessionStorage.setItem(SESSION_KEY, id);
    messages.replaceChildren(historyItems(page.messages));
    showSummary(page.summary);
    earlierBefore = page.next_before;
    $("earlier").hidden = earlierBefore === null;
    showSession();
    setStatus("");
    const last = messages.lastElementChild;
    if (last) last.scrollIntoView({ block: "end" });
    await resumeTurn(id, page.messages);
  }

  async function resumeTurn(id, shown) {
    const stored = JSON.parse(sessionStorage.getItem(TURN_KEY) || "null");
    if (!stored || stored.session !== id) return;
    const turn = await api("GET", `/api/turns/${encodeURIComponent(stored.turn)}`);
    if (turn.status !== "running" && turn.status !== "awaiting_approval") {
      sessionStorage.removeItem(TURN_KEY);
      return;
    }
    const own = shown.filter((m) => m.turn_id === stored.turn);
    if (!own.length && stored.text) bubble("me", stored.text);
    follow(stored.turn, new Set(own.filter((m) => m.role === "assistant").map((m) => "reply:" + m.content)));
  }

  $("earlier").addEventListener("click", async () => {
    if (earlierBefore === null || !sessionId) return;
    try {
      const page = await api("GET", `/api/sessions/${encodeURIComponent(sessionId)}/messages?limit=100&before=${earlierBefore}`);
      messages.prepend(historyItems(page.messages));
      earlierBefore = page.next_before;
      $("earlier").hidden = earlierBefore === null;
    } catch (error) { bubble("error", error.message); }
  });

  function sessionItem(s) {
    const li = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "secondary session";
    button.dataset.session = s.session_id;
    if (s.session_id === sessionId) button.setAttribute("aria-current", "true");
    const title = document.createElement("span");
    title.className = "session-title";
    title.textContent = s.title || fill(S.session, { id: s.session_id.slice(0, 8) });
    const when = document.createElement("span");
    when.className = "muted session-when";
    when.textContent = new Date(s.updated_at).toLocaleString(S.locale);
    button.append(title, when);
    button.addEventListener("click", async () => {
      try { await openSession(s.session_id); toggleSessions(false); input.focus(); }
      catch (error) { bubble("error", error.message); }
    });
    li.append(button);
    return li;
  }

  async function loadSessions(reset) {
    const list = $("session-list");
    if (reset) { list.replaceChildren(); sessionsOffset = 0; }
    const page = await api("GET", `/api/sessions?limit=20&offset=${sessionsOffset}`);
    for (const s of page.sessions) list.append(sessionItem(s));
    if (!list.children.length) list.append(Object.assign(document.createElement("li"), { textContent: S.sessionsEmpty }));
    sessionsOffset = page.next_offset === null ? sessionsOffset : page.next_offset;
    $("sessions-more").hidden = page.next_offset === null;
  }

  function toggleSessions(open) {
    $("sessions").hidden = !open;
    $("show-sessions").setAttribute("aria-expanded", String(open));
  }

  $("show-sessions").addEventListener("click", async () => {
    const open = $("sessions").hidden;
    toggleSessions(open);
    if (!open) return;
    try { await loadSessions(true); } catch (error) { bubble("error", error.message); }
  });

  $("sessions-more").addEventListener("click", async () => {
    try { await loadSessions(false); } catch (error) { bubble("error", error.message); }
  });

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
      sessionStorage.setItem(TURN_KEY, JSON.stringify({ turn: turn.turn_id, session: sessionId, text }));
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
    closeStream();
    sessionId = null;
    sessionStorage.removeItem(SESSION_KEY);
    messages.replaceChildren();
    showSummary(null);
    earlierBefore = null;
    $("earlier").hidden = true;
    showSession();
    setStatus("");
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
    sessionStorage.removeItem(TURN_KEY);
    window.location.reload();
  });

  showSession();
  input.focus();
  if (sessionId) {
    // after a reload: the conversation again, from its stored messages
    openSession(sessionId).catch((error) => {
      if (error.status === 404) {
        sessionId = null;
        sessionStorage.removeItem(SESSION_KEY);
        sessionStorage.removeItem(TURN_KEY);
        showSession();
      } else bubble("error", error.message);
    });
  }
})();

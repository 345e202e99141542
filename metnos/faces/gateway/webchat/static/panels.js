// The header's panels: past conversations, the activity log, family members, the page's
// language, logging out. On a phone the header's buttons sit behind one menu button.
import { S, $, api, fill, localTime, timeElement } from "./api.js";

let sessionsOffset = 0;

export function setUpMenu() {
  const toggle = $("menu-toggle");
  const nav = $("menu");
  toggle.addEventListener("click", () => {
    const open = !nav.classList.contains("open");
    nav.classList.toggle("open", open);
    toggle.setAttribute("aria-expanded", String(open));
  });
  // a choice closes the menu again (a phone's screen is small)
  nav.addEventListener("click", (event) => {
    if (event.target.closest("button")) {
      nav.classList.remove("open");
      toggle.setAttribute("aria-expanded", "false");
    }
  });
}

function toggle(panelId, button, open) {
  $(panelId).hidden = !open;
  button.setAttribute("aria-expanded", String(open));
}

function sessionItem(s, current, open) {
  const li = document.createElement("li");
  const button = document.createElement("button");
  button.type = "button";
  button.className = "secondary session";
  button.dataset.session = s.session_id;
  if (s.session_id === current) button.setAttribute("aria-current", "true");
  const title = document.createElement("span");
  title.className = "session-title";
  title.textContent = s.title || fill(S.session, { id: s.session_id.slice(0, 8) });
  const when = document.createElement("span");
  when.className = "muted session-when";
  when.textContent = localTime(s.updated_at);
  button.append(title, when);
  button.addEventListener("click", () => open(s.session_id));
  li.append(button);
  return li;
}

// The list holds the conversations of the web and Telegram that something was said in; the
// terminal's (`metnos chat`, one session per command) wait in a group of their own, closed,
// so that they never flood it. Each list pages on with its own "older" button.
const LISTS = {
  main: { list: "session-list", more: "sessions-more", query: "exclude_channel=api&spoken=true", offset: 0 },
  terminal: { list: "terminal-list", more: "terminal-more", query: "channel=api&spoken=true", offset: 0 },
};

async function loadSessions(which, reset, current, open) {
  const spec = LISTS[which];
  const list = $(spec.list);
  if (reset) { list.replaceChildren(); spec.offset = 0; }
  const page = await api("GET", `/api/sessions?limit=20&offset=${spec.offset}&${spec.query}`);
  for (const s of page.sessions) list.append(sessionItem(s, current(), open));
  if (which === "main" && !list.children.length) list.append(Object.assign(document.createElement("li"), { textContent: S.sessionsEmpty }));
  spec.offset = page.next_offset === null ? spec.offset : page.next_offset;
  $(spec.more).hidden = page.next_offset === null;
  return page.sessions.length;
}

export function closeSessions() {
  toggle("sessions", $("show-sessions"), false);
}

// `current()` is the conversation on screen; `open(id)` shows another; `fail(error)` tells.
export function setUpSessions(current, open, fail) {
  const group = $("terminal-sessions");
  $("show-sessions").addEventListener("click", async (event) => {
    const opening = $("sessions").hidden;
    toggle("sessions", event.currentTarget, opening);
    if (!opening) return;
    group.open = false;
    try {
      await loadSessions("main", true, current, open);
      group.hidden = !(await loadSessions("terminal", true, current, open));
    } catch (error) { fail(error); }
  });
  $("sessions-more").addEventListener("click", () => loadSessions("main", false, current, open).catch(fail));
  $("terminal-more").addEventListener("click", () => loadSessions("terminal", false, current, open).catch(fail));
}

// The browser's latest conversation, for a page that has none on screen (a new tab, the
// browser reopened): the newest web conversation something was said in, or null.
export async function latestConversation() {
  const page = await api("GET", "/api/sessions?limit=1&channel=web&spoken=true");
  return page.sessions.length ? page.sessions[0].session_id : null;
}

// One audit line as a person reads it: its local time and what happened, in plain words (the
// server's `text`); the raw line (the tool's name, how it ended) one click away, in details.
function auditItem(line) {
  const li = document.createElement("li");
  const outcome = S.outcomes[line.outcome] || line.outcome || S.outcomes[line.decision] || line.decision || "";
  const raw = outcome ? `${line.action || ""}: ${outcome}` : (line.action || "");
  li.append(timeElement(line.ts), document.createTextNode(" " + (line.text || raw)));
  if (line.text && raw) {
    const details = document.createElement("details");
    details.className = "audit-raw";
    const summary = Object.assign(document.createElement("summary"), { textContent: S.details });
    details.append(summary, Object.assign(document.createElement("code"), { textContent: raw }));
    li.append(" ", details);
  }
  return li;
}

export function setUpAudit(current, fail) {
  $("show-audit").addEventListener("click", async (event) => {
    const opening = $("audit").hidden;
    toggle("audit", event.currentTarget, opening);
    if (!opening) return;
    const list = $("audit-lines");
    list.replaceChildren();
    try {
      const id = current();
      const query = id ? `?limit=100&session_id=${encodeURIComponent(id)}` : "?limit=100";
      const lines = await api("GET", "/api/audit" + query);
      for (const line of lines.reverse()) list.append(auditItem(line)); // the latest first
      if (!list.children.length) list.append(Object.assign(document.createElement("li"), { textContent: S.auditEmpty }));
    } catch (error) { fail(error); }
  });
}

async function showPairing() {
  // Who waits for a pairing code to be approved, and who is paired already.
  const data = await api("GET", "/api/pairing");
  const line = (text) => Object.assign(document.createElement("li"), { textContent: text });
  $("pairing-pending").replaceChildren(...data.pending.map((p) => pendingLine(p, line)));
  $("pairing-paired").replaceChildren(...data.paired.map((p) => line(fill(S.pairingMember, { channel: p.channel, sender: p.sender_id, role: p.role }))));
  if (!data.pending.length) $("pairing-pending").append(line(S.pairingNone));
  if (!data.paired.length) $("pairing-paired").append(line(S.pairingNone));
  // whose a newly approved code is: a new member, the owner, or someone already paired
  const select = $("pairing-person");
  for (const old of select.querySelectorAll("option[data-person]")) old.remove();
  const people = new Set(data.paired.map((p) => p.user_id).filter((u) => u !== "owner"));
  for (const person of people) {
    const option = Object.assign(document.createElement("option"), { value: person, textContent: person });
    option.dataset.person = person;
    select.append(option);
  }
}

// A stranger's pending request, with a button that drops it (its slot is free again).
function pendingLine(p, line) {
  const item = line(fill(S.pairingWaiting, { channel: p.channel, sender: p.sender_id }) + " ");
  const drop = Object.assign(document.createElement("button"), { type: "button", textContent: S.pairingDrop });
  drop.addEventListener("click", async () => {
    try {
      const done = await api("POST", "/api/pairing/drop", { channel: p.channel, sender_id: p.sender_id });
      $("pairing-result").textContent = done.message;
    } catch (error) { $("pairing-result").textContent = error.message; }
    await showPairing().catch(() => {});
  });
  item.append(drop);
  return item;
}

export function setUpPairing(fail) {
  $("show-pairing").addEventListener("click", async (event) => {
    const opening = $("pairing").hidden;
    toggle("pairing", event.currentTarget, opening);
    if (opening) { try { await showPairing(); $("pairing-code").focus(); } catch (error) { fail(error); } }
  });
  $("pairing-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const field = $("pairing-code");
    try {
      const person = $("pairing-person").value;
      const change = await api("POST", "/api/pairing/approve", { code: field.value.trim(), ...(person ? { person } : {}) });
      $("pairing-result").textContent = change.message;
      field.value = "";
      await showPairing();
    } catch (error) { $("pairing-result").textContent = error.message; }
  });
}

export function setUpAccount(forget, fail) {
  $("locale").addEventListener("change", async (event) => {
    // Only the chrome changes: a running session keeps its interaction language.
    try {
      await api("POST", "/api/ui-locale", { locale: event.target.value });
      window.location.reload();
    } catch (error) { fail(error); }
  });
  if (!$("logout")) return; // a device's page: a device is revoked by the owner, not logged out
  $("logout").addEventListener("click", async () => {
    try { await api("POST", "/api/logout"); } catch (error) { /* already logged out */ }
    forget();
    window.location.reload();
  });
}

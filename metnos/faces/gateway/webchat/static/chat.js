// Metnos web chat: plain JavaScript modules, no build step. The page holds no token: the
// browser sends the HttpOnly session cookie; every request is same-origin.
import { S, $, api, fill, upload } from "./api.js";
import { askAllBody, setUpAskAll, showAskAll } from "./askall.js";
import { bubble, historyItems } from "./bubbles.js";
import { refreshWaiting, whenDecided } from "./cards.js";
import { setUpComposer } from "./composer.js";
import { closeSessions, latestConversation, setUpAccount, setUpAudit, setUpMenu, setUpPairing, setUpSessions } from "./panels.js";
import { setUpTrash } from "./trash.js";
import { setUpVoice } from "./voice.js";
import { TURN_KEY, closeStream, follow, following, listenNotices, setStatus } from "./stream.js";

const SESSION_KEY = "metnos.session";
const FRESH_KEY = "metnos.fresh"; // this tab asked for a new conversation: a reload keeps it empty
const messages = $("messages");
const input = $("text");
let sessionId = sessionStorage.getItem(SESSION_KEY) || null;
let earlierBefore = null; // `before` for the older messages of the conversation on screen
// the conversation that comes back when the page opens (`reopen`, below): a message sent
// before it is on screen waits for it, so it joins that conversation and is not wiped by it
let reopened = Promise.resolve();

const fail = (error) => { bubble("error", error.message); };

function showSession() {
  $("session-line").textContent = sessionId ? fill(S.session, { id: sessionId.slice(0, 8) }) : "";
}

// The model's state in the header, as /healthz has it: after each reply (which may have
// said that Metnos works without its model)
async function refreshModel() {
  const health = await api("GET", "/healthz");
  const state = S.model[health.model] ? health.model : "unknown";
  $("model-state").dataset.state = state;
  $("model-state").textContent = S.model[state];
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
  sessionStorage.removeItem(FRESH_KEY);
  messages.replaceChildren(historyItems(page.messages));
  showSummary(page.summary);
  earlierBefore = page.next_before;
  $("earlier").hidden = earlierBefore === null;
  showSession();
  await showAskAll(id);
  setStatus("");
  const last = messages.lastElementChild;
  if (last) last.scrollIntoView({ block: "end" });
  await resumeTurn(id, page.messages);
  await refreshWaiting();
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

async function send(text, files = []) {
  $("send").disabled = true;
  try {
    await reopened.catch(() => {}); // its failure is said where it happened
    const attachments = [];
    for (const file of files) { // each kept first; a refused one stops the message, unsent
      setStatus(fill(S.attachSending, { name: file.name }));
      attachments.push((await upload(file)).id);
    }
    const shown = [text, ...files.map((file) => "📎 " + file.name)].filter(Boolean).join("\n");
    bubble("me", shown);
    setStatus(S.status.planning);
    // answered at once: the progress, the approval cards and the reply come as events
    const turn = await api("POST", "/api/turns?wait=false", { text, attachments, session_id: sessionId, lang: S.locale, ...askAllBody() });
    sessionId = turn.session_id;
    sessionStorage.setItem(SESSION_KEY, sessionId);
    sessionStorage.removeItem(FRESH_KEY);
    sessionStorage.setItem(TURN_KEY, JSON.stringify({ turn: turn.turn_id, session: sessionId, text: shown }));
    showSession();
    follow(turn.turn_id, new Set(), () => { input.focus(); refreshModel().catch(() => {}); });
    return true;
  } catch (error) {
    setStatus("");
    fail(error);
    return false;
  } finally {
    $("send").disabled = false;
  }
}

// A decision, from a card in the conversation or from the "waiting for you" area. The turn
// on screen goes on by itself (its stream is open). Otherwise the page shows the decided
// turn's conversation and follows the turn, so its result arrives here as after a card in
// the conversation; with no turn to follow, nothing is left saying "working".
whenDecided(async (approval) => {
  if (following()) { setStatus(S.working); return; }
  if (!approval.turn_id) { setStatus(""); return; }
  try {
    if (approval.session_id && approval.session_id !== sessionId) await openSession(approval.session_id);
    if (following()) return; // the conversation's own turn was resumed by opening it
    if (approval.session_id) {
      sessionStorage.setItem(TURN_KEY, JSON.stringify({ turn: approval.turn_id, session: approval.session_id }));
    }
    setStatus(S.working);
    // a turn still running has no stored messages yet: its question is shown before its answer
    const turn = await api("GET", `/api/turns/${encodeURIComponent(approval.turn_id)}`);
    const asked = [...messages.querySelectorAll(".msg.me")].some((m) => m.dataset.turn === approval.turn_id);
    if (turn.text && !asked && (turn.status === "running" || turn.status === "awaiting_approval")) {
      bubble("me", turn.text).dataset.turn = approval.turn_id;
    }
    follow(approval.turn_id, new Set([approval.approval_id]), () => { refreshModel().catch(() => {}); });
  } catch (error) {
    setStatus("");
    fail(error);
  }
});

$("earlier").addEventListener("click", async () => {
  if (earlierBefore === null || !sessionId) return;
  try {
    const page = await api("GET", `/api/sessions/${encodeURIComponent(sessionId)}/messages?limit=100&before=${earlierBefore}`);
    messages.prepend(historyItems(page.messages));
    earlierBefore = page.next_before;
    $("earlier").hidden = earlierBefore === null;
  } catch (error) { fail(error); }
});

$("new-session").addEventListener("click", () => {
  closeStream();
  sessionId = null;
  sessionStorage.removeItem(SESSION_KEY);
  sessionStorage.setItem(FRESH_KEY, "1");
  messages.replaceChildren();
  showSummary(null);
  earlierBefore = null;
  $("earlier").hidden = true;
  showSession();
  setStatus("");
  refreshWaiting().catch(fail);
  input.focus();
});

setUpMenu();
setUpComposer(send, fail);
setUpVoice(fail, setStatus);
setUpSessions(() => sessionId, async (id) => {
  try { await openSession(id); closeSessions(); input.focus(); } catch (error) { fail(error); }
}, fail);
setUpAskAll(() => sessionId, fail);
setUpAccount(() => { sessionStorage.removeItem(SESSION_KEY); sessionStorage.removeItem(TURN_KEY); }, fail);
listenNotices(); // each person's own reminders and "as usual?"
if (S.role === "owner") { // a family member's page has none of the owner's panels
  setUpAudit(() => sessionId, fail);
  setUpPairing(fail);
  setUpTrash();
}

showSession();
input.focus();
document.body.dataset.ready = "true"; // the page's handlers are in place
// After a reload the conversation on screen comes back (this tab's); a new tab or a browser
// opened again shows the latest web conversation, with its history, instead of an empty page.
async function reopen() {
  const id = sessionId || (sessionStorage.getItem(FRESH_KEY) ? null : await latestConversation());
  if (!id) { await refreshWaiting(); return; }
  try {
    await openSession(id);
  } catch (error) {
    if (error.status !== 404) throw error;
    sessionId = null;
    sessionStorage.removeItem(SESSION_KEY);
    sessionStorage.removeItem(TURN_KEY);
    showSession();
    await refreshWaiting();
  }
}
reopened = reopen();
reopened.catch(fail);

// The turn on screen, from its server-sent events: status lines, approval cards, the text as
// it streams (`delta`), then the reply that replaces it with what ran beside it.
import { S, api } from "./api.js";
import { proseWithoutHints } from "./actions.js";
import { addActivity, bubble, notice } from "./bubbles.js";
import { refreshWaiting, showCard, showProposals } from "./cards.js";

const R = window.MetnosRender;
const statusLine = document.getElementById("status");
// the turn still running, {turn, session, text}: followed again after a reload (its messages
// are stored when it ends)
export const TURN_KEY = "metnos.turn";
const STREAM_RENDER_MS = 60;
let source = null; // the EventSource of the turn on screen

export function setStatus(text) {
  statusLine.textContent = text || "";
}

export function closeStream() {
  if (source) { source.close(); source = null; }
}

export function following() {
  return source !== null;
}

export function follow(turnId, seen, onEnd) {
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
  const on = (kind, handler) => events.addEventListener(kind, (e) => handler(JSON.parse(e.data)));
  on("status", (data) => setStatus(S.status[data.status] || ""));
  on("step", (data) => {
    // the step's own words ("Looking for your files…"): the tool's name stays out of sight
    if (data.state === "started") setStatus(data.text || S.working);
  });
  on("approval", (data) => {
    settle();
    if (!seen.has(data.approval_id)) { seen.add(data.approval_id); showCard(data); }
    setStatus(S.status.awaiting_approval);
  });
  on("delta", (data) => {
    if (!live) {
      const item = bubble("metnos", "");
      item.classList.add("streaming");
      live = { item, text: R.streaming(item.querySelector(".text"), STREAM_RENDER_MS) };
    }
    live.text.add(String(data.text || ""), data.think);
    live.item.scrollIntoView({ block: "end" });
  });
  on("reply", (data) => {
    if (!data.text) { settle(); return; }
    if (seen.has("reply:" + data.text)) {
      if (live) { live.item.remove(); live = null; } // shown already, from the stored messages
      return;
    }
    seen.add("reply:" + data.text);
    const prose = proseWithoutHints(data.text, data.activity);
    let item = live ? live.item : null;
    if (live) { live.text.finish(prose); item.classList.remove("streaming"); live = null; }
    else item = bubble("metnos", prose);
    item.dataset.turn = turnId;
    addActivity(item, data.activity, prose);
    item.scrollIntoView({ block: "end" });
  });
  on("notice", onNotice);
  events.addEventListener("end", () => {
    settle();
    done(true);
    refreshWaiting().catch(() => {});
    if (onEnd) onEnd();
  });
  events.onerror = () => done(false);
}

// A message Metnos sends on its own: a reminder as a bubble, a proposal as a card with
// Accept / Dismiss (the `proposal` kind of notice).
function onNotice(data) {
  if (data && data.kind === "proposal") showProposals(data).catch(() => notice(data));
  else notice(data);
}

// What Metnos sends on its own: one stream for the page, when the gateway has one.
export function listenNotices() {
  if (!S.noticesUrl) return;
  const events = new EventSource(S.noticesUrl);
  const shown = new Set();  // every open page gets a notice until one page says it showed it
  events.addEventListener("notice", (e) => {
    const data = JSON.parse(e.data);
    if (!data || shown.has(data.id)) return;
    shown.add(data.id);
    onNotice(data);
    api("POST", "/api/notices/delivered", { ids: [data.id] }).catch(() => {});
  });
}

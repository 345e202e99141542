// Message items: the user's text as typed, Metnos's as sanitised markdown, tool results
// collapsed, reminders; each with its local time.
import { S, fill, timeElement } from "./api.js";
import { activityList, proseWithoutHints } from "./actions.js";
import { addFeedback, withoutFeedback } from "./feedback.js";

const R = window.MetnosRender;
const messages = document.getElementById("messages");

function label(who, at) {
  const line = document.createElement("span");
  line.className = "who";
  const name = { me: S.you, metnos: S.metnos, notice: S.notice }[who] || "";
  line.append(document.createTextNode(name ? name + " · " : ""), timeElement(at));
  return line;
}

export function makeBubble(who, text, at) {
  const item = document.createElement("li");
  item.className = "msg " + who;
  const body = document.createElement("div");
  body.className = "text";
  body.dir = "auto"; // each message runs in its own script's direction, whatever the page's
  if (who === "metnos" || who === "notice") { body.classList.add("md"); R.markdown(body, text); }
  else body.textContent = text;
  item.append(label(who, at), body);
  return item;
}

export function show(item) {
  messages.append(item);
  item.scrollIntoView({ block: "end" });
  return item;
}

export function bubble(who, text, at) {
  return show(makeBubble(who, text, at));
}

// What ran beside the reply `prose` (as shown), below the bubble's text.
export function addActivity(item, activity, prose) {
  if (!activity || !activity.length) return;
  const shown = withoutFeedback(activity); // a Tutor answer's 👍/👎 are buttons, not a line
  const list = activityList(shown, prose);
  if (list.children.length) item.append(list);
  addFeedback(item, activity);
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
export function historyItems(list) {
  const fragment = document.createDocumentFragment();
  for (const m of list) {
    if (m.role === "user") fragment.append(makeBubble("me", m.content || "", m.created_at));
    else if (m.role === "tool") fragment.append(makeToolItem(m));
    else if (m.role === "assistant" && (m.content || (m.activity && m.activity.length))) {
      const prose = proseWithoutHints(m.content, m.activity);
      const item = makeBubble("metnos", prose, m.created_at);
      item.dataset.turn = m.turn_id || "";
      addActivity(item, m.activity, prose);
      fragment.append(item);
    }
  }
  return fragment;
}

// A reminder Metnos sends on its own (`notice` events): a message with its time.
export function notice(data) {
  const item = makeBubble("notice", String(data.text || ""), data.at);
  if (data.id) item.dataset.notice = String(data.id);
  if (data.id && messages.querySelector(`[data-notice="${CSS.escape(String(data.id))}"]`)) return null;
  return show(item);
}

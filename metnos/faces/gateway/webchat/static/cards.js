// Approval cards in plain words: what will happen to which file and why Metnos asks (the
// `card` the gateway writes from i18n), the exact arguments behind a "details" toggle, and
// Approve/Deny. Cards the conversation does not show (a reload, another conversation) wait
// in the "waiting for you" area, from GET /api/approvals.
import { S, $, api, fill, timeElement } from "./api.js";

const messages = document.getElementById("messages");
let onDecided = () => {};

// `hook(approval, decision)` runs after a decision is recorded (the page follows the turn).
export function whenDecided(hook) { onDecided = hook; }

function text(tag, className, value) {
  const element = document.createElement(tag);
  element.className = className;
  element.textContent = value;
  return element;
}

// The pending approvals of the owner, with their cards, in the page's language.
export async function pending() {
  return (await api("GET", "/api/approvals")).approvals;
}

async function withCard(approval) {
  if (approval.card) return approval;
  try {
    const found = (await pending()).find((a) => a.approval_id === approval.approval_id);
    if (found && found.card) return { ...approval, card: found.card };
  } catch (error) { /* the raw action below still says what it is */ }
  return { ...approval, card: { action: approval.action || approval.executor, why: approval.why || null } };
}

export function cardElement(approval) {
  const card = approval.card || {};
  const item = document.createElement("li");
  item.className = "msg card";
  item.dataset.approval = approval.approval_id;
  const head = text("span", "who", S.cardTitle + " · ");
  head.append(timeElement(approval.created_at));
  item.append(head, text("p", "card-action", card.action || approval.executor));
  if (card.why) item.append(text("p", "card-why", card.why));
  const paths = approval.files ? Object.keys(approval.files) : [];
  if (paths.length) {
    const files = document.createElement("ul");
    files.className = "files";
    files.setAttribute("aria-label", S.files);
    for (const path of paths) files.append(text("li", "", fill(approval.files[path] ? S.fileExists : S.fileNew, { path })));
    item.append(files);
  }
  item.append(argumentDetails(approval, card));
  if (approval.approver && approval.approver !== S.user) { // a member's step the owner decides
    item.append(text("p", "card-outcome", S.waitsForOwner));
    return item;
  }
  const buttons = document.createElement("div");
  buttons.className = "buttons";
  for (const [decision, label] of [["approve", S.approve], ["deny", S.deny]]) {
    const button = text("button", decision, label);
    button.type = "button";
    button.addEventListener("click", () => decide(item, approval, decision));
    buttons.append(button);
  }
  item.append(buttons);
  return item;
}

// Every argument whole (as text, never markup), each with its length; opened when the
// sentences above quote a value shortened, so that nothing is cut silently.
function argumentDetails(approval, card) {
  const details = document.createElement("details");
  details.className = "card-details";
  details.append(text("summary", "", S.details), text("p", "muted", approval.executor));
  const pairs = card.details || Object.entries(approval.args || {}).map(
    ([name, value]) => [name, typeof value === "string" ? value : JSON.stringify(value)]);
  for (const [name, value] of pairs) {
    const whole = String(value);
    const [chars, lines] = (card.sizes || {})[name] || [whole.length, whole.split("\n").length];
    const arg = document.createElement("div");
    arg.className = "card-arg";
    arg.dataset.arg = name;
    arg.append(text("p", "card-arg-name", `${name} · ${fill(S.valueSize, { chars, lines })}`),
               text("pre", "card-arg-value", whole));
    details.append(arg);
  }
  if (card.cut) {
    details.prepend(text("p", "card-cut", S.shownCut));
    details.open = true;
  }
  return details;
}

// A card in the conversation (an `approval` event of the turn on screen).
export async function showCard(approval) {
  const full = await withCard(approval);
  const waiting = $("waiting-list").querySelector(`[data-approval="${CSS.escape(full.approval_id)}"]`);
  if (waiting) waiting.remove();
  hideEmptyWaiting();
  if (messages.querySelector(`[data-approval="${CSS.escape(full.approval_id)}"]`)) return;
  const item = cardElement(full);
  messages.append(item);
  item.scrollIntoView({ block: "end" });
}

async function decide(card, approval, decision) {
  for (const b of card.querySelectorAll("button")) b.disabled = true;
  try {
    await api("POST", `/api/approvals/${encodeURIComponent(approval.approval_id)}`, { decision });
    card.querySelector(".buttons").remove();
    card.append(text("p", "card-outcome", decision === "approve" ? S.approved : S.denied));
    onDecided(approval, decision);
  } catch (error) {
    for (const b of card.querySelectorAll("button")) b.disabled = false;
    card.append(text("p", "card-outcome error", error.message));
  }
}

function hideEmptyWaiting() {
  $("waiting").hidden = !$("waiting-list").children.length;
}

// The "waiting for you" area: every pending approval not already on screen as a card.
export async function refreshWaiting() {
  const list = $("waiting-list");
  const approvals = await pending();
  const ids = new Set(approvals.map((a) => a.approval_id));
  for (const old of [...list.children]) {
    if (!ids.has(old.dataset.approval) && !old.querySelector(".card-outcome")) old.remove();
  }
  for (const approval of approvals) {
    const selector = `[data-approval="${CSS.escape(approval.approval_id)}"]`;
    if (messages.querySelector(selector) || list.querySelector(selector)) continue;
    list.append(cardElement(approval));
  }
  hideEmptyWaiting();
}

// A proposal Metnos makes on its own (a `notice` of kind "proposal"): its lines, each with
// Accept / Dismiss, from GET /api/proposals?outbox_id= (texts and labels in the page's
// language). An answered line says what was done; its buttons go away.
export async function showProposals(notice) {
  const id = String(notice.id || "");
  if (!id || messages.querySelector(`[data-proposals="${CSS.escape(id)}"]`)) return null;
  const item = document.createElement("li");
  item.className = "msg card proposal";
  item.dataset.proposals = id;
  const head = text("span", "who", S.metnos + " · ");
  head.append(timeElement(notice.at));
  item.append(head);
  messages.append(item);
  let data = null;
  try {
    data = await api("GET", `/api/proposals?outbox_id=${encodeURIComponent(id)}`);
  } catch (error) {
    item.append(text("p", "card-action", String(notice.text || "")));
    return item;
  }
  const list = data.proposals || [];
  if (list.length > 1) item.append(text("p", "card-action", String(notice.text || "").split("\n")[0]));
  for (const [n, proposal] of list.entries()) item.append(proposalLine(proposal, data.labels, list.length > 1 ? n + 1 : null));
  item.scrollIntoView({ block: "end" });
  return item;
}

function proposalLine(proposal, labels, n) {
  const line = document.createElement("div");
  line.className = "proposal-line";
  line.dataset.proposal = proposal.id;
  line.append(text("p", "card-action", n === null ? proposal.text : `${n}. ${proposal.text}`));
  if (proposal.status !== "delivered") {
    const done = { accepted: labels.accepted, dismissed: labels.dismissed }[proposal.status];
    if (done) line.append(text("p", "card-outcome", done));
    return line;
  }
  const buttons = document.createElement("div");
  buttons.className = "buttons";
  for (const [answer, label] of [["accept", labels.accept], ["dismiss", labels.dismiss]]) {
    const button = text("button", answer === "accept" ? "approve" : "deny", label);
    button.type = "button";
    button.addEventListener("click", () => answerProposal(line, proposal, answer, labels));
    buttons.append(button);
  }
  line.append(buttons);
  return line;
}

async function answerProposal(line, proposal, answer, labels) {
  for (const b of line.querySelectorAll("button")) b.disabled = true;
  try {
    await api("POST", `/api/proposals/${encodeURIComponent(proposal.id)}/${answer}`);
    line.querySelector(".buttons").remove();
    line.append(text("p", "card-outcome", answer === "accept" ? labels.accepted : labels.dismissed));
  } catch (error) {
    for (const b of line.querySelectorAll("button")) b.disabled = false;
    line.append(text("p", "card-outcome error", error.message));
  }
}

// 👍 / 👎 under a Tutor answer: the reply's activity carries one item `{feedback: <turn id>}`.
// 👎 then offers the typed causes; the rating goes through POST
// /api/tutor/answers/{turn}/feedback, which counts it only for the person who asked, once.
import { S, api, fill } from "./api.js";

const CAUSES = ["wrong_section", "insufficient", "outdated", "not_about_metnos"];

// The activity items that are not feedback (the activity list shows those).
export function withoutFeedback(activity) {
  return (activity || []).filter((item) => !(item && item.feedback));
}

function button(text, label, className, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "secondary " + className;
  b.textContent = text;
  b.setAttribute("aria-label", label);
  b.title = label;
  b.addEventListener("click", onClick);
  return b;
}

function settle(box, text, failed) {
  box.replaceChildren();
  const note = document.createElement("span");
  note.className = failed ? "feedback-error" : "feedback-note";
  note.setAttribute("role", "status");
  note.textContent = text;
  box.append(note);
}

async function send(box, turnId, rating, cause) {
  for (const b of box.querySelectorAll("button")) b.disabled = true;
  try {
    const done = await api("POST", `/api/tutor/answers/${encodeURIComponent(turnId)}/feedback`,
      cause ? { rating, cause } : { rating });
    settle(box, done.message, false);
  } catch (error) {
    if (error.key === "ERR_TUTOR_FEEDBACK_ALREADY" || error.key === "ERR_TUTOR_FEEDBACK_EXPIRED") {
      settle(box, error.message, false);
      return;
    }
    for (const b of box.querySelectorAll("button")) b.disabled = false;
    for (const old of box.querySelectorAll(".feedback-error")) old.remove();
    const note = document.createElement("span");
    note.className = "feedback-error";
    note.setAttribute("role", "alert");
    note.textContent = fill(S.feedbackFailed, { reason: error.message });
    box.append(note);
  }
}

function causes(box, turnId) {
  box.replaceChildren();
  const group = document.createElement("div");
  group.className = "feedback-causes";
  group.setAttribute("role", "group");
  group.setAttribute("aria-label", S.feedbackWhy);
  const ask = document.createElement("span");
  ask.className = "feedback-ask";
  ask.textContent = S.feedbackWhy;
  group.append(ask);
  for (const cause of CAUSES) {
    const text = S.feedbackCauses[cause];
    group.append(button(text, text, "feedback-cause", () => send(box, turnId, "down", cause)));
  }
  box.append(group);
}

// The buttons under a reply bubble whose activity offers feedback (none otherwise).
export function addFeedback(item, activity) {
  const offer = (activity || []).find((a) => a && a.feedback);
  if (!offer || item.querySelector(".feedback")) return;
  const turnId = String(offer.feedback);
  const box = document.createElement("div");
  box.className = "feedback";
  box.dataset.turn = turnId;
  box.setAttribute("role", "group");
  box.setAttribute("aria-label", S.feedbackAsk);
  box.append(
    button("👍", S.feedbackUp, "feedback-up", () => send(box, turnId, "up", null)),
    button("👎", S.feedbackDown, "feedback-down", () => causes(box, turnId)));
  item.append(box);
}

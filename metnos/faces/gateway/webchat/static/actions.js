// What ran beside a reply: one line per activity item, and an Undo button on every change
// (`undo: true` with its `action_id`). The undo goes through POST /api/actions/{id}/undo,
// with its own rules: a second one says it was already undone.
import { S, api, fill } from "./api.js";

// The item's text without the terminal command the button stands for, whatever the language.
export function withoutUndoHint(text, actionId) {
  const command = "metnos undo " + actionId;
  const at = actionId ? text.indexOf(command) : -1;
  if (at < 0) return text;
  let start = 0;
  const ends = /[.!?;]\s+|\n/g;
  for (let m = ends.exec(text); m && m.index < at; m = ends.exec(text)) start = m.index + m[0].length;
  const rest = text.slice(at + command.length).replace(/^[ .]+/, "");
  const head = text.slice(0, start).trimEnd();
  return (rest ? (head + " " + rest).trim() : head) || text;
}

// A reply's prose without the commands of the changes its Undo buttons stand for.
export function proseWithoutHints(text, activity) {
  let prose = String(text || "");
  for (const item of activity || []) {
    if (item && item.undo && item.action_id) prose = withoutUndoHint(prose, String(item.action_id));
  }
  return prose;
}

function markUndone(li, text) {
  li.classList.add("undone");
  for (const b of li.querySelectorAll("button.undo")) b.remove();
  const note = document.createElement("span");
  note.className = "undo-note";
  note.textContent = text;
  li.append(note);
}

async function undo(li, actionId, button) {
  button.disabled = true;
  for (const old of li.querySelectorAll(".undo-error")) old.remove();
  try {
    await api("POST", `/api/actions/${encodeURIComponent(actionId)}/undo`);
    markUndone(li, S.undone);
  } catch (error) {
    if (error.key === "ERR_UNDO_ALREADY_DONE") { markUndone(li, S.undoAlready); return; }
    button.disabled = false;
    const note = document.createElement("span");
    note.className = "undo-error";
    note.textContent = fill(S.undoFailed, { reason: error.message });
    li.append(note);
  }
}

// The activity list of a reply whose prose is `prose`: a line the prose already says (the
// embedded planner's replies are these lines) keeps only its Undo button.
export function activityList(items, prose) {
  const list = document.createElement("ul");
  list.className = "activity";
  list.setAttribute("aria-label", S.activity);
  for (const item of items) {
    // undo is the owner's (a member asks them): no button a member could not use
    const canUndo = Boolean(item.undo && item.action_id) && S.role === "owner";
    const raw = String(item.text || item.executor || "");
    const text = canUndo ? withoutUndoHint(raw, String(item.action_id)) : raw;
    const said = Boolean(prose && text && String(prose).includes(text));
    if (said && !canUndo) continue;
    const li = document.createElement("li");
    li.className = "act " + String(item.status || "") + (said ? " said" : "");
    if (!said) {
      const span = document.createElement("span");
      span.className = "act-text";
      span.textContent = text;
      li.append(span);
    }
    if (canUndo) {
      li.dataset.action = String(item.action_id);
      if (item.undone) markUndone(li, S.undone);
      else {
        const button = document.createElement("button");
        button.type = "button";
        button.className = "secondary undo";
        button.textContent = S.undo;
        button.addEventListener("click", () => undo(li, String(item.action_id), button));
        li.append(button);
      }
    }
    list.append(li);
  }
  return list;
}

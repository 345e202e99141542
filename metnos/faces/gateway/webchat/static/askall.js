// "Ask me before every change" in the web chat's menu: the owner's per-conversation setting
// (ask_all). On a conversation, a change of the box is saved at once (PATCH
// /api/sessions/{id}); before the first message, the box is sent with it (POST /api/turns).
import { $, api } from "./api.js";

const box = () => $("ask-all");

// What the next POST /api/turns carries: the box, when it is ticked.
export function askAllBody() {
  return box() && box().checked ? { ask_all: true } : {};
}

// The box as conversation `id` has it (none: unticked, for a new conversation).
export async function showAskAll(id) {
  if (!box()) return;
  if (!id) { box().checked = false; return; }
  const session = await api("GET", `/api/sessions/${encodeURIComponent(id)}`);
  box().checked = Boolean(session.ask_all);
}

export function setUpAskAll(currentSession, fail) {
  if (!box()) return;
  box().addEventListener("change", async () => {
    const id = currentSession();
    if (!id) return; // sent with the first message
    try {
      const session = await api("PATCH", `/api/sessions/${encodeURIComponent(id)}`, { ask_all: box().checked });
      box().checked = Boolean(session.ask_all);
    } catch (error) {
      box().checked = !box().checked;
      fail(error);
    }
  });
}

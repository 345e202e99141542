// The message box: Enter sends, Shift+Enter starts a line. A message longer than the
// gateway reads is never cut silently: a notice says so, and the user sends what fits or
// cancels. Lengths count characters as the gateway does (code points, not UTF-16 units).
import { S, $, fill } from "./api.js";

const input = $("text");
const chars = (text) => Array.from(text);

function tooLong(text) {
  return chars(text).length > S.maxChars;
}

function hideNotice() {
  $("paste-notice").hidden = true;
}

function showNotice(send) {
  const text = input.value.trim();
  $("paste-notice-text").textContent = fill(S.pasteTooLong, { count: chars(text).length, limit: S.maxChars });
  $("paste-send").textContent = fill(S.pasteSendFit, { limit: S.maxChars });
  $("paste-notice").hidden = false;
  $("paste-send").onclick = () => {
    const fit = chars(text).slice(0, S.maxChars).join("").trim();
    hideNotice();
    input.value = "";
    send(fit);
  };
  $("paste-cancel").onclick = () => { hideNotice(); input.focus(); };
}

// `send(text)` starts a turn with the text to send.
export function setUpComposer(send) {
  const form = $("composer");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = input.value.trim();
    if (!text) return;
    if (tooLong(text)) { showNotice(send); $("paste-send").focus(); return; }
    hideNotice();
    input.value = "";
    send(text);
  });
  input.addEventListener("input", () => {
    if (tooLong(input.value.trim())) showNotice(send); else hideNotice();
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); form.requestSubmit(); }
  });
}

// The message box: Enter sends, Shift+Enter starts a line. A message longer than the
// gateway reads is never cut silently: a notice says so, and the user sends what fits or
// cancels. Lengths count characters as the gateway does (code points, not UTF-16 units).
// 📎 adds photos and documents to the message; they go with it, or alone.
import { S, $, fill } from "./api.js";

const input = $("text");
const chars = (text) => Array.from(text);
let chosen = []; // the files that go with the next message

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
  $("paste-send").onclick = async () => {
    const fit = chars(text).slice(0, S.maxChars).join("").trim();
    hideNotice();
    input.value = "";
    if (await send(fit, chosen)) setChosen([]);
  };
  $("paste-cancel").onclick = () => { hideNotice(); input.focus(); };
}

// The chosen files as a list, each with a button that takes it out (names are shown as text).
function setChosen(files) {
  chosen = files;
  const list = $("attached");
  list.replaceChildren(...chosen.map((file, at) => {
    const item = document.createElement("li");
    const name = document.createElement("span");
    name.textContent = "📎 " + file.name;
    const remove = document.createElement("button");
    remove.type = "button";
    remove.className = "secondary";
    remove.textContent = "×";
    remove.setAttribute("aria-label", fill(S.attachRemove, { name: file.name }));
    remove.onclick = () => { setChosen(chosen.filter((_, i) => i !== at)); input.focus(); };
    item.append(name, remove);
    return item;
  }));
  list.hidden = !chosen.length;
  input.required = !chosen.length;
}

// `send(text, files)` starts a turn with the text and the files; true when it was sent.
// `fail(error)` says why a file cannot go (too large: the gateway would refuse it).
export function setUpComposer(send, fail) {
  const form = $("composer");
  const picker = $("files");
  $("attach").addEventListener("click", () => picker.click());
  picker.addEventListener("change", () => {
    const fits = [];
    for (const file of picker.files) {
      if (file.size > S.maxBytes) {
        fail(new Error(fill(S.attachTooLarge, { name: file.name, max_mb: Math.floor(S.maxBytes / 1048576) })));
      } else fits.push(file);
    }
    picker.value = "";
    setChosen([...chosen, ...fits].slice(0, 10));
    input.focus();
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = input.value.trim();
    if (!text && !chosen.length) return;
    if (tooLong(text)) { showNotice(send); $("paste-send").focus(); return; }
    hideNotice();
    input.value = "";
    if (await send(text, chosen)) setChosen([]);
    else if (!input.value) input.value = text; // not sent: nothing the person wrote is lost
  });
  input.addEventListener("input", () => {
    if (tooLong(input.value.trim())) showNotice(send); else hideNotice();
  });
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); form.requestSubmit(); }
  });
}

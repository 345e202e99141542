// The microphone: 🎤 records (the browser asks for permission once), pressing it again stops;
// the recording goes to POST /api/voice and the words heard land in the message box, where
// the person reads and corrects them before sending. Nothing is sent by itself.
import { S, $, fill } from "./api.js";

let recorder = null;

async function heard(blob) {
  const response = await fetch("/api/voice", {
    method: "POST", credentials: "same-origin", body: blob,
    headers: { "Accept-Language": S.locale, "Content-Type": blob.type || "application/octet-stream" },
  });
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const error = (data && data.error) || {};
    throw new Error(error.message || fill(S.httpError, { status: response.status }));
  }
  return data;
}

export function setUpVoice(fail, say) {
  const button = $("mic");
  if (!button) return;
  if (!navigator.mediaDevices || !window.MediaRecorder) { button.hidden = true; return; }
  button.addEventListener("click", async () => {
    if (recorder) { recorder.stop(); return; }
    let stream;
    try { stream = await navigator.mediaDevices.getUserMedia({ audio: true }); } catch (error) { fail(error); return; }
    const chunks = [];
    recorder = new MediaRecorder(stream);
    recorder.addEventListener("dataavailable", (event) => { if (event.data.size) chunks.push(event.data); });
    recorder.addEventListener("stop", async () => {
      for (const track of stream.getTracks()) track.stop();
      const type = recorder.mimeType;
      recorder = null;
      button.classList.remove("recording");
      button.setAttribute("aria-pressed", "false");
      button.disabled = true;
      say(S.voiceListening);
      try {
        const found = await heard(new Blob(chunks, { type }));
        const box = $("text");
        box.value = box.value.trim() ? `${box.value.trim()} ${found.text}` : found.text;
        box.dispatchEvent(new Event("input"));
        box.focus();
        say(found.message);
      } catch (error) { fail(error); say(""); }
      button.disabled = false;
    });
    recorder.start();
    button.classList.add("recording");
    button.setAttribute("aria-pressed", "true");
    say(S.voiceRecording);
  });
}

// The device ceremony (issue 30): name this browser, ask for access, show the code the
// owner approves, and open the chat once approved. Every text is set with textContent.
"use strict";
(() => {
  const S = JSON.parse(document.getElementById("metnos-strings").textContent);
  const form = document.getElementById("ask-form");
  const status = document.getElementById("status");
  let timer = null;

  async function call(method, path, body) {
    const response = await fetch(path, {
      method, credentials: "same-origin",
      headers: body ? { "Content-Type": "application/json" } : {},
      body: body ? JSON.stringify(body) : undefined,
    });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error((data.error && data.error.message) || S.WEB_DEVICE_FAILED);
    return data;
  }

  async function poll(expires) {
    try {
      const found = await call("GET", "/device/state");
      if (found.state === "admitted") { window.location.assign("/"); return; }
      if (found.state !== "waiting" || Date.now() > expires) {
        clearInterval(timer);
        status.textContent = S.WEB_DEVICE_EXPIRED;
        form.hidden = false;
      }
    } catch (error) { status.textContent = S.WEB_DEVICE_FAILED; }
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const label = document.getElementById("label").value.trim();
    if (!label) return;
    status.textContent = "";
    try {
      const asked = await call("POST", "/device/ask", { label });
      document.getElementById("code-line").textContent = S.WEB_DEVICE_CODE;
      document.getElementById("code").textContent = asked.code;
      document.getElementById("how").textContent = S.WEB_DEVICE_HOW;
      document.getElementById("asked").hidden = false;
      form.hidden = true;
      status.textContent = S.WEB_DEVICE_WAITING;
      const expires = Date.parse(asked.expires_at) || Date.now() + 3600 * 1000;
      if (timer) clearInterval(timer);
      timer = setInterval(() => poll(expires), 2000);
    } catch (error) { status.textContent = error.message; }
  });
})();

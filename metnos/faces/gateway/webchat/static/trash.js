// The trash's bottom, for the owner: beside the activity log, how much the copies kept for
// undo take (GET /api/trash) and a button that clears them (POST /api/trash/purge) after a
// confirmation. A cleared change can no longer be undone; each clearing is audited.
import { $, api } from "./api.js";

async function showSize() {
  try {
    const data = await api("GET", "/api/trash");
    $("trash-size").textContent = data.message || "";
  } catch (error) { $("trash-size").textContent = error.message; }
}

export function setUpTrash() {
  const button = $("empty-trash");
  if (!button) return;
  $("show-audit").addEventListener("click", () => { if (!$("audit").hidden) showSize(); });
  button.addEventListener("click", async () => {
    if (!window.confirm(button.dataset.confirm || "")) return;
    button.disabled = true;
    try {
      const data = await api("POST", "/api/trash/purge", {});
      $("trash-result").textContent = data.message || "";
      await showSize();
    } catch (error) {
      $("trash-result").textContent = error.message;
    } finally { button.disabled = false; }
  });
}

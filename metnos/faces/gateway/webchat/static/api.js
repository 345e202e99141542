// The web chat's shared pieces: its strings, element lookup, the API client, local times.
// The page holds no token: the browser sends the HttpOnly session cookie, same-origin.

export const S = JSON.parse(document.getElementById("metnos-strings").textContent);
export const $ = (id) => document.getElementById(id);

export function fill(template, vars) {
  return String(template).replace(/\{(\w+)\}/g, (m, name) => (name in vars ? String(vars[name]) : m));
}

// An error with the API's key and status (the message is already in the user's language).
export async function api(method, path, body) {
  const headers = { "Accept-Language": S.locale };
  if (body) headers["Content-Type"] = "application/json";
  return answered(await fetch(path, {
    method, credentials: "same-origin", headers, body: body ? JSON.stringify(body) : undefined,
  }));
}

// Send one file (a photo, a PDF, a text) to be kept for the next message: its id, name, kind.
export async function upload(file) {
  const headers = { "Accept-Language": S.locale, "Content-Type": file.type || "application/octet-stream" };
  return answered(await fetch(`/api/attachments?name=${encodeURIComponent(file.name)}`, {
    method: "POST", credentials: "same-origin", headers, body: file,
  }));
}

async function answered(response) {
  let data = null;
  try { data = await response.json(); } catch (e) { data = null; }
  if (!response.ok) {
    const error = data && data.error ? data.error : {};
    const message = error.message || fill(S.httpError, { status: response.status });
    throw Object.assign(new Error(message), { status: response.status, key: error.key || null });
  }
  return data;
}

// `iso` in the browser's local time: the time of day, with the date when not today.
export function localTime(iso) {
  const when = iso ? new Date(iso) : new Date();
  if (Number.isNaN(when.getTime())) return "";
  const today = new Date().toDateString() === when.toDateString();
  const options = today ? { hour: "2-digit", minute: "2-digit" }
    : { day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" };
  return when.toLocaleString(S.locale, options);
}

// A <time> element for `iso` (now when missing).
export function timeElement(iso) {
  const element = document.createElement("time");
  const when = iso ? new Date(iso) : new Date();
  element.dateTime = Number.isNaN(when.getTime()) ? "" : when.toISOString();
  element.textContent = localTime(iso);
  return element;
}

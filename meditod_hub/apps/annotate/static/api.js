// The server's JSON API: one call, errors raised with the server's one-line `detail`.
export async function api(method, path, body) {
  const init = {method, headers: {}};
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  let data = null;
  try { data = await r.json(); } catch (e) { data = null; }
  if (!r.ok) {
    const err = new Error((data && data.detail) || `${r.status} ${r.statusText}`);
    err.status = r.status; err.data = data;
    throw err;
  }
  return data;
}

export const dialoguePath = (did, rest = "") => `/api/dialogues/${encodeURIComponent(did)}${rest}`;

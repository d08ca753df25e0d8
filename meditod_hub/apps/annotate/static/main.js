// MediTOD annotation page, entry module: boot, opening dialogues, import, vocabulary, JSON edit.
// Labels live here while edited; the server folds states, validates, suggests and saves (every
// committed edit is saved at once). Modules: api (HTTP), dom (helpers), state (labels, undo/redo,
// save), render (drawing), forms + patient-form + doctor-form (the questionnaire), keys (keyboard
// and buttons).
import {api, dialoguePath} from "./api.js";
import {$, clone, el, same, setStatus} from "./dom.js";
import {installKeys} from "./keys.js";
import {renderProblems, renderSplit, renderUtterances, select} from "./render.js";
import {S, commit, flush, labelKey} from "./state.js";

async function boot() {
  S.config = await api("GET", "/api/config");
  if (S.config.space && !S.config.user) {
    $("main").hidden = true; $("#control").hidden = true; $("#progress").hidden = true;
    $("#login").hidden = false;
    $("#login-link").href = S.config.login_url;
    return;
  }
  $("#source").textContent = S.config.source ? `release: ${S.config.source}` : "";
  if (S.config.user) {
    $("#user").textContent = `signed in as ${S.config.user} `;
    $("#user").append(el("a", {href: S.config.logout_url, text: "log out"}));
  }
  const models = Object.entries(S.config.models).map(([t, m]) => `${t}: ${m}`).join("; ");
  $("#models").textContent = models ? `suggestions from ${models}` : "";
  for (const split of S.config.splits) {
    $("#split-select").append(el("option", {value: split, text: split}));
    $("#import-split").append(el("option", {value: split, text: split}));
  }
  $("#import-split").value = S.config.splits[0];
  S.schema = await api("GET", "/api/schema");
  await refreshValues();
  await refreshList();
  const wanted = new URLSearchParams(location.search).get("dialogue");
  const first = S.summaries.find((d) => d.id === wanted) || S.summaries[0];
  if (first) await openDialogue(first.id);
  else {  // an empty folder opens on the import box (the README says so)
    $("#panel-empty").textContent = "No dialogues yet: import a transcript (\"Import transcript\", top left) to start.";
    $("#import-dialog").showModal();
  }
}

export async function refreshList() {
  S.summaries = (await api("GET", "/api/dialogues")).dialogues;
  const select = $("#dialogue-select");
  select.replaceChildren(...S.summaries.map((d) => el("option", {
    value: d.id,
    text: `${d.id} (${d.labelled}/${d.utterances})${d.split ? "" : " no split"}${d.draft ? " draft" : ""}${d.errors ? " \u26A0" : ""}`,
  })));
  if (S.did) select.value = S.did;
}

// The count is the canonical values the page knows: the release's own medical values and the
// loaded vocabulary (before: the vocabulary alone, "0 canonical values loaded" on a labelled release).
async function refreshValues() {
  S.values = await api("GET", "/api/values");
  const inRelease = S.values.release_canonical, loaded = S.values.vocabulary;
  const all = new Set([...inRelease, ...loaded]).size;
  $("#vocabulary-size").textContent = `${all} canonical value${all === 1 ? "" : "s"} ` +
    `(${inRelease.length} in this release, ${loaded.length} loaded)`;
}

export async function openDialogue(did) {
  if (S.conflict && did !== S.did &&
      !confirm("This dialogue has edits that were not saved (conflict). Drop them?")) {
    $("#dialogue-select").value = S.did;
    return;
  }
  await flush();
  const data = await api("GET", dialoguePath(did));
  S.did = did; S.version = data.version; S.dialogue = data.dialogue; S.split = data.split;
  S.labels = data.dialogue.utterances.map((u) => clone(u[labelKey(u.speaker)] || []));
  S.origins = data.origins;
  S.states = data.states; S.problems = data.problems;
  S.suggestions = {}; S.undo = []; S.redo = []; S.form = null; S.conflict = false;
  $("#banner").hidden = true;
  $("#dialogue-select").value = did;
  renderSplit();
  history.replaceState(null, "", `?dialogue=${encodeURIComponent(did)}`);
  await refreshValues();
  renderUtterances();
  select(firstUnlabelled());
  renderProblems();
  setStatus(data.draft ? "draft: its labels do not validate" : "", data.draft ? "error" : "");
}

function firstUnlabelled() {
  const i = S.labels.findIndex((l) => !l.length);
  return i < 0 ? 0 : i;
}

export async function changeSplit(split) {
  try {
    await api("PUT", dialoguePath(S.did, "/split"), {split: split || null});
    S.split = split || null;
    setStatus(`split: ${split || "(none)"}`, "ok");
    refreshList();
  } catch (e) { setStatus(`split not changed: ${e.message}`, "error"); }
  renderSplit();
}

// ---- JSON edit of one utterance's labels ----------------------------------------------------------
export function toggleJson() {
  const box = $("#json-box");
  box.hidden = !box.hidden;
  $("#json-text").value = JSON.stringify(S.labels[S.selected], null, 2);
  $("#json-error").textContent = "";
}

export function applyJson() {
  const uid = S.selected;
  let value;
  try { value = JSON.parse($("#json-text").value); } catch (e) {
    $("#json-error").textContent = `not JSON: ${e.message}`;
    return;
  }
  if (same(value, S.labels[uid])) { $("#json-box").hidden = true; return; }
  commit(uid, () => {
    const old = S.labels[uid];
    S.labels[uid] = value;
    const size = Array.isArray(value) ? value.length : 0;
    S.origins[uid] = Array.from({length: size}, (_, i) => (i < old.length && same(old[i], value[i]) ? S.origins[uid][i] : "manual"));
  });
}

// ---- import, vocabulary -------------------------------------------------------------------------------
async function fileOrText(fileInput, textArea, fallbackName) {
  const file = fileInput.files[0];
  const typed = textArea.value.trim();
  return {text: typed ? textArea.value : (file ? await file.text() : ""),
          name: file && !typed ? file.name : fallbackName};
}

export async function importTranscript() {
  $("#import-error").textContent = "";
  try {
    const {text, name} = await fileOrText($("#import-file"), $("#import-text"), "pasted transcript");
    const split = $("#import-split").value || null;
    const r = await api("POST", "/api/import", {text, name, split, dialogue_id: $("#import-id").value.trim() || null});
    $("#import-dialog").close();
    $("#import-text").value = ""; $("#import-id").value = ""; $("#import-file").value = "";
    await refreshList();
    await openDialogue(r.id);
    setStatus(`imported as dialogue ${r.id}${split ? ` into ${split}` : ""}`, "ok");
  } catch (e) {
    $("#import-error").textContent = e.message;
  }
}

export async function loadVocabulary() {
  $("#vocabulary-error").textContent = "";
  try {
    const {text, name} = await fileOrText($("#vocabulary-file"), $("#vocabulary-text"), "pasted vocabulary");
    const r = await api("POST", "/api/vocabulary", {text, name});
    $("#vocabulary-dialog").close();
    $("#vocabulary-text").value = ""; $("#vocabulary-file").value = "";
    await refreshValues();
    setStatus(`vocabulary: ${r.added} new value(s), ${r.size} in all`, "ok");
  } catch (e) {
    $("#vocabulary-error").textContent = e.message;
  }
}

window.S = S;  // the page's state, for the console and the browser tests
installKeys();
boot().catch((e) => setStatus(`cannot start: ${e.message}`, "error")).finally(() => { S.ready = true; });

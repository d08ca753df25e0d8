// The page's dialogs and boxes: import a transcript, load a vocabulary, edit one utterance's
// labels as JSON, and the question before leaving a dialogue whose edits were not saved.
import {api} from "./api.js";
import {$, same} from "./dom.js";
import {S, commit, openDialogue, refreshList, refreshValues, setStatus} from "./state.js";

export async function switchDialogue(did) {
  if (S.conflict && did !== S.did &&
      !confirm("This dialogue has edits that were not saved (conflict). Drop them?")) {
    $("#dialogue-select").value = S.did;
    return;
  }
  await openDialogue(did);
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
    await switchDialogue(r.id);
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

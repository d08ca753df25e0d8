// The page's state: the open dialogue's labels, the undo/redo history, autosave and refolding.
// Every committed edit goes through `commit` (one undo step, then a save of the whole dialogue).
import {api, dialoguePath} from "./api.js";
import {$, clone, same, setStatus} from "./dom.js";
import {closeForm} from "./forms.js";
import {refreshList} from "./main.js";
import {renderPanel, renderProblems, renderTracking, renderUtterances, showBanner} from "./render.js";

export const S = {
  schema: null, config: null, values: {patient: {}, doctor: {}, vocabulary: []},
  summaries: [], did: null, version: null, dialogue: null, split: null,
  labels: [], origins: [], suggestions: {}, states: null, problems: [],
  selected: null, form: null, undo: [], redo: [],
  saving: false, again: false, conflict: false, lastInput: null, ready: false,
};

// ---- speakers and the schema (all names come from the server's /api/schema) -----------------------
export const speakerOf = (uid) => S.dialogue.utterances[uid].speaker;
export const labelKey = (speaker) => S.schema[speaker].label_key;
export const taskOf = (uid) => S.schema[speakerOf(uid)].task;
export const patientSlot = (base) => S.schema.patient.slots.find((s) => s.base === base);
export const doctorSlot = (slot) => S.schema.doctor.slots.find((s) => s.slot === slot);
export const keyLabel = (key) => S.schema.slot_keys[key] || key;

export function splitKey(key) {
  for (const slot of S.schema.patient.slots) {
    if (slot.base === key && !slot.statuses.length) return {base: slot.base, status: null};
    for (const st of slot.statuses) if (st.key === key) return {base: slot.base, status: st.prefix};
  }
  return null;
}

// Values of a base slot in the state so far (the tracking box's heads), for autocompletion.
export function stateHeads(base) {
  const state = (S.states && S.states[S.selected]) || {};
  const out = [];
  for (const [key, entries] of Object.entries(state)) {
    const parsed = splitKey(key);
    if (parsed && parsed.base === base) for (const e of entries) if (typeof e.value === "string") out.push(e.value);
  }
  return out;
}

// Known values of a field: the release's own plus, for medical fields, the loaded vocabulary.
export function isNewValue(value, known, medical) {
  if (!medical || !value.trim()) return false;
  return !known.includes(value.trim()) && !S.values.vocabulary.includes(value.trim());
}

// ---- committing an edit: undo history, autosave, refold ----------------------------------------
function snapshot() { return {labels: clone(S.labels), origins: clone(S.origins), selected: S.selected}; }

export function commit(uid, change) {
  S.undo.push(snapshot());
  S.redo = [];
  change();
  afterChange(uid);
}

function afterChange(uid) {
  renderUtterances();
  if (uid !== null && uid !== undefined) S.selected = uid;
  renderPanel();
  save();
}

export function undo() {
  if (!S.undo.length) return;
  S.redo.push(snapshot());
  const prev = S.undo.pop();
  S.labels = prev.labels; S.origins = prev.origins;
  closeForm();
  afterChange(prev.selected);
}

export function redo() {
  if (!S.redo.length) return;
  S.undo.push(snapshot());
  const next = S.redo.pop();
  S.labels = next.labels; S.origins = next.origins;
  closeForm();
  afterChange(next.selected);
}

export async function save(overwrite = false) {
  if (!S.did || (S.conflict && !overwrite)) return;
  if (S.saving) { S.again = true; return; }
  S.saving = true;
  setStatus("saving...");
  const did = S.did;
  try {
    const body = {version: S.version, labels: S.labels, origins: S.origins, overwrite};
    const sent = clone(S.labels);
    const r = await api("PUT", dialoguePath(did), body);
    if (S.did !== did) return;  // another dialogue is open now (flush() waits, so: a reload)
    S.version = r.version; S.conflict = false;
    $("#banner").hidden = true;
    if (r.merged.length) {  // take the other save's labels, unless edited again meanwhile
      for (const uid of r.merged) {
        if (!same(S.labels[uid], sent[uid])) continue;
        S.labels[uid] = r.merged_labels[uid].label;
        S.origins[uid] = r.merged_labels[uid].origins;
      }
      showBanner(r.message, false);
      renderPanel();
    }
    S.problems = r.problems;
    setStatus(r.message, r.draft ? "error" : "ok");
    await refreshStates();
    refreshList();
  } catch (e) {
    if (e.status === 409) {
      S.conflict = true;
      showBanner(e.message, true);
      setStatus("NOT saved: conflict", "error");
    } else {
      setStatus(`NOT saved: ${e.message}`, "error");
    }
  } finally {
    S.saving = false;
    if (S.again) { S.again = false; save(); }
  }
}

// Let the save of the last edit land before the page shows another dialogue.
export async function flush() {
  while (S.saving || S.again) await new Promise((done) => setTimeout(done, 50));
}

export async function refreshStates() {
  try {
    const r = await api("POST", dialoguePath(S.did, "/states"), {labels: S.labels});
    S.states = r.states; S.problems = r.problems;
  } catch (e) {
    S.states = null;
  }
  renderUtterances();
  renderTracking();
  renderProblems();
}

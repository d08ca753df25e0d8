// The store: the page's state, its getters and its actions (labels with undo/redo and autosave,
// the open dialogue, the lists the server keeps). It imports no view, so every import points from
// the views to it: an action changes the state and notifies the views subscribed to that change
// (main.js wires them at start-up), which then draw from the state.
// Labels change only through `commit`, undo/redo and a save's merge (one undo step each, then a
// save of the whole dialogue); the selection, the open form and the suggestions are the views' own.
import {api, dialoguePath} from "./api.js";
import {clone, same} from "./dom.js";

export const S = {
  schema: null, config: null, values: {patient: {}, doctor: {}, vocabulary: []},
  summaries: [], did: null, version: null, dialogue: null, split: null,
  labels: [], origins: [], suggestions: {}, states: null, problems: [],
  selected: null, form: null, undo: [], redo: [],
  saving: false, again: false, conflict: false, lastInput: null, ready: false,
  status: {text: "", kind: ""}, banner: null,
};

// ---- subscribers ---------------------------------------------------------------------------------
// A change is one of: status, banner, list, values, split, restored (undo/redo replaced the
// labels), labels, states, dialogue (another one is open), opened (and its values are loaded).
const subscribers = new Map();

export function subscribe(change, ...views) {
  subscribers.set(change, [...(subscribers.get(change) || []), ...views]);
}

function notify(...changes) {
  for (const change of changes) for (const view of subscribers.get(change) || []) view();
}

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

export function firstUnlabelled() {
  const i = S.labels.findIndex((l) => !l.length);
  return i < 0 ? 0 : i;
}

export function setStatus(text, kind) {
  S.status = {text, kind: kind || ""};
  notify("status");
}

function setBanner(banner) {
  S.banner = banner;
  notify("banner");
}

// ---- the server's lists, the open dialogue -------------------------------------------------------
export async function refreshList() {
  S.summaries = (await api("GET", "/api/dialogues")).dialogues;
  notify("list");
}

export async function refreshValues() {
  S.values = await api("GET", "/api/values");
  notify("values");
}

export async function openDialogue(did) {
  await flush();
  const data = await api("GET", dialoguePath(did));
  S.did = did; S.version = data.version; S.dialogue = data.dialogue; S.split = data.split;
  S.labels = data.dialogue.utterances.map((u) => clone(u[labelKey(u.speaker)] || []));
  S.origins = data.origins;
  S.states = data.states; S.problems = data.problems;
  S.suggestions = {}; S.undo = []; S.redo = []; S.form = null; S.conflict = false;
  setBanner(null);
  notify("dialogue");
  await refreshValues();
  notify("opened");
  setStatus(data.draft ? "draft: its labels do not validate" : "", data.draft ? "error" : "");
}

export async function changeSplit(split) {
  try {
    await api("PUT", dialoguePath(S.did, "/split"), {split: split || null});
    S.split = split || null;
    setStatus(`split: ${split || "(none)"}`, "ok");
    refreshList();
  } catch (e) { setStatus(`split not changed: ${e.message}`, "error"); }
  notify("split");
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
  if (uid !== null && uid !== undefined) S.selected = uid;
  notify("labels");
  save();
}

export function undo() {
  if (!S.undo.length) return;
  S.redo.push(snapshot());
  const prev = S.undo.pop();
  S.labels = prev.labels; S.origins = prev.origins;
  notify("restored");
  afterChange(prev.selected);
}

export function redo() {
  if (!S.redo.length) return;
  S.undo.push(snapshot());
  const next = S.redo.pop();
  S.labels = next.labels; S.origins = next.origins;
  notify("restored");
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
    setBanner(null);
    if (r.merged.length) {  // take the other save's labels, unless edited again meanwhile
      for (const uid of r.merged) {
        if (!same(S.labels[uid], sent[uid])) continue;
        S.labels[uid] = r.merged_labels[uid].label;
        S.origins[uid] = r.merged_labels[uid].origins;
      }
      setBanner({text: r.message, conflict: false});
      notify("labels");
    }
    S.problems = r.problems;
    setStatus(r.message, r.draft ? "error" : "ok");
    await refreshStates();
    refreshList();
  } catch (e) {
    if (e.status === 409) {
      S.conflict = true;
      setBanner({text: e.message, conflict: true});
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
async function flush() {
  while (S.saving || S.again) await new Promise((done) => setTimeout(done, 50));
}

async function refreshStates() {
  try {
    const r = await api("POST", dialoguePath(S.did, "/states"), {labels: S.labels});
    S.states = r.states; S.problems = r.problems;
  } catch (e) {
    S.states = null;
  }
  notify("states");
}

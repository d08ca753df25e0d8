// MediTOD annotation page. Labels live here while edited; the server folds states, validates,
// suggests and saves (every committed edit is saved at once). Text from the release is only ever
// set with textContent.
"use strict";

const S = {
  schema: null, config: null, values: {patient: {}, doctor: {}},
  summaries: [], did: null, version: null, dialogue: null,
  labels: [], origins: [], suggestions: {}, states: null, problems: [],
  selected: null, form: null, undo: [], redo: [],
  saving: false, again: false, conflict: false, lastInput: null, ready: false,
};
const $ = (sel) => document.querySelector(sel);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined) node.append(c);
  return node;
}
const clone = (x) => JSON.parse(JSON.stringify(x));
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

async function api(method, path, body) {
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

function setStatus(text, kind) {
  const node = $("#save-status");
  node.textContent = text;
  node.className = kind || "";
}

// ---- speakers and the schema ---------------------------------------------------------------
const speakerOf = (uid) => S.dialogue.utterances[uid].speaker;
// which task labels a speaker's utterances (and under which key): the server's schema says
const labelTask = (uid) => S.schema.labels[speakerOf(uid)].task;
const patientSlot = (base) => S.schema.patient.slots.find((s) => s.base === base);
const doctorSlot = (slot) => S.schema.doctor.slots.find((s) => s.slot === slot);

function splitKey(key) {
  for (const slot of S.schema.patient.slots) {
    if (slot.base === key && !slot.statuses.length) return {base: slot.base, status: null};
    for (const st of slot.statuses) if (st.key === key) return {base: slot.base, status: st.prefix};
  }
  return null;
}

// ---- loading ---------------------------------------------------------------------------------
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
  for (const split of S.config.splits) $("#split-select").append(el("option", {value: split, text: split}));
  S.schema = await api("GET", "/api/schema");
  await refreshList();
  const wanted = new URLSearchParams(location.search).get("dialogue");
  const first = S.summaries.find((d) => d.id === wanted) || S.summaries[0];
  if (first) await openDialogue(first.id);
}

async function refreshList() {
  S.summaries = (await api("GET", "/api/dialogues")).dialogues;
  const select = $("#dialogue-select");
  select.replaceChildren(...S.summaries.map((d) => el("option", {
    value: d.id,
    text: `${d.id} (${d.labelled}/${d.utterances})${d.draft ? " draft" : ""}${d.errors ? " \u26A0" : ""}`,
  })));
  if (S.did) select.value = S.did;
}

// Let the save of the last edit land before the page shows another dialogue.
async function flush() {
  while (S.saving || S.again) await new Promise((done) => setTimeout(done, 50));
}

async function openDialogue(did) {
  if (S.conflict && did !== S.did &&
      !confirm("This dialogue has edits that were not saved (conflict). Drop them?")) {
    $("#dialogue-select").value = S.did;
    return;
  }
  await flush();
  const data = await api("GET", `/api/dialogues/${encodeURIComponent(did)}`);
  S.did = did; S.version = data.version; S.dialogue = data.dialogue;
  S.labels = data.dialogue.utterances.map((u) => clone(u[S.schema.labels[u.speaker].key] || []));
  S.origins = data.origins;
  S.states = data.states; S.problems = data.problems;
  S.suggestions = {}; S.undo = []; S.redo = []; S.form = null; S.conflict = false;
  $("#banner").hidden = true;
  $("#dialogue-select").value = did;
  $("#split-select").value = data.split || "";
  history.replaceState(null, "", `?dialogue=${encodeURIComponent(did)}`);
  S.values = await api("GET", "/api/values");
  renderUtterances();
  select(firstUnlabelled());
  renderProblems();
  setStatus(data.draft ? "draft: its labels do not validate" : "", data.draft ? "error" : "");
}

function firstUnlabelled() {
  const i = S.labels.findIndex((l) => !l.length);
  return i < 0 ? 0 : i;
}

// ---- the dialogue box ------------------------------------------------------------------------
function renderUtterances() {
  const problemAt = new Set(S.problems.map((p) => p.uttr_id));
  const list = $("#utterances");
  list.replaceChildren(...S.dialogue.utterances.map((u, uid) => el("li", {
    class: [u.speaker, S.labels[uid].length ? "labelled" : "", problemAt.has(uid) ? "has-problem" : "",
            uid === S.selected ? "selected" : ""].join(" "),
    dataset: {uid: String(uid)}, tabindex: "-1",
    onclick: () => select(uid),
  }, el("span", {class: "mark"}), el("span", {class: "who", text: u.speaker === "doctor" ? "D" : "P"}),
     el("span", {class: "text", text: u.text}))));
  const done = S.labels.filter((l) => l.length).length;
  $("#progress-bar").style.width = `${(100 * done) / S.labels.length}%`;
  $("#progress-text").textContent = `${done} / ${S.labels.length} utterances labelled`;
}

function select(uid) {
  if (uid < 0 || uid >= S.labels.length) return;
  closeForm();
  S.selected = uid;
  for (const li of document.querySelectorAll("#utterances li")) {
    li.classList.toggle("selected", Number(li.dataset.uid) === uid);
  }
  const li = document.querySelector(`#utterances li[data-uid="${uid}"]`);
  if (li) li.scrollIntoView({block: "nearest"});
  renderPanel();
  if (!S.labels[uid].length && S.config.models[labelTask(uid)] && !S.suggestions[uid]) suggest(uid);
}

// ---- the panel: items, suggestions, questionnaire ----------------------------------------------
function summary(item, uid) {
  const show = (v) => (Array.isArray(v) ? v.join(" / ") : String(v));
  if (speakerOf(uid) === "patient") {
    const slots = Object.entries(item.slots || {}).map(([key, entries]) => `${key}: ` + entries.map((e) =>
      [e.value, ...Object.entries(e).filter(([k]) => k !== "value").map(([k, v]) => `${k}=${show(v)}`)]
        .filter((x) => x !== undefined).join(", ")).join("; "));
    return [item.intent, ...slots].join(" | ");
  }
  const slots = Object.entries(item).filter(([k]) => k !== "action").map(([slot, entries]) => `${slot}: ` +
    entries.map((e) => [e.value, ...(e.checks || []).map((c) => `?${c.type}${c.values ? `(${show(c.values)})` : ""}`)]
      .filter((x) => x !== undefined).join(" ")).join("; "));
  return [item.action, ...slots].join(" | ");
}

function renderPanel() {
  const uid = S.selected;
  $("#panel-empty").hidden = uid !== null;
  $("#panel-body").hidden = uid === null;
  if (uid === null) return;
  $("#uttr-text").textContent = `${speakerOf(uid) === "doctor" ? "Doctor" : "Patient"}: ${S.dialogue.utterances[uid].text}`;
  const items = S.labels[uid];
  $("#item-count").textContent = `(${items.length})`;
  $("#items").replaceChildren(...items.map((item, i) => el("li", {dataset: {index: String(i)}},
    el("span", {class: `badge ${S.origins[uid][i]}`, text: S.origins[uid][i]}),
    el("span", {class: "summary", text: summary(item, uid)}),
    el("button", {type: "button", class: "edit", title: "edit", text: "\u270E", onclick: () => openForm(uid, i, item)}),
    el("button", {type: "button", class: "up", title: "move up", text: "\u2191", onclick: () => moveItem(uid, i, -1)}),
    el("button", {type: "button", class: "down", title: "move down", text: "\u2193", onclick: () => moveItem(uid, i, 1)}),
    el("button", {type: "button", class: "delete", title: "delete", text: "\u00D7", onclick: () => deleteItem(uid, i)}))));
  renderSuggestions();
  renderStatusBox();
  renderTracking();
  $("#json-box").hidden = true;
}

function renderSuggestions() {
  const uid = S.selected;
  const found = S.suggestions[uid];
  $("#suggestions-box").hidden = !(found && found.items && found.items.length);
  $("#suggest-note").textContent = found && found.note ? found.note : "";
  $("#suggest").hidden = !S.config.models[labelTask(uid)];
  if (!found || !found.items) return;
  $("#suggest-model").textContent = found.model ? `(${found.model})` : "";
  $("#suggestions").replaceChildren(...found.items.map((item, i) => el("li", {class: "suggestion", dataset: {index: String(i)}},
    el("span", {class: "badge suggestion", text: "suggestion"}),
    el("span", {class: "summary", text: summary(item, uid)}),
    el("button", {type: "button", class: "accept", text: "Accept", onclick: () => acceptSuggestion(uid, i)}),
    el("button", {type: "button", class: "edit", text: "Edit", onclick: () => openForm(uid, null, item, {suggestion: i})}),
    el("button", {type: "button", class: "dismiss", text: "Dismiss", onclick: () => dismissSuggestion(uid, i)}))));
}

async function suggest(uid) {
  S.suggestions[uid] = {items: [], note: "asking the model..."};
  renderSuggestions();
  try {
    const r = await api("POST", `/api/dialogues/${encodeURIComponent(S.did)}/suggest`, {labels: S.labels, uttr_id: uid});
    const items = Array.isArray(r.suggestion) ? r.suggestion : [];
    let note = "";
    if (r.suggestion === null) note = `no suggestion: ${r.reason}`;
    else if (!items.length) note = "the model suggests no item";
    S.suggestions[uid] = {items, note, model: r.model};
  } catch (e) {
    S.suggestions[uid] = {items: [], note: `no suggestion: ${e.message}`};
  }
  if (S.selected === uid) renderSuggestions();
}

function acceptSuggestion(uid, i) {
  const found = S.suggestions[uid];
  commit(uid, () => {
    S.labels[uid].push(clone(found.items[i]));
    S.origins[uid].push("suggested");
    found.items.splice(i, 1);
  });
}

function acceptAll() {
  const uid = S.selected;
  const found = S.suggestions[uid];
  if (uid === null || !found || !found.items.length) return;
  commit(uid, () => {
    for (const item of found.items) { S.labels[uid].push(clone(item)); S.origins[uid].push("suggested"); }
    found.items = [];
  });
}

function dismissSuggestion(uid, i) {
  S.suggestions[uid].items.splice(i, 1);
  renderSuggestions();
}

function moveItem(uid, i, by) {
  const j = i + by;
  if (j < 0 || j >= S.labels[uid].length) return;
  commit(uid, () => {
    for (const list of [S.labels[uid], S.origins[uid]]) [list[i], list[j]] = [list[j], list[i]];
  });
}

function deleteItem(uid, i) {
  commit(uid, () => { S.labels[uid].splice(i, 1); S.origins[uid].splice(i, 1); });
}

// ---- committing an edit: undo history, autosave, refold ------------------------------------------
function snapshot() { return {labels: clone(S.labels), origins: clone(S.origins), selected: S.selected}; }

function commit(uid, change) {
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

function undo() {
  if (!S.undo.length) return;
  S.redo.push(snapshot());
  const prev = S.undo.pop();
  S.labels = prev.labels; S.origins = prev.origins;
  closeForm();
  afterChange(prev.selected);
}

function redo() {
  if (!S.redo.length) return;
  S.undo.push(snapshot());
  const next = S.redo.pop();
  S.labels = next.labels; S.origins = next.origins;
  closeForm();
  afterChange(next.selected);
}

async function save(overwrite = false) {
  if (!S.did || (S.conflict && !overwrite)) return;
  if (S.saving) { S.again = true; return; }
  S.saving = true;
  setStatus("saving...");
  const did = S.did;
  try {
    const body = {version: S.version, labels: S.labels, origins: S.origins, overwrite};
    const sent = clone(S.labels);
    const r = await api("PUT", `/api/dialogues/${encodeURIComponent(did)}`, body);
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

function showBanner(text, conflict) {
  $("#banner").hidden = false;
  $("#banner").classList.toggle("conflict", conflict);
  $("#banner-text").textContent = text;
  $("#banner-reload").hidden = !conflict;
  $("#banner-overwrite").hidden = !conflict;
}

async function refreshStates() {
  try {
    const r = await api("POST", `/api/dialogues/${encodeURIComponent(S.did)}/states`, {labels: S.labels});
    S.states = r.states; S.problems = r.problems;
  } catch (e) {
    S.states = null;
  }
  renderUtterances();
  renderTracking();
  renderProblems();
}

// ---- status box, tracking box, problems ------------------------------------------------------------
function renderStatusBox() {
  $("#statusbox").textContent = JSON.stringify(S.labels[S.selected], null, 2);
}

function renderTracking() {
  const box = $("#tracking");
  if (S.selected === null) { box.replaceChildren(); return; }
  if (!S.states) { box.replaceChildren(el("p", {class: "error", text: "state unavailable: the labels have errors"})); return; }
  const state = S.states[S.selected] || {};
  const rows = Object.entries(state).map(([key, entries]) => {
    const parsed = splitKey(key);
    const kind = parsed && parsed.status ? ({avail: "positive", unavail: "negative"}[parsed.status] || parsed.status) : "plain";
    return el("div", {class: "slot", dataset: {key}}, el("strong", {text: `${key}: `}),
      entries.map((e) => {
        const shown = e.value !== undefined ? e.value : Object.entries(e).map(([k, v]) => `${k}=${v}`).join(", ");
        return el("span", {class: `chip ${kind}`, title: JSON.stringify(e), text: shown,
          onmousedown: (ev) => { ev.preventDefault(); insertValue(e.value !== undefined ? e.value : shown); }});
      }));
  });
  box.replaceChildren(...(rows.length ? rows : [el("p", {class: "muted", text: "(empty so far)"})]));
}

function insertValue(value) {
  const input = S.lastInput;
  if (!input || !document.body.contains(input)) return;
  input.value = value;
  input.dispatchEvent(new Event("input", {bubbles: true}));
  input.focus();
}

function renderProblems() {
  const list = $("#problems");
  $("#problem-count").textContent = S.problems.length ? `(${S.problems.length})` : "";
  list.replaceChildren(...S.problems.map((p) => el("li", {class: p.error ? "error" : "warning",
    text: `${p.error ? "error" : "warning"}${p.uttr_id !== null ? `, utterance ${p.uttr_id}` : ""}: ${p.message}`,
    onclick: () => (p.uttr_id !== null ? select(p.uttr_id) : null)})));
}

// ---- the questionnaire ---------------------------------------------------------------------------
function datalist(id, values) {
  let node = document.getElementById(id);
  if (!node) { node = el("datalist", {id}); document.body.append(node); }
  node.replaceChildren(...[...new Set(values)].sort().map((v) => el("option", {value: v})));
  return id;
}

function stateHeads(base) {
  const state = (S.states && S.states[S.selected]) || {};
  const out = [];
  for (const [key, entries] of Object.entries(state)) {
    const parsed = splitKey(key);
    if (parsed && parsed.base === base) for (const e of entries) if (typeof e.value === "string") out.push(e.value);
  }
  return out;
}

function textInput(cls, value, list, attr) {
  const input = el("input", {type: "text", class: cls, list, dataset: attr ? {attr} : {}});
  input.value = value === undefined || value === null ? "" : String(value);
  input.addEventListener("focus", () => { S.lastInput = input; });
  return input;
}

// A list-valued answer: one input per value (values may contain commas), a blank one at the end.
function listInput(values, list, attr) {
  const box = el("div", {class: "f-list", dataset: {attr}});
  const add = (v) => {
    const input = textInput("f-list-item", v, list);
    input.addEventListener("input", () => {
      const inputs = box.querySelectorAll("input");
      if (inputs[inputs.length - 1].value !== "") add("");
    });
    box.append(input);
  };
  for (const v of values || []) add(v);
  add("");
  return box;
}

const listValues = (box) => [...box.querySelectorAll("input")].map((i) => i.value.trim()).filter((v) => v);

function openForm(uid, index, preset, extra = {}) {
  S.form = {uid, index, suggestion: extra.suggestion, original: preset ? clone(preset) : null};
  const form = $("#form");
  form.hidden = false;
  if (speakerOf(uid) === "patient") patientForm(form, preset);
  else doctorForm(form, preset);
  form.append(el("div", {class: "row"},
    el("button", {type: "button", id: "f-submit", text: index === null ? "Add item (Ctrl+Enter)" : "Update item (Ctrl+Enter)", onclick: submitForm}),
    el("button", {type: "button", id: "f-cancel", text: "Cancel (Esc)", onclick: closeForm}),
    el("span", {id: "f-error", class: "error"})));
  form.querySelector("select").focus();
}

function closeForm() {
  S.form = null;
  const form = $("#form");
  form.hidden = true;
  form.replaceChildren();
}

function kindSelect(id, options, value, placeholder) {
  const sel = el("select", {id},
    el("option", {value: "", text: placeholder}),
    options.map((o) => el("option", {value: o.name, title: o.help, text: o.name})));
  sel.value = value || "";
  return sel;
}

function patientForm(form, preset) {
  const item = preset || {};
  form.replaceChildren(
    el("div", {class: "field"}, el("label", {for: "f-intent", text: "What is the patient's intent?"}),
      kindSelect("f-intent", S.schema.patient.intents, item.intent, "-- select an intent --")),
    el("div", {id: "f-slots"}),
    el("button", {type: "button", id: "f-add-slot", text: "+ Slot", onclick: () => addPatientSlot(null, {})}));
  for (const [key, entries] of Object.entries(item.slots || {})) for (const e of entries) addPatientSlot(key, e);
}

function addPatientSlot(key, entry) {
  const parsed = key ? splitKey(key) : null;
  const block = el("div", {class: "slot-block", dataset: {original: JSON.stringify(entry), key: key || ""}});
  const base = el("select", {class: "f-base"}, el("option", {value: "", text: "-- slot type --"}),
    S.schema.patient.slots.map((s) => el("option", {value: s.base, title: s.help, text: s.base.replace(/_/g, " ")})));
  const status = el("select", {class: "f-status"});
  const fields = el("div", {class: "f-attrs"});
  const remove = el("button", {type: "button", class: "f-remove", text: "remove slot", onclick: () => block.remove()});
  const draw = () => {
    const slot = patientSlot(base.value);
    const kept = collectAttrs(fields);
    status.replaceChildren(...(slot ? slot.statuses : []).map((s) => el("option", {value: s.prefix, text: s.label})));
    status.parentElement.hidden = !(slot && slot.statuses.length);
    if (slot && slot.statuses.length) status.previousSibling.textContent = slot.status_question;
    if (parsed && parsed.base === base.value && parsed.status) status.value = parsed.status;
    fields.replaceChildren();
    if (!slot) return;
    const original = parsed && parsed.base === slot.base ? entry : {};
    for (const attr of slot.attributes) {
      const value = attr.name in kept ? kept[attr.name] : original[attr.name];
      const known = [...((S.values.patient[slot.base] || {})[attr.name] || []),
                     ...(attr.name === "value" ? stateHeads(slot.base) : [])];
      const list = datalist(`dl-p-${slot.base}-${attr.name}`, known);
      const input = attr.list ? listInput(Array.isArray(value) ? value : (value ? [value] : []), list, attr.name)
                              : textInput("f-attr", value, list, attr.name);
      fields.append(el("div", {class: "field"},
        el("label", {class: attr.medical ? "medical" : "", title: attr.name, text: attr.question}), input));
    }
    const unknown = Object.keys(original).filter((k) => !slot.attributes.some((a) => a.name === k));
    if (unknown.length) fields.append(el("p", {class: "muted", text: `kept as they are: ${unknown.join(", ")}`}));
  };
  base.addEventListener("change", draw);
  block.append(el("div", {class: "field"}, el("label", {text: "Slot type"}), base),
    el("div", {class: "field"}, el("label", {text: ""}), status), fields, remove);
  $("#f-slots").append(block);
  if (parsed) base.value = parsed.base;
  draw();
  if (!parsed) base.focus();
}

function collectAttrs(fields) {
  const out = {};
  for (const node of fields.querySelectorAll(".f-attr, .f-list")) {
    out[node.dataset.attr] = node.classList.contains("f-list") ? listValues(node) : node.value;
  }
  return out;
}

// Answers -> entry; keys keep the original entry's order, new ones follow in CMAS order.
function buildEntry(original, answers, slotAttrs) {
  const entry = {};
  const put = (k) => {
    if (!(k in answers)) { if (k in original) entry[k] = original[k]; return; }
    const v = answers[k];
    if (Array.isArray(v)) {
      if (v.length) entry[k] = same(v, original[k]) ? original[k] : v;
    } else if (String(v).trim() !== "") {
      entry[k] = String(original[k]) === v ? original[k] : v.trim();
    }
  };
  for (const k of Object.keys(original)) put(k);
  for (const k of slotAttrs) if (!(k in original)) put(k);
  return entry;
}

function readPatientItem() {
  const intent = $("#f-intent").value;
  if (!intent) throw new Error("choose the intent");
  const slots = {};
  for (const block of document.querySelectorAll("#f-slots .slot-block")) {
    const base = block.querySelector(".f-base").value;
    if (!base) continue;
    const slot = patientSlot(base);
    const status = slot.statuses.length ? block.querySelector(".f-status").value : null;
    const key = status ? `${status}_${base}` : base;
    const oldKey = block.dataset.key;
    const original = oldKey && splitKey(oldKey) && splitKey(oldKey).base === base ? JSON.parse(block.dataset.original) : {};
    const entry = buildEntry(original, collectAttrs(block.querySelector(".f-attrs")), slot.attributes.map((a) => a.name));
    (slots[key] = slots[key] || []).push(entry);
  }
  const original = S.form.original || {};
  const item = {};
  for (const k of Object.keys(original)) {
    if (k === "intent") item.intent = intent;
    else if (k === "slots") { if (Object.keys(slots).length) item.slots = slots; }
    else item[k] = original[k];
  }
  if (!("intent" in item)) item.intent = intent;
  if (!("slots" in item) && Object.keys(slots).length) item.slots = slots;
  // an existing item keeps `slots: {}` if it had it and still has no slot
  if (original.slots && !Object.keys(original.slots).length && !Object.keys(slots).length) item.slots = {};
  return item;
}

function doctorForm(form, preset) {
  const item = preset || {};
  form.replaceChildren(
    el("div", {class: "field"}, el("label", {for: "f-action", text: "What does the doctor do?"}),
      kindSelect("f-action", S.schema.doctor.actions, item.action, "-- select an action type --")),
    el("div", {id: "f-slots"}),
    el("button", {type: "button", id: "f-add-slot", text: "+ Slot", onclick: () => addDoctorSlot(null, {})}));
  for (const [slot, entries] of Object.entries(item)) {
    if (slot === "action") continue;
    for (const e of entries) addDoctorSlot(slot, e);
  }
}

function addDoctorSlot(slotName, entry) {
  const block = el("div", {class: "slot-block", dataset: {original: JSON.stringify(entry), slot: slotName || ""}});
  const slotSel = el("select", {class: "f-slot"}, el("option", {value: "", text: "-- slot --"}),
    S.schema.doctor.slots.map((s) => el("option", {value: s.slot, title: s.help, text: s.slot.replace(/_/g, " ")})));
  const body = el("div", {class: "f-body"});
  const draw = () => {
    const slot = doctorSlot(slotSel.value);
    body.replaceChildren();
    if (!slot) return;
    const original = slotSel.value === slotName ? entry : {};
    const known = [...((S.values.doctor[slot.slot] || {}).value || []),
                   ...((S.values.patient[slot.slot] || {}).value || []), ...stateHeads(slot.slot)];
    body.append(el("div", {class: "field"}, el("label", {class: slot.medical ? "medical" : "", text: slot.value_question}),
      textInput("f-value", original.value, datalist(`dl-d-${slot.slot}-value`, known))));
    const checks = el("div", {class: "checks"}, el("div", {class: "muted", text: "What does the doctor ask about it?"}));
    const given = Object.fromEntries((original.checks || []).map((c) => [c.type, c]));
    const types = [...slot.checks.map((c) => c.type), ...Object.keys(given).filter((t) => !slot.checks.some((c) => c.type === t))];
    for (const type of types) {
      const spec = slot.checks.find((c) => c.type === type);
      const box = el("input", {type: "checkbox", class: "f-check", dataset: {check: type}});
      box.checked = type in given;
      const values = listInput((given[type] || {}).values || [], datalist(`dl-d-${slot.slot}-${type}`, (S.values.doctor[slot.slot] || {})[type] || []), type);
      values.classList.add("f-check-values");
      values.hidden = !box.checked;
      box.addEventListener("change", () => { values.hidden = !box.checked; });
      checks.append(el("div", {class: "check"}, el("label", {}, box, ` ${type}`, el("span", {class: "muted", text: spec ? ` \u2014 ${spec.question}` : ""})), values));
    }
    const other = textInput("f-check-other", "", null);
    other.placeholder = "another check type";
    checks.append(el("div", {class: "check"}, other));
    body.append(checks);
  };
  slotSel.addEventListener("change", draw);
  block.append(el("div", {class: "field"}, el("label", {text: "Slot"}), slotSel), body,
    el("button", {type: "button", class: "f-remove", text: "remove slot", onclick: () => block.remove()}));
  $("#f-slots").append(block);
  if (slotName) slotSel.value = slotName;
  draw();
  if (!slotName) slotSel.focus();
}

function readDoctorItem() {
  const action = $("#f-action").value;
  if (!action) throw new Error("choose the action type");
  const slots = [];
  for (const block of document.querySelectorAll("#f-slots .slot-block")) {
    const slot = block.querySelector(".f-slot").value;
    if (!slot) continue;
    const original = block.dataset.slot === slot ? JSON.parse(block.dataset.original) : {};
    const oldChecks = Object.fromEntries((original.checks || []).map((c) => [c.type, c]));
    const checks = [];
    const pushCheck = (type, values) => {
      const old = oldChecks[type] || {};
      const check = {type};
      if (values.length) check.values = same(values, old.values) ? old.values : values;
      else if ("values" in old) check.values = [];
      checks.push(same(check, old) ? old : check);
    };
    const ticked = [...block.querySelectorAll(".f-check")].filter((b) => b.checked);
    const order = [...Object.keys(oldChecks).filter((t) => ticked.some((b) => b.dataset.check === t)),
                   ...ticked.map((b) => b.dataset.check).filter((t) => !(t in oldChecks))];
    for (const type of order) {
      const box = ticked.find((b) => b.dataset.check === type);
      pushCheck(type, listValues(box.closest(".check").querySelector(".f-check-values")));
    }
    const other = block.querySelector(".f-check-other");
    if (other && other.value.trim() && !order.includes(other.value.trim())) pushCheck(other.value.trim(), []);
    const answers = {value: block.querySelector(".f-value").value};
    const entry = buildEntry(original, answers, ["value"]);
    if (checks.length) entry.checks = same(checks, original.checks) ? original.checks : checks;
    else delete entry.checks;
    const ordered = {};
    for (const k of Object.keys(original)) if (k in entry) ordered[k] = entry[k];
    for (const k of Object.keys(entry)) if (!(k in ordered)) ordered[k] = entry[k];
    slots.push([slot, ordered]);
  }
  const item = {action};
  const original = S.form.original || {};
  const grouped = {};
  for (const [slot, entry] of slots) (grouped[slot] = grouped[slot] || []).push(entry);
  for (const k of Object.keys(original)) if (k !== "action" && k in grouped) item[k] = grouped[k];
  for (const k of Object.keys(grouped)) if (!(k in item)) item[k] = grouped[k];
  return item;
}

function submitForm() {
  if (!S.form) return;
  const {uid, index, suggestion, original} = S.form;
  let item;
  try {
    item = speakerOf(uid) === "patient" ? readPatientItem() : readDoctorItem();
  } catch (e) {
    $("#f-error").textContent = e.message;
    return;
  }
  closeForm();
  commit(uid, () => {
    if (index === null) {
      S.labels[uid].push(item);
      if (suggestion !== undefined) {
        S.origins[uid].push(same(item, original) ? "suggested" : "edited");
        S.suggestions[uid].items.splice(suggestion, 1);
      } else {
        S.origins[uid].push("manual");
      }
    } else {
      const was = S.origins[uid][index];
      S.labels[uid][index] = item;
      if (!same(item, original)) S.origins[uid][index] = was === "suggested" || was === "edited" ? "edited" : "manual";
    }
  });
}

// ---- JSON edit of one utterance's labels ----------------------------------------------------------
function toggleJson() {
  const box = $("#json-box");
  box.hidden = !box.hidden;
  $("#json-text").value = JSON.stringify(S.labels[S.selected], null, 2);
  $("#json-error").textContent = "";
}

function applyJson() {
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

// ---- import, split, keyboard ------------------------------------------------------------------------
async function importTranscript() {
  $("#import-error").textContent = "";
  try {
    const file = $("#import-file").files[0];
    const text = $("#import-text").value.trim() ? $("#import-text").value : (file ? await file.text() : "");
    const name = file && !$("#import-text").value.trim() ? file.name : "pasted transcript";
    const r = await api("POST", "/api/import", {text, name, dialogue_id: $("#import-id").value.trim() || null});
    $("#import-dialog").close();
    $("#import-text").value = ""; $("#import-id").value = ""; $("#import-file").value = "";
    await refreshList();
    await openDialogue(r.id);
    setStatus(`imported as dialogue ${r.id}`, "ok");
  } catch (e) {
    $("#import-error").textContent = e.message;
  }
}

function typing(target) {
  return ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName) || target.isContentEditable;
}

document.addEventListener("keydown", (ev) => {
  const ctrl = ev.ctrlKey || ev.metaKey;
  if (ctrl && ev.key.toLowerCase() === "s") { ev.preventDefault(); save(); return; }
  if (ctrl && ev.key === "Enter" && S.form) { ev.preventDefault(); submitForm(); return; }
  if (ev.key === "Escape" && S.form) { ev.preventDefault(); closeForm(); return; }
  if (typing(ev.target)) return;
  if (ctrl && ev.key.toLowerCase() === "z") { ev.preventDefault(); (ev.shiftKey ? redo : undo)(); return; }
  if (ctrl && ev.key.toLowerCase() === "y") { ev.preventDefault(); redo(); return; }
  if (ctrl || ev.altKey || !S.dialogue) return;
  if (ev.key === "ArrowDown" || ev.key === "j") { ev.preventDefault(); select((S.selected ?? -1) + 1); }
  else if (ev.key === "ArrowUp" || ev.key === "k") { ev.preventDefault(); select((S.selected ?? 1) - 1); }
  else if (ev.key === "Enter" && S.selected !== null && !S.form && ev.target.tagName !== "BUTTON") { ev.preventDefault(); openForm(S.selected, null, null); }
  else if (ev.key === "a") { ev.preventDefault(); acceptAll(); }
  else if (ev.key === "?") { ev.preventDefault(); $("#help-dialog").showModal(); }
});

$("#dialogue-select").addEventListener("change", (ev) => openDialogue(ev.target.value));
$("#split-select").addEventListener("change", async (ev) => {
  try {
    await api("PUT", `/api/dialogues/${encodeURIComponent(S.did)}/split`, {split: ev.target.value || null});
    setStatus(`split: ${ev.target.value || "(none)"}`, "ok");
    refreshList();
  } catch (e) { setStatus(`split not changed: ${e.message}`, "error"); }
});
$("#add-item").addEventListener("click", () => openForm(S.selected, null, null));
$("#suggest").addEventListener("click", () => suggest(S.selected));
$("#accept-all").addEventListener("click", acceptAll);
$("#json-toggle").addEventListener("click", toggleJson);
$("#json-apply").addEventListener("click", applyJson);
$("#save").addEventListener("click", () => save());
$("#undo").addEventListener("click", undo);
$("#redo").addEventListener("click", redo);
$("#banner-reload").addEventListener("click", () => openDialogue(S.did));
$("#banner-overwrite").addEventListener("click", () => save(true));
$("#import-open").addEventListener("click", () => $("#import-dialog").showModal());
$("#import-go").addEventListener("click", importTranscript);
$("#import-cancel").addEventListener("click", () => $("#import-dialog").close());
$("#help-open").addEventListener("click", () => $("#help-dialog").showModal());
$("#help-close").addEventListener("click", () => $("#help-dialog").close());
window.addEventListener("beforeunload", (ev) => { if (S.saving || S.conflict || S.form) { ev.preventDefault(); ev.returnValue = ""; } });

boot().catch((e) => setStatus(`cannot start: ${e.message}`, "error")).finally(() => { S.ready = true; });

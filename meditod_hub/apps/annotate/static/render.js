// Drawing the page from the store: the dialogue list, the dialogue box, the panel (items and
// suggestions), the status, tracking and problems boxes, the banner. main.js subscribes these
// functions to the store's changes; nothing here changes labels except through commit.
import {api, dialoguePath} from "./api.js";
import {$, clone, el} from "./dom.js";
import {closeForm, openForm} from "./forms.js";
import {S, commit, firstUnlabelled, keyLabel, speakerOf, splitKey, taskOf} from "./state.js";

const show = (v) => (Array.isArray(v) ? v.join(" / ") : String(v));
const checkLabel = (slot, type) => {
  const spec = (S.schema.doctor.slots.find((s) => s.slot === slot) || {checks: []}).checks.find((c) => c.type === type);
  return spec ? spec.label : type.replace(/_/g, " ");
};

// ---- the dialogue box ----------------------------------------------------------------------------
export function renderUtterances() {
  const problemAt = new Set(S.problems.map((p) => p.uttr_id));
  const list = $("#utterances");
  list.replaceChildren(...S.dialogue.utterances.map((u, uid) => el("li", {
    class: [u.speaker, S.labels[uid].length ? "labelled" : "", problemAt.has(uid) ? "has-problem" : "",
            uid === S.selected ? "selected" : ""].join(" "),
    dataset: {uid: String(uid)}, tabindex: "-1",
    onclick: () => select(uid),
  }, el("span", {class: "num", title: "utterance number (problems name it)", text: String(uid)}),
     el("span", {class: "mark"}), el("span", {class: "who", text: u.speaker === "doctor" ? "D" : "P"}),
     el("span", {class: "text", text: u.text}))));
  const done = S.labels.filter((l) => l.length).length;
  $("#progress-bar").style.width = `${(100 * done) / S.labels.length}%`;
  $("#progress-text").textContent = `${done} / ${S.labels.length} utterances labelled`;
}

export function select(uid) {
  if (uid < 0 || uid >= S.labels.length) return;
  closeForm();
  S.selected = uid;
  for (const li of document.querySelectorAll("#utterances li")) {
    li.classList.toggle("selected", Number(li.dataset.uid) === uid);
  }
  const li = document.querySelector(`#utterances li[data-uid="${uid}"]`);
  if (li) li.scrollIntoView({block: "nearest"});
  renderPanel();
  if (!S.labels[uid].length && S.config.models[taskOf(uid)] && !S.suggestions[uid]) suggest(uid);
}

// ---- the panel: items, suggestions -----------------------------------------------------------------
// One line per label item, with human names for slot keys and check types.
export function summary(item, uid) {
  if (speakerOf(uid) === "patient") {
    const slots = Object.entries(item.slots || {}).map(([key, entries]) => `${keyLabel(key)}: ` + entries.map((e) =>
      [e.value, ...Object.entries(e).filter(([k]) => k !== "value").map(([k, v]) => `${k.replace(/_/g, " ")}=${show(v)}`)]
        .filter((x) => x !== undefined).join(", ")).join("; "));
    return [item.intent, ...slots].join(" | ");
  }
  const slots = Object.entries(item).filter(([k]) => k !== "action").map(([slot, entries]) => `${slot.replace(/_/g, " ")}: ` +
    entries.map((e) => [e.value, ...(e.checks || []).map((c) => `?${checkLabel(slot, c.type)}${c.values ? ` (${show(c.values)})` : ""}`)]
      .filter((x) => x !== undefined).join(" ")).join("; "));
  return [item.action, ...slots].join(" | ");
}

export function renderPanel() {
  const uid = S.selected;
  $("#panel-empty").hidden = uid !== null;
  $("#panel-body").hidden = uid === null;
  if (uid === null) return;
  $("#uttr-text").textContent = `${uid}. ${speakerOf(uid) === "doctor" ? "Doctor" : "Patient"}: ${S.dialogue.utterances[uid].text}`;
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

export function renderSuggestions() {
  const uid = S.selected;
  const found = S.suggestions[uid];
  $("#suggestions-box").hidden = !(found && found.items && found.items.length);
  $("#suggest-note").textContent = found && found.note ? found.note : "";
  $("#suggest").hidden = !S.config.models[taskOf(uid)];
  if (!found || !found.items) return;
  $("#suggest-model").textContent = found.model ? `(${found.model})` : "";
  $("#suggestions").replaceChildren(...found.items.map((item, i) => el("li", {class: "suggestion", dataset: {index: String(i)}},
    el("span", {class: "badge suggestion", text: "suggestion"}),
    el("span", {class: "summary", text: summary(item, uid)}),
    el("button", {type: "button", class: "accept", text: "Accept", onclick: () => acceptSuggestion(uid, i)}),
    el("button", {type: "button", class: "edit", text: "Edit", onclick: () => openForm(uid, null, item, {suggestion: i})}),
    el("button", {type: "button", class: "dismiss", text: "Dismiss", onclick: () => dismissSuggestion(uid, i)}))));
}

export async function suggest(uid) {
  S.suggestions[uid] = {items: [], note: "asking the model..."};
  renderSuggestions();
  try {
    const r = await api("POST", dialoguePath(S.did, "/suggest"), {labels: S.labels, uttr_id: uid});
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

export function acceptAll() {
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

// ---- status box, tracking box, problems, banner, save status -------------------------------------
function renderStatusBox() {
  const items = S.labels[S.selected];
  $("#statusbox").textContent = items.length ? items.map((item) => summary(item, S.selected)).join("\n")
                                             : "(no label yet)";
}

export function renderTracking() {
  const box = $("#tracking");
  if (S.selected === null) { box.replaceChildren(); return; }
  if (!S.states) { box.replaceChildren(el("p", {class: "error", text: "state unavailable: the labels have errors"})); return; }
  const state = S.states[S.selected] || {};
  const rows = Object.entries(state).map(([key, entries]) => {
    const parsed = splitKey(key);
    const kind = parsed && parsed.status ? ({avail: "positive", unavail: "negative"}[parsed.status] || parsed.status) : "plain";
    return el("div", {class: "slot", dataset: {key}}, el("strong", {title: key, text: `${keyLabel(key)}: `}),
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

export function renderProblems() {
  const list = $("#problems");
  $("#problem-count").textContent = S.problems.length ? `(${S.problems.length})` : "";
  list.replaceChildren(...S.problems.map((p) => el("li", {class: p.error ? "error" : "warning",
    text: `${p.error ? "error" : "warning"}${p.uttr_id !== null ? `, utterance ${p.uttr_id}` : ""}: ${p.message}`,
    onclick: () => (p.uttr_id !== null ? select(p.uttr_id) : null)})));
}

// The banner: another tab's save merged in, or a conflict (then reload or overwrite).
export function renderBanner() {
  const banner = S.banner;
  $("#banner").hidden = !banner;
  if (!banner) return;
  $("#banner").classList.toggle("conflict", banner.conflict);
  $("#banner-text").textContent = banner.text;
  $("#banner-reload").hidden = !banner.conflict;
  $("#banner-overwrite").hidden = !banner.conflict;
}

export function renderStatus() {
  const node = $("#save-status");
  node.textContent = S.status.text;
  node.className = S.status.kind;
}

// ---- the control bar: dialogue list, vocabulary size, split; a dialogue opened -------------------
export function renderList() {
  const select = $("#dialogue-select");
  select.replaceChildren(...S.summaries.map((d) => el("option", {
    value: d.id,
    text: `${d.id} (${d.labelled}/${d.utterances})${d.split ? "" : " no split"}${d.draft ? " draft" : ""}${d.errors ? " \u26A0" : ""}`,
  })));
  if (S.did) select.value = S.did;
}

// The count is the canonical values the page knows: the release's own medical values and the
// loaded vocabulary (before: the vocabulary alone, "0 canonical values loaded" on a labelled release).
export function renderValues() {
  const inRelease = S.values.release_canonical, loaded = S.values.vocabulary;
  const all = new Set([...inRelease, ...loaded]).size;
  $("#vocabulary-size").textContent = `${all} canonical value${all === 1 ? "" : "s"} ` +
    `(${inRelease.length} in this release, ${loaded.length} loaded)`;
}

// Another dialogue is open: the list and the split box show it at once, the address names it (a
// reload opens it again); once its values are loaded, it is drawn from its first unlabelled utterance.
export function showDialogue() {
  $("#dialogue-select").value = S.did;
  renderSplit();
  history.replaceState(null, "", `?dialogue=${encodeURIComponent(S.did)}`);
}

export function drawDialogue() {
  renderUtterances();
  select(firstUnlabelled());
  renderProblems();
}

// The split box: a dialogue in no split cannot be built, and says so.
export function renderSplit() {
  const select = $("#split-select");
  select.value = S.split || "";
  select.classList.toggle("missing", !S.split);
  $("#split-note").textContent = S.split ? "" : "no split: the build needs one";
}

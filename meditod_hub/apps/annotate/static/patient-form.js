// The patient questionnaire: an intent, then slots; each slot type asks its own questions (rare
// ones folded into sections, never-asked spellings shown only when an entry already has them).
import {$, datalist, el} from "./dom.js";
import {buildEntry, collectAttrs, kindSelect, listInput, textInput} from "./inputs.js";
import {S, patientSlot, splitKey, stateHeads} from "./state.js";

export function patientForm(form, preset) {
  const item = preset || {};
  form.replaceChildren(
    el("div", {class: "field"}, el("label", {for: "f-intent", text: "What is the patient's intent?"}),
      kindSelect("f-intent", S.schema.patient.intents, item.intent, "-- select an intent --")),
    el("div", {id: "f-slots"}),
    el("button", {type: "button", id: "f-add-slot", text: "+ Slot", onclick: () => addPatientSlot(null, {})}));
  for (const [key, entries] of Object.entries(item.slots || {})) for (const e of entries) addPatientSlot(key, e);
}

function attributeField(slot, attr, value) {
  const known = [...((S.values.patient[slot.base] || {})[attr.name] || []),
                 ...(attr.name === "value" ? stateHeads(slot.base) : [])];
  const list = datalist(`dl-p-${slot.base}-${attr.name}`, [...known, ...(attr.medical ? S.values.vocabulary : [])]);
  const check = {known, medical: attr.medical};
  const input = attr.list ? listInput(Array.isArray(value) ? value : (value ? [value] : []), list, attr.name, check)
                          : textInput("f-attr", value, list, attr.name, check);
  return el("div", {class: "field"},
    el("label", {class: attr.medical ? "medical" : "", title: attr.name, text: attr.question}), input);
}

export function addPatientSlot(key, entry) {
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
    fields.append(el("p", {class: "muted", text: slot.help}));
    const original = parsed && parsed.base === slot.base ? entry : {};
    const sections = new Map();
    for (const attr of slot.attributes) {
      const value = attr.name in kept ? kept[attr.name] : original[attr.name];
      const present = value !== undefined && value !== "" && !(Array.isArray(value) && !value.length);
      if (attr.hidden && !present) continue;
      const field = attributeField(slot, attr, value);
      if (!attr.section) { fields.append(field); continue; }
      if (!sections.has(attr.section)) {
        const box = el("details", {class: "section"}, el("summary", {text: attr.section}));
        sections.set(attr.section, box);
        fields.append(box);
      }
      const box = sections.get(attr.section);
      box.append(field);
      if (present) box.open = true;
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

export function readPatientItem() {
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

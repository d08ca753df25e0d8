// The doctor questionnaire: an action type, then slots; each slot asks what the doctor names
// and which checks (onset, location, ...) the doctor asks about, by their human names.
import {$, datalist, el, same} from "./dom.js";
import {buildEntry, kindSelect, listInput, listValues, textInput} from "./inputs.js";
import {S, doctorSlot, stateHeads} from "./state.js";

export function doctorForm(form, preset) {
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

export function addDoctorSlot(slotName, entry) {
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
    const list = datalist(`dl-d-${slot.slot}-value`, [...known, ...(slot.medical ? S.values.vocabulary : [])]);
    body.append(el("div", {class: "field"}, el("label", {class: slot.medical ? "medical" : "", text: slot.value_question}),
      textInput("f-value", original.value, list, undefined, {known, medical: slot.medical})));
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
      checks.append(el("div", {class: "check"}, el("label", {title: type}, box, ` ${spec ? spec.label : type.replace(/_/g, " ")}`,
        el("span", {class: "muted", text: spec ? ` \u2014 ${spec.question}` : ""})), values));
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

export function readDoctorItem() {
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

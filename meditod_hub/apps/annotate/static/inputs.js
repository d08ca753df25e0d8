// The inputs both speakers' questionnaires are made of. A medical field checks its value against
// the release's values and the loaded vocabulary and says when the value is new.
import {el, same} from "./dom.js";
import {S, isNewValue} from "./state.js";

// A text box; with `check` = {known, medical}, a note beside it says when a medical value is new.
export function textInput(cls, value, list, attr, check) {
  const input = el("input", {type: "text", class: cls, list, dataset: attr ? {attr} : {}});
  input.value = value === undefined || value === null ? "" : String(value);
  input.addEventListener("focus", () => { S.lastInput = input; });
  if (!check || !check.medical) return input;
  const note = el("span", {class: "new-value", role: "status"});
  const flag = () => {
    const fresh = isNewValue(input.value, check.known, true);
    note.textContent = fresh ? "new value: not in the vocabulary nor in this release (check the canonical name)" : "";
    input.classList.toggle("is-new", fresh);
  };
  input.addEventListener("input", flag);
  flag();
  return el("span", {class: "checked-input"}, input, note);
}

// A list-valued answer: one input per value (values may contain commas), a blank one at the end.
export function listInput(values, list, attr, check) {
  const box = el("div", {class: "f-list", dataset: {attr}});
  const add = (v) => {
    const node = textInput("f-list-item", v, list, undefined, check);
    const input = node.tagName === "INPUT" ? node : node.querySelector("input");
    input.addEventListener("input", () => {
      const inputs = box.querySelectorAll("input");
      if (inputs[inputs.length - 1].value !== "") add("");
    });
    box.append(node);
  };
  for (const v of values || []) add(v);
  add("");
  return box;
}

export const listValues = (box) => [...box.querySelectorAll("input")].map((i) => i.value.trim()).filter((v) => v);

// The intent / action type: each option is its name alone, so the chosen one fits the box (with
// its sentence of help in the option, the box showed "inform — The patient gives spe"); the help of
// the chosen one is written under it, and every option's is its tooltip.
export function kindSelect(id, options, value, placeholder) {
  const sel = el("select", {id, class: "kind"},
    el("option", {value: "", text: placeholder}),
    options.map((o) => el("option", {value: o.name, title: o.help, text: o.name.replace(/_/g, " ")})));
  sel.value = value || "";
  const help = el("span", {class: "kind-help muted", id: `${id}-help`});
  const describe = () => { help.textContent = (options.find((o) => o.name === sel.value) || {}).help || ""; };
  sel.addEventListener("change", describe);
  describe();
  return el("span", {class: "kind-field"}, sel, help);
}

export function collectAttrs(fields) {
  const out = {};
  for (const node of fields.querySelectorAll(".f-attr, .f-list")) {
    out[node.dataset.attr] = node.classList.contains("f-list") ? listValues(node) : node.value;
  }
  return out;
}

// Answers -> entry; keys keep the original entry's order, new ones follow in CMAS order.
export function buildEntry(original, answers, slotAttrs) {
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

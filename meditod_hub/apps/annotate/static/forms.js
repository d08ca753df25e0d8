// The questionnaire's frame: open / close / submit; each speaker's form draws and reads its fields
// (patient-form.js, doctor-form.js, made of the inputs of inputs.js).
import {$, el, same} from "./dom.js";
import {doctorForm, readDoctorItem} from "./doctor-form.js";
import {patientForm, readPatientItem} from "./patient-form.js";
import {S, commit, speakerOf} from "./state.js";

export function openForm(uid, index, preset, extra = {}) {
  S.form = {uid, index, suggestion: extra.suggestion, original: preset ? JSON.parse(JSON.stringify(preset)) : null};
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

export function closeForm() {
  S.form = null;
  const form = $("#form");
  form.hidden = true;
  form.replaceChildren();
}

export function submitForm() {
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

// The guidelines page: the questionnaire's schema and the loaded vocabulary, as tables.
import {api} from "./api.js";
import {$, el} from "./dom.js";

const table = (rows) => el("table", {}, rows.map((cells) => el("tr", {}, cells.map((c) => el("td", {text: c})))));

async function render() {
  const [schema, values] = await Promise.all([api("GET", "/api/schema"), api("GET", "/api/values")]);
  const box = $("#guide");
  box.append(el("h2", {text: "Patient utterances: intents"}),
    table(schema.patient.intents.map((i) => [i.name, i.help])));
  box.append(el("h2", {text: "Patient slots and the questions each asks"}));
  for (const slot of schema.patient.slots) {
    box.append(el("h3", {text: `${slot.base.replace(/_/g, " ")}: ${slot.help}`}),
      slot.statuses.length ? el("p", {class: "muted", text: `${slot.status_question} ${slot.statuses.map((s) => `${s.label} = ${s.key}`).join("; ")}`}) : null,
      table(slot.attributes.filter((a) => !a.hidden).map((a) => [a.name, a.question + (a.medical ? " (canonical)" : "") + (a.list ? " (a list)" : "")])));
  }
  box.append(el("h2", {text: "Doctor utterances: action types"}),
    table(schema.doctor.actions.map((a) => [a.name, a.help])));
  box.append(el("h2", {text: "Doctor slots and checks"}),
    table(schema.doctor.slots.map((s) => [s.slot, s.value_question, s.checks.map((c) => `${c.label}: ${c.question}`).join("; ")])));
  box.append(el("h2", {text: `Ontology: the loaded vocabulary (${values.vocabulary.length} canonical values)`}),
    el("p", {class: "muted", text: values.vocabulary.length ? values.vocabulary.join(", ")
      : "none loaded: use the Vocabulary button on the annotation page, or start with meditod annotate --vocabulary FILE"}));
}

render().catch((e) => { $("#guide").textContent = `cannot load the schema: ${e.message}`; });

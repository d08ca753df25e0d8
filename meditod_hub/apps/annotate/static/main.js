// MediTOD annotation page, entry module: it wires the views to the store and boots the page.
// Labels live in the store (state.js) while edited; the server folds states, validates, suggests
// and saves (every committed edit is saved at once). Modules, each importing only those below it:
// api (HTTP), dom (helpers); state (the store: labels, undo/redo, save; it notifies, never draws);
// inputs, patient-form, doctor-form, forms (the questionnaire); render (drawing); dialogs (import,
// vocabulary, JSON edit); keys (keyboard and buttons); main, which nothing imports.
import {api} from "./api.js";
import {$, el} from "./dom.js";
import {closeForm} from "./forms.js";
import {installKeys} from "./keys.js";
import {drawDialogue, renderBanner, renderList, renderPanel, renderProblems, renderSplit, renderStatus,
        renderTracking, renderUtterances, renderValues, showDialogue} from "./render.js";
import {S, openDialogue, refreshList, refreshValues, setStatus, subscribe} from "./state.js";

// Which views draw again on which change of the store.
subscribe("status", renderStatus);
subscribe("banner", renderBanner);
subscribe("list", renderList);
subscribe("values", renderValues);
subscribe("split", renderSplit);
subscribe("restored", closeForm);  // undo/redo replaced the labels an open form was editing
subscribe("labels", renderUtterances, renderPanel);
subscribe("states", renderUtterances, renderTracking, renderProblems);
subscribe("dialogue", showDialogue);
subscribe("opened", drawDialogue);

// The configuration and the schema are read once, here; the store holds them.
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
  for (const split of S.config.splits) {
    $("#split-select").append(el("option", {value: split, text: split}));
    $("#import-split").append(el("option", {value: split, text: split}));
  }
  $("#import-split").value = S.config.splits[0];
  S.schema = await api("GET", "/api/schema");
  await refreshValues();
  await refreshList();
  const wanted = new URLSearchParams(location.search).get("dialogue");
  const first = S.summaries.find((d) => d.id === wanted) || S.summaries[0];
  if (first) await openDialogue(first.id);
  else {  // an empty folder opens on the import box (the README says so)
    $("#panel-empty").textContent = "No dialogues yet: import a transcript (\"Import transcript\", top left) to start.";
    $("#import-dialog").showModal();
  }
}

window.S = S;  // the page's state, for the console and the browser tests
installKeys();
boot().catch((e) => setStatus(`cannot start: ${e.message}`, "error")).finally(() => { S.ready = true; });

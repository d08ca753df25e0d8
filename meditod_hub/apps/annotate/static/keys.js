// Keyboard shortcuts and the buttons' handlers: the page's only event wiring outside the forms.
import {applyJson, importTranscript, loadVocabulary, switchDialogue, toggleJson} from "./dialogs.js";
import {$} from "./dom.js";
import {closeForm, openForm, submitForm} from "./forms.js";
import {acceptAll, select, suggest} from "./render.js";
import {S, changeSplit, openDialogue, redo, save, undo} from "./state.js";

const typing = (target) => ["INPUT", "TEXTAREA", "SELECT"].includes(target.tagName) || target.isContentEditable;

function onKey(ev) {
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
}

export function installKeys() {
  document.addEventListener("keydown", onKey);
  const on = (id, handler, event = "click") => $(id).addEventListener(event, handler);
  on("#dialogue-select", (ev) => switchDialogue(ev.target.value), "change");
  on("#split-select", (ev) => changeSplit(ev.target.value), "change");
  on("#add-item", () => openForm(S.selected, null, null));
  on("#suggest", () => suggest(S.selected));
  on("#accept-all", acceptAll);
  on("#json-toggle", toggleJson);
  on("#json-apply", applyJson);
  on("#save", () => save());
  on("#undo", undo);
  on("#redo", redo);
  on("#banner-reload", () => openDialogue(S.did));
  on("#banner-overwrite", () => save(true));
  on("#import-open", () => $("#import-dialog").showModal());
  on("#import-go", importTranscript);
  on("#import-cancel", () => $("#import-dialog").close());
  on("#vocabulary-open", () => $("#vocabulary-dialog").showModal());
  on("#vocabulary-go", loadVocabulary);
  on("#vocabulary-cancel", () => $("#vocabulary-dialog").close());
  on("#help-open", () => $("#help-dialog").showModal());
  on("#help-close", () => $("#help-dialog").close());
  window.addEventListener("beforeunload", (ev) => { if (S.saving || S.conflict || S.form) { ev.preventDefault(); ev.returnValue = ""; } });
}

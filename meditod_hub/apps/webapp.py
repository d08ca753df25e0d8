"""The chat app: `meditod app`, and the top-level `app.py` a Hub Space runs (a Gradio Blocks app).

    meditod app                                     # the tiny offline models (make tiny-runs)
    MEDITOD_NLU=org/meditod-llama3-8b-nlu MEDITOD_POL=... MEDITOD_NLG=... meditod app
    meditod app --port 7861                         # or GRADIO_SERVER_PORT=7861: Gradio's own
    meditod app --host 0.0.0.0                      # settings apply; 0.0.0.0: on your network

Models come from, in order: environment variables `MEDITOD_NLU`, `MEDITOD_POL`, `MEDITOD_NLG`
(a run folder, a model folder or a Hub id; `MEDITOD_<TASK>_REVISION` and `MEDITOD_<TASK>_FAMILY`
beside them), the `meditod_app.json` settings file beside app.py (`make space` writes it), and
by default the tiny local runs `runs/tiny-llama/{nlu,pol,nlg}` (`make tiny-runs`). Runs that are
adapters of one base share it (`meditod_hub.models.adapters`). With `MEDITOD_ENDPOINT` (an OpenAI-
compatible base URL), the three stages are answered there under the names `nlu`, `pol`, `nlg`
(or `MEDITOD_<TASK>_SERVED_MODEL`): the vLLM multi-LoRA layout of recipes/llama3-8b/README.md.

The page streams the doctor's reply into the chat as NLG generates it, lists the actions chosen
on every turn, and exports the conversation with its tracked state as JSON or as a readable
transcript (on request only: the file is written to a temporary folder for the download,
removed when the app exits, and Gradio's cached copy after EXPORT_LIFETIME_S).

Privacy: nothing is stored by default. Gradio's run history (calls kept in the browser) and
its telemetry are off; the conversation lives in the page's session state and is gone when the
tab closes or "Reset" is pressed. Only where the server names a folder in `MEDITOD_SAVE_DIR`
does a "save this conversation" box appear; ticked, the transcript of that conversation (and
nothing else) is written there as `<conversation id>.json`.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from meditod_hub.apps.assistant import OPENING_LINE, Assistant, Conversation, not_a_patient_line
from meditod_hub.apps.state_view import STATE_CSS, actions_line, state_html, state_lines
from meditod_hub.errors import MeditodError, UsageError
from meditod_hub.files import atomic_write, output_folder, output_path
from meditod_hub.models.cascade import run_vocabulary, stages
from meditod_hub.models.predictor import DecodeOptions, ModelSpec

SETTINGS_FILE = "meditod_app.json"
EXPORT_LIFETIME_S = 3600
DEFAULT_RUNS = "runs/tiny-llama"
SAVE_DIR_ENV = "MEDITOD_SAVE_DIR"
TIMEOUT_ENV = "MEDITOD_TIMEOUT"  # seconds a turn waits for a server (MEDITOD_ENDPOINT, the Hub)
DEFAULT_TIMEOUT_S = 120.0
BANNER = ("**Research demo, not medical advice.** This assistant imitates a doctor taking a "
          "medical history: {trained_on}. It can be wrong, it does not diagnose, and nothing it "
          "says is advice: for a health problem, see a clinician. Conversations are not stored "
          "unless you tick the save box (when the server offers one).")
TITLE = "MediTOD history-taking assistant"


@dataclass
class AppArguments:
    host: str | None = field(default=None, metadata={
        "help": "address to listen on (default: GRADIO_SERVER_NAME, else 127.0.0.1, this machine "
                "only; 0.0.0.0 serves every network this machine is on, with no login)"})
    port: int | None = field(default=None, metadata={
        "min": 1, "max": 65535,
        "help": "port to listen on (default: GRADIO_SERVER_PORT, else 7860 or the next free one)"})


@dataclass(frozen=True)
class AppSettings:
    specs: dict[str, ModelSpec]   # each stage's model, by task name in cascade order
    save_dir: Path | None


def settings(environ: dict | None = None, base: Path | None = None) -> AppSettings:
    """The app's models and save folder from the environment, the settings file, the defaults."""
    environ = os.environ if environ is None else environ
    base = base or Path.cwd()
    stored = {}
    if (base / SETTINGS_FILE).is_file():
        try:
            stored = json.loads((base / SETTINGS_FILE).read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise UsageError(f"{base / SETTINGS_FILE}: invalid JSON ({exc.msg}); fix or delete "
                             "it") from None
    specs = {}
    endpoint = environ.get("MEDITOD_ENDPOINT") or stored.get("endpoint")
    timeout = _timeout(environ.get(TIMEOUT_ENV, DEFAULT_TIMEOUT_S))
    # a turn waits at most `timeout` for a server (the endpoint's own default, an hour, left a
    # browser waiting on a server that never answers); no patient's words are cached to disk
    served = {"timeout": timeout, "cache": None} if endpoint else {"timeout": timeout}
    for stage in stages():
        task = stage.name
        entry = stored.get(task, {})
        env = {key: environ.get(f"MEDITOD_{task.upper()}{suffix}")
               for key, suffix in (("source", ""), ("revision", "_REVISION"),
                                   ("family", "_FAMILY"), ("served_model", "_SERVED_MODEL"))}
        stored_source = entry.get("source")
        if stored_source and (base / stored_source).is_dir():  # a folder beside the app
            stored_source = str(base / stored_source)
        source = env["source"] or stored_source or str(base / DEFAULT_RUNS / task)
        if not (env["source"] or stored_source) and not Path(source).is_dir():
            raise UsageError(f"no {task.upper()} model: set MEDITOD_{task.upper()} (a run folder "
                             "or Hub id), or run `make tiny-runs` for the tiny offline models")
        specs[task] = ModelSpec(source, env["family"] or entry.get("family"),
                                env["revision"] or entry.get("revision"), endpoint=endpoint,
                                served_model=env["served_model"] or entry.get("served_model")
                                or (task if endpoint else None),
                                # as `meditod chat`: a served grammar needs the server's kind,
                                # and the run's training values are the vocabulary
                                decode=DecodeOptions(constrained=not endpoint, vocabulary=None
                                                     if endpoint or not stage.structured
                                                     else run_vocabulary(source)),
                                endpoint_options=served)
    save = environ.get(SAVE_DIR_ENV)  # checked now, not at the first ticked save
    return AppSettings(specs, output_folder(save, (), purpose="chat", what=SAVE_DIR_ENV)
                       if save else None)


def _timeout(text) -> float:
    try:
        seconds = float(text)
    except (TypeError, ValueError):
        seconds = float("nan")
    if not (0 < seconds <= 7 * 24 * 3600):
        raise UsageError(f"{TIMEOUT_ENV}={text}: give the seconds a turn waits for a server, "
                         "above 0 and at most a week")
    return seconds


# --- handlers: plain functions of (inputs) -> outputs, tested without a browser ----------------
def opening_history() -> list[dict]:
    return [{"role": "assistant", "content": OPENING_LINE}]


def action_history(conversation: Conversation | None) -> str:
    """Every turn's chosen actions, oldest first (the panel beside the chat)."""
    if not conversation or not conversation.turns:
        return "Actions: none yet."
    return "\n".join(f"{n}. {actions_line(turn.actions)}"
                     for n, turn in enumerate(conversation.turns, 1))


def panels(conversation: Conversation | None) -> tuple[str, str, str]:
    """State panel HTML (the last turn's), the action history, the last turn's status."""
    if not conversation or not conversation.turns:
        return state_html({}), action_history(None), "No turn yet."
    turn = conversation.turns[-1]
    status = [f"Turn {len(conversation.turns)}: " + ", ".join(
        f"{task.display_name} {'parsed' if stage.parse_ok else 'did not parse'}"
        for task, stage in turn.stages())]
    status += [f"- {note}" for note in turn.notes]
    return state_html(turn.state), action_history(conversation), "\n".join(status)


def respond_stream(assistant: Assistant, save_dir: Path | None, message: str, history: list,
                   conversation: Conversation | None, save: bool):
    """One patient message, yielded as it goes: the chat with the reply so far while NLG
    generates (where its backend streams), then the finished turn with the three panels."""
    if problem := not_a_patient_line(message or ""):  # no turn: the chat stays as it was
        state, actions, _ = panels(conversation)
        yield ("", list(history or opening_history()), conversation, state, actions,
               f"Nothing sent: {problem}.")
        return
    conversation = conversation or assistant.new_conversation(f"chat-{uuid.uuid4().hex[:12]}")
    history = list(history or opening_history()) + [{"role": "user", "content": message}]
    pieces: queue.Queue = queue.Queue()
    outcome: dict = {}

    def turn() -> None:
        try:
            outcome["turn"] = assistant.respond(conversation, message, stream=pieces.put)
        except BaseException as exc:  # raised again in the handler, where Gradio reports it
            outcome["error"] = exc
        finally:
            pieces.put(None)

    threading.Thread(target=turn, daemon=True).start()
    partial = ""
    while (piece := pieces.get()) is not None:
        partial += piece
        yield ("", history + [{"role": "assistant", "content": partial}], conversation,
               *panels(conversation))
    if "error" in outcome:
        raise outcome["error"]
    history.append({"role": "assistant", "content": outcome["turn"].reply})
    state, actions, status = panels(conversation)
    if save and save_dir:
        try:
            save_transcript(conversation, save_dir)
        except (MeditodError, OSError) as exc:  # the server's log says why, the page that it failed
            print(f"error: {SAVE_DIR_ENV}: the transcript of {conversation.dialogue_id} was not "
                  f"saved ({exc})", file=sys.stderr, flush=True)
            status += "\n- This conversation could not be saved on the server."
    yield ("", history, conversation, state, actions, status)


def respond(assistant: Assistant, save_dir: Path | None, message: str, history: list,
            conversation: Conversation | None, save: bool):
    """One patient message: the new chat history, the conversation, the three panels."""
    *_, last = respond_stream(assistant, save_dir, message, history, conversation, save)
    return last


def reset():
    return ("", opening_history(), None, *panels(None))


def conversation_record(conversation: Conversation) -> dict:
    """The conversation with its tracked state, as saved and exported: every turn's patient
    line, state, actions, reply and stage outputs."""
    return {"id": conversation.dialogue_id, "opening": conversation.opening,
            "turns": [t.to_dict() for t in conversation.turns]}


def transcript_text(conversation: Conversation) -> str:
    """The conversation as people read it: each line, then the state and actions it led to."""
    lines = [f"{TITLE}: conversation {conversation.dialogue_id}",
             "A research demo, not medical advice.", "", f"Doctor: {conversation.opening}"]
    for n, turn in enumerate(conversation.turns, 1):
        lines += ["", f"Patient: {turn.patient_text}", f"Doctor: {turn.reply}",
                  f"  [turn {n}] actions: {actions_line(turn.actions)}", "  state:"]
        lines += [f"    {line}" for line in state_lines(turn.state)]
        lines += [f"  note: {note}" for note in turn.notes]
    return "\n".join(lines) + "\n"


def save_transcript(conversation: Conversation, folder: Path) -> Path:
    """The conversation's turns as JSON, replaced whole after each turn (opt-in only)."""
    path = output_path(folder / f"{conversation.dialogue_id}.json", purpose="chat",
                       what="transcript")
    return atomic_write(path, json.dumps(conversation_record(conversation), ensure_ascii=False,
                                         indent=1), purpose="chat")


def export(conversation: Conversation | None, kind: str, folder: Path) -> str | None:
    """A download of the conversation (`json`: the record with its tracked state; `txt`: the
    readable transcript) written under `folder` for Gradio to serve; None before a turn."""
    if not conversation or not conversation.turns:
        return None
    text = (json.dumps(conversation_record(conversation), ensure_ascii=False, indent=1)
            if kind == "json" else transcript_text(conversation))
    return str(atomic_write(folder / uuid.uuid4().hex / f"{conversation.dialogue_id}.{kind}", text))


# --- the Blocks app ----------------------------------------------------------------------------
def theme():
    """The default look with the system's fonts: no font is fetched from the web."""
    # deferred: gradio is an optional extra (meditod-hub[app])
    import gradio as gr

    return gr.themes.Default(font=["system-ui", "sans-serif"],
                             font_mono=["ui-monospace", "monospace"])


def build(assistant: Assistant, save_dir: Path | None = None):
    # deferred: gradio is an optional extra (meditod-hub[app])
    import gradio as gr

    # Exports live here until the app exits; Gradio's copies in its cache are deleted after
    # EXPORT_LIFETIME_S (delete_cache).
    exports = tempfile.TemporaryDirectory(prefix="meditod-exports-")
    with gr.Blocks(title=TITLE, analytics_enabled=False,
                   delete_cache=(EXPORT_LIFETIME_S, EXPORT_LIFETIME_S)) as demo:
        demo.meditod_exports = exports  # lives as long as the app
        gr.Markdown(f"# {TITLE}")
        gr.Markdown(BANNER.format(trained_on=assistant.trained_on), elem_id="banner")
        conversation = gr.State(None)
        with gr.Row():
            with gr.Column(scale=3):
                chatbot = gr.Chatbot(opening_history(), label="Conversation (you are the patient)",
                                     elem_id="chat", height=420, feedback_options=None,
                                     buttons=["copy", "copy_all"])  # no "share": it publishes
                message = gr.Textbox(label="Your message", placeholder="Describe how you feel",
                                     elem_id="patient-input", lines=1, max_lines=6)
                with gr.Row():
                    send = gr.Button("Send", variant="primary", elem_id="send")
                    clear = gr.Button("Reset conversation", elem_id="reset")
                save = gr.Checkbox(False, label="Save this conversation on the server "
                                   "(research use; off by default)", elem_id="save",
                                   visible=save_dir is not None)
            with gr.Column(scale=2):
                gr.Markdown("### Patient state (tracked so far)")
                state_panel = gr.HTML(state_html({}), elem_id="state-panel")
                gr.Markdown("### Actions chosen, turn by turn")
                actions = gr.Markdown(action_history(None), elem_id="actions-panel")
                status = gr.Markdown("No turn yet.", elem_id="turn-status")
                with gr.Row():
                    export_json = gr.Button("Export JSON", elem_id="export-json", size="sm")
                    export_text = gr.Button("Export transcript", elem_id="export-text",
                                            size="sm")
                exported = gr.File(label="Export (the conversation with its tracked state)",
                                   elem_id="export-file", interactive=False)
        outputs = [message, chatbot, conversation, state_panel, actions, status]

        def on_message(text, history, current, save_it):
            yield from respond_stream(assistant, save_dir, text, history, current, save_it)

        for button, kind in ((export_json, "json"), (export_text, "txt")):
            button.click(lambda current, kind=kind: export(current, kind, Path(exports.name)),
                         conversation, exported)

        for trigger in (message.submit, send.click):
            trigger(on_message, [message, chatbot, conversation, save], outputs)
        clear.click(reset, None, outputs)
        chatbot.clear(reset, None, outputs)  # the chat's own trash icon resets everything too
    return demo


def launch(demo, **kwargs):
    """Launch with the privacy settings above; `kwargs` pass through (server_port, ...).

    Gradio's own start-up lines are off (`quiet`): they advise `share=True`, a public link, which
    this app must not have; the local address is printed here instead."""
    block = not kwargs.pop("prevent_thread_lock", False)
    demo.launch(theme=theme(), css=STATE_CSS, run_history=False, ssr_mode=False,
                footer_links=[], quiet=True, prevent_thread_lock=True, **kwargs)
    print(f"the assistant is at {demo.local_url} (Ctrl+C stops it)", file=sys.stderr, flush=True)
    if block:
        demo.block_thread()
    return demo

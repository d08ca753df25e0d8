"""The leaderboard: the results tables (`results`) read from the Hub, as a Gradio app and a Space.

    meditod leaderboard --repo my-org/meditod-leaderboard --dataset my-org/meditod   # private Space
    MEDITOD_LEADERBOARD_DATASET=my-org/meditod python spaces/leaderboard/app.py     # locally

The app shows the paper's rows and every Hub model whose card declares the dataset, read from
its model-index (what `meditod results --hub_dataset` reads), filterable by task, split, setting
(supervised, in-context, cascaded, or constrained decoding) and model family and sorted by any
metric; each model links to its card, the header to the dataset. Models without a row are listed
with the reason. The Hub is read again every `refresh_minutes` (a `gr.Timer` re-renders each open
page; a read happens at most once per period however many pages are open, and a failed read keeps
the last good tables and says so).

Settings: `leaderboard.json` beside app.py (the upload writes it: dataset, extra models, refresh
minutes), overridden by MEDITOD_LEADERBOARD_DATASET, MEDITOD_LEADERBOARD_MODELS (comma-separated
Hub ids) and MEDITOD_LEADERBOARD_REFRESH_MINUTES. Private models are read with the Space's
HF_TOKEN secret, when it has one. The upload goes through `space.upload` (private unless
--public; only files this kit put there are ever deleted).
"""

from __future__ import annotations

import html
import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from huggingface_hub import SpaceCard, SpaceCardData, constants

from meditod_hub.data import about
from meditod_hub.data.base_models import BASE_MODELS
from meditod_hub.data.release import EVAL_SPLITS
from meditod_hub.data.tasks import TASK_NAMES, TASKS, Task, get_task
from meditod_hub.errors import MeditodError, UsageError
from meditod_hub.evaluation.results_hub import hub_rows
from meditod_hub.evaluation.results_table import SPLIT_LABELS, Report, Row, paper_rows, table_metrics
from meditod_hub.models.families import FAMILIES
from meditod_hub.models.runs import hub_id
from meditod_hub.publishing.space import gradio_version, package_files

PROJECT = Path(__file__).resolve().parents[2]
SPACE_DIR = PROJECT / "spaces" / "leaderboard"
SETTINGS_FILE = "leaderboard.json"
SETTINGS_ENV = "MEDITOD_LEADERBOARD_"
ANY = "any"
SETTING_CHOICES = (ANY, "supervised", "in-context", "cascaded", "constrained")
TITLE = "MediTOD leaderboard"
CSS = """
#board table { border-collapse: collapse; font-size: 0.9em; }
#board th, #board td { padding: 3px 8px; border-bottom: 1px solid #ddd; text-align: left; }
#board tr.paper td { background: #eeeeee; }
"""


@dataclass(frozen=True)
class Settings:
    dataset: str | None
    models: tuple[str, ...] = ()
    refresh_minutes: float = 30.0
    timeout: float = 120.0


def settings(environ: dict | None = None, base: Path | None = None) -> Settings:
    """The settings file beside app.py, then the environment over it."""
    environ = os.environ if environ is None else environ
    path = (base or Path.cwd()) / SETTINGS_FILE
    stored = {}
    if path.is_file():
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}: invalid JSON ({exc.msg}); fix or delete it") from None
    models = environ.get(f"{SETTINGS_ENV}MODELS")
    refresh = environ.get(f"{SETTINGS_ENV}REFRESH_MINUTES", stored.get("refresh_minutes", 30))
    try:
        refresh = float(refresh)
    except (TypeError, ValueError):
        refresh = -1.0
    if not refresh > 0:
        raise UsageError(f"refresh minutes must be a positive number, got {refresh}")
    return Settings(environ.get(f"{SETTINGS_ENV}DATASET") or stored.get("dataset"),
                    tuple(m.strip() for m in models.split(",") if m.strip()) if models
                    else tuple(stored.get("models", ())), refresh)


class Board:
    """The last read of the Hub, shared by every page; read again once it is `refresh` old."""

    def __init__(self, config: Settings):
        self.config = config
        self.report = Report(paper_rows(), dataset=config.dataset)
        self.read_at: float | None = None
        self.problem: str | None = None
        self._lock = threading.Lock()

    def current(self) -> Report:
        with self._lock:
            due = self.read_at is None or \
                time.monotonic() - self.read_at >= self.config.refresh_minutes * 60
            if due and (self.config.dataset or self.config.models):
                try:
                    rows, unread = hub_rows(self.config.dataset, self.config.models,
                                            self.config.timeout)
                    self.report = Report(paper_rows() + rows, unread, dataset=self.config.dataset)
                    self.problem = None
                except MeditodError as exc:  # keep the last good tables, and say so
                    self.problem = str(exc)
            if due:
                self.read_at = time.monotonic()
            return self.report


def shown_rows(report: Report, task: str, split: str, setting: str, family: str,
               sort: str | None) -> list[Row]:
    """The rows the filters keep, best first by `sort` (a metric key), rows without it last."""
    rows = [r for r in report.rows if (r.task, r.split) == (task, split)
            and (setting == ANY or (r.constrained if setting == "constrained"
                                    else r.setting == setting))
            and (family == ANY or r.family == family)]
    if sort:
        rows.sort(key=lambda r: (r.value(sort) is None, -(r.value(sort) or 0.0)))
    return rows


def table_html(task: str, rows: list[Row]) -> str:
    if not rows:
        return "<p id='no-rows'>No system matches these filters.</p>"
    metrics = table_metrics(task, rows)
    head = "".join(f"<th>{html.escape(h)}</th>" for h in (
        "#", "system", "setting", "source", "constrained", "family", *(m.name for m in metrics),
        "note"))
    body = []
    for n, row in enumerate(rows, 1):
        link = html.escape(row.link, quote=True)
        name = (f"<a href='{link}' target='_blank' rel='noopener'>{html.escape(row.system)}</a>"
                if row.link.startswith("http") else html.escape(row.system))
        cells = [str(n), name, row.setting, row.source, "yes" if row.constrained else "no",
                 row.family or "—", *("—" if (v := row.value(m.key)) is None
                                      else format(v, m.fmt) for m in metrics), row.note]
        body.append(f"<tr class='{row.source}'>"
                    + "".join(f"<td>{c if i == 1 else html.escape(c)}</td>"
                              for i, c in enumerate(cells)) + "</tr>")
    return (f"<div style='overflow-x: auto'><table><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table></div>")


def status_markdown(board: Board, report: Report) -> str:
    hub = sorted({r.system for r in report.rows if r.source == "hub"})
    lines = [f"Read from the Hub {report.generated}, again every {board.config.refresh_minutes:g} "
             f"min: {len(hub)} models with rows."]
    if board.problem:
        lines.append(f"**The last read failed** ({board.problem}); these are the tables before it.")
    if report.unread:
        lines.append("Models without a row: " + "; ".join(
            f"[{u.repo}]({u.link}) ({u.reason})" for u in report.unread) + ".")
    return "\n\n".join(lines)


def header_markdown(config: Settings) -> str:
    dataset = (f"[{config.dataset}]({constants.ENDPOINT}/datasets/{config.dataset})"
               if config.dataset else "no dataset configured")
    return (f"# {TITLE}\n\nThe [MediTOD paper]({about.PAPER})'s tables (shaded rows) beside every "
            f"model on the Hub whose card declares the dataset {dataset}, from its model-index. "
            "**Add your row:** train and evaluate a run on that dataset, then `make push RUN=... "
            "REPO=...` (its card declares the dataset and carries every score); it appears here at "
            "the next refresh. Research only: not medical advice.")


def build(board: Board):
    """The Blocks app: filters, the table, the status line, a timer that re-renders."""
    # deferred: gradio is an optional extra (meditod-hub[app])
    import gradio as gr

    def metric_choices(task: Task) -> list[tuple[str, str]]:
        return [(m.name, m.key) for m in task.metrics]

    def metric_radio(name: str):
        task = get_task(name)  # the name the page's task radio sends
        return gr.Radio(choices=metric_choices(task), value=task.headline)

    def render(name, split, setting, family, sort):
        report = board.current()
        task = get_task(name)  # the name the page's task radio sends
        keys = {m.key for m in task.metrics}
        rows = shown_rows(report, name, split, setting, family,
                          sort if sort in keys else task.headline)
        return table_html(name, rows), status_markdown(board, report)

    families = sorted({m.family for m in BASE_MODELS.values()} | set(FAMILIES))
    with gr.Blocks(title=TITLE) as demo:
        gr.Markdown(header_markdown(board.config), elem_id="header")
        with gr.Row():
            first = next(iter(TASKS.values()))  # the board opens on the first task (NLU)
            task = gr.Radio([(t.upper(), t) for t in TASK_NAMES], value=first.name, label="Task",
                            elem_id="task")
            split = gr.Radio([(SPLIT_LABELS[s], s) for s in EVAL_SPLITS], value="test", label="Split",
                             elem_id="split")
        with gr.Row():
            setting = gr.Radio(list(SETTING_CHOICES), value=ANY, label="Setting",
                               elem_id="setting")
            family = gr.Radio([ANY, *families], value=ANY, label="Model family", elem_id="family")
        sort = gr.Radio(metric_choices(first), value=first.headline,
                        label="Sort by (best first)", elem_id="sort")
        table = gr.HTML(elem_id="board")
        status = gr.Markdown(elem_id="status")
        timer = gr.Timer(board.config.refresh_minutes * 60)
        inputs, outputs = [task, split, setting, family, sort], [table, status]
        task.change(metric_radio, task, sort)
        for control in inputs:
            control.change(render, inputs, outputs)
        demo.load(render, inputs, outputs)
        timer.tick(render, inputs, outputs)
    return demo


def serve(base: Path) -> None:
    """Run the app (the Space's app.py calls this); Gradio's own settings (port, ...) apply."""
    # deferred: gradio is an optional extra (meditod-hub[app])
    import gradio as gr

    demo = build(Board(settings(base=base)))
    demo.launch(css=CSS, theme=gr.themes.Default(), ssr_mode=False, footer_links=[])


# --- the upload --------------------------------------------------------------------------------
@dataclass
class LeaderboardArguments:
    repo: str = field(metadata={"help": "the Space, ORG/NAME"})
    dataset: str = field(metadata={"help": "the dataset's Hub id: models whose cards declare it "
                                           "are listed"})
    models: list[str] = field(default_factory=list, metadata={
        "help": "Hub model ids to read besides those listed for --dataset"})
    refresh_minutes: float = field(default=30.0, metadata={"above": 0,
                                                           "help": "read the Hub this often"})
    public: bool = field(default=False, metadata={"help": "create the Space public"})
    dry_run: bool = field(default=False, metadata={"help": "list the files, upload nothing"})
    timeout: float = field(default=600.0, metadata={"above": 0,
        "help": "seconds for the whole upload, retries included (also the limit of each request)"})
    take_over: bool = field(default=False, metadata={
        "help": "replace files changed on the Hub since the kit uploaded them, or a Space another "
                "command (meditod space: the assistant) uploaded"})


def plan(args: LeaderboardArguments) -> dict[str, Path | bytes]:
    """Space path -> local file or content."""
    for name in (args.dataset, *args.models):
        if not hub_id(name):
            raise UsageError(f"{name}: not a Hub id (ORG/NAME)")
    data = SpaceCardData(title=TITLE, sdk="gradio", sdk_version=gradio_version(),
                         app_file="app.py", license="apache-2.0", datasets=[args.dataset],
                         tags=["meditod", "leaderboard", "medical", "dialogue"],
                         short_description="MediTOD: the paper's tables and published models",
                         emoji="🏆", colorFrom="blue", colorTo="green", pinned=False)
    readme = SpaceCard.from_template(data, template_path=str(SPACE_DIR / "README.md"),
                                     title=TITLE, dataset=args.dataset, paper=about.PAPER,
                                     refresh=f"{args.refresh_minutes:g}", citation=about.CITATION)
    config = {"dataset": args.dataset, "models": list(args.models),
              "refresh_minutes": args.refresh_minutes}
    return {"app.py": SPACE_DIR / "app.py", "requirements.txt": SPACE_DIR / "requirements.txt",
            **package_files(), SETTINGS_FILE: (json.dumps(config, indent=2) + "\n").encode(),
            "README.md": str(readme).encode()}

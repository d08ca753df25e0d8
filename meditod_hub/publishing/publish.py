"""Publish a finished, evaluated run to the Hub in one commit; list what was published.

    # LoRA adapter + card + results + chart + recipe, to a private repo
    meditod publish --run runs/llama3-8b/nlu --repo my-org/meditod-llama3-8b-nlu
    # the adapter merged into its base in bf16 instead, to a public repo
    meditod publish --run runs/llama3-8b/nlu --repo ORG/NAME --merged --public
    # no network: the file list and the card (with --card_dir: written to a folder, not printed)
    meditod publish --run runs/tiny-llama/nlu --repo ORG/NAME --dry_run --card_dir out/card
    # the README's table of published (model, task) repos with their headline metric
    meditod publish --table runs/
    # the card links to the leaderboard Space (`meditod leaderboard`)
    meditod publish --run runs/llama3-8b/nlu --repo ORG/NAME --leaderboard ORG/meditod-leaderboard

Revisions: one repo per (model, task). Each run is identified by a hash of the files it publishes
(`run_id`) and gets its own branch `run-<run_id>`. The first run pushed to a repo also lands on
`main`, and main then stays put, so the numbers a reader sees there never change under them and
every run stays comparable at its own revision; promoting a better run to main is a deliberate act
(upload its revision's files to main), never a side effect of a push. Re-pushing a run whose branch
already carries it makes no commit.

Never published: trainer checkpoints, predictions (model outputs on MediTOD text),
`training_args.bin` (a pickle that can hold the Hub token) and anything not on the allow-lists
below; a file or card holding a Hub token stops the push, and the dry run, before anything is
shown (`hub.refuse_secrets`). A push replaces or deletes only what an earlier push of this kit
put in the repo (`hub.upload_plan`); `--card_dir` replaces only a card this command wrote there.
Each successful push is recorded in `<run>/published.json`, which `--table` reads (offline).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from fnmatch import fnmatch
from pathlib import Path

from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi, ModelCard
from huggingface_hub.errors import EntryNotFoundError

from meditod_hub.data.release import EVAL_SPLITS
from meditod_hub.files import atomic_write, output_folder, read_json
from meditod_hub.hubclient import HubError, check_timeout, deadline, hub_session
from meditod_hub.models.runs import (
    ADAPTER_FILES,
    FULL_FILES,
    PUBLISHED,
    RUN_FILES,
    TOKENIZER_FILES,
    Run,
    RunError,
    base_label,
    card_identity,
    read_run,
)
from meditod_hub.publishing.hub import KEEP_ON_HUB, UPLOAD_RECORD, refuse_secrets, upload_plan
from meditod_hub.publishing.model_card import paper_row, render_model_card

EVAL_FILES = ("results.json", "results.md", "results.png")


@dataclass
class PublishArguments:
    run: Path | None = field(default=None, metadata={"help": "a finished, evaluated run folder"})
    repo: str | None = field(default=None, metadata={"help": "ORG/NAME, one repo per (model, task)"})
    public: bool = field(default=False, metadata={"help": "create the repo public (default: "
                                                          "private)"})
    merged: bool = field(default=False, metadata={"help": "push the adapter merged into its "
                                                          "bf16 base"})
    dry_run: bool = field(default=False, metadata={"help": "print the file list and card; no "
                                                           "network"})
    card_dir: Path | None = field(default=None, metadata={
        "help": "with --dry_run: write the card and charts here"})
    timeout: float = field(default=600.0, metadata={"above": 0,
        "help": "seconds for the whole push, retries included (also the limit of each request)"})
    table: Path | None = field(default=None, metadata={
        "help": "print the table of published runs under this folder (no network)"})
    cascade: Path | None = field(default=None, metadata={
        "help": "an eval-cascade output folder that ran this run: adds the cascaded table to the "
                "card"})
    leaderboard: str | None = field(default=None, metadata={
        "help": "ORG/NAME of the leaderboard Space (`meditod leaderboard`) the card links to"})
    harness_results: Path | None = field(default=None, metadata={
        "help": "a folder of lm-evaluation-harness results files (`lm_eval --output_path`) the "
                "card shows (default: the run's eval/lm-eval, when it exists)"})


@dataclass
class Published:
    repo: str
    run_id: str
    revision: str      # the run's own branch
    commit: str
    on_main: bool
    merged: bool
    new_commit: bool
    url: str


def _top_level(folder: Path, patterns: tuple[str, ...]) -> dict[str, Path]:
    return {p.name: p for p in sorted(folder.iterdir())
            if p.is_file() and any(fnmatch(p.name, pattern) for pattern in patterns)}


def run_files(run: Run, merged: bool = False) -> dict[str, Path]:
    """Repo path -> local file for everything a push uploads besides the card."""
    weights = ADAPTER_FILES if run.info["adapter"] else FULL_FILES
    files = _top_level(run.path, weights + TOKENIZER_FILES + RUN_FILES)
    needed = ADAPTER_FILES if run.info["adapter"] else ("config.json",)
    missing = [name for name in needed if name not in files]
    if not run.info["adapter"] and not any(fnmatch(n, "model*.safetensors") for n in files):
        missing.append("model.safetensors")
    if missing:
        raise RunError(f"{run.path}: run_info.json says adapter={run.info['adapter']} but "
                       f"{', '.join(missing)} is missing")
    if merged:
        check_mergeable(run)
    for task, by_split in run.task_results.items():
        for split in by_split:
            folder = run.eval_folder(split, task)
            files.update({f"{folder}/{name}": path
                          for name, path in _top_level(run.path / folder, EVAL_FILES).items()})
    return files


def run_id(files: dict[str, Path], merged: bool) -> str:
    """A short hash of what the run publishes: the same run always gets the same id."""
    digest = hashlib.sha256(b"merged\n" if merged else b"adapter-or-full\n")
    for repo_path, local in sorted(files.items()):
        digest.update(f"{repo_path} {hashlib.sha256(local.read_bytes()).hexdigest()}\n".encode())
    return digest.hexdigest()[:12]


def check_mergeable(run: Run) -> None:
    """Refuse --merged unless the adapter's base loads in 16 bits (never merge into 4/8 bits)."""
    if not run.info["adapter"]:
        raise RunError(f"{run.path}: --merged needs a LoRA adapter run; this run has full weights, "
                       "push it without --merged")
    # deferred: peft and transformers are slow to import
    from peft import PeftConfig
    from transformers import AutoConfig

    base = PeftConfig.from_pretrained(run.path).base_model_name_or_path
    try:
        quantised = getattr(AutoConfig.from_pretrained(base), "quantization_config", None)
    except OSError as exc:
        raise RunError(f"{run.path}: cannot load the base model {base_label(base)} to merge into "
                       f"({type(exc).__name__}); push the adapter instead") from None
    if quantised:
        raise RunError(f"{run.path}: the base model {base_label(base)} is stored quantised; merging "
                       "into a 4/8-bit base would lose the adapter's precision: push the adapter")


@contextmanager
def merged_weights(run: Run) -> Iterator[dict[str, Path]]:
    """The adapter merged into its base reloaded in bf16 (the training base may have been NF4)."""
    # deferred: torch is slow to import
    import torch

    model = run.family.auto_model(adapter=True).from_pretrained(run.path, dtype=torch.bfloat16)
    with tempfile.TemporaryDirectory(prefix="meditod-merged-") as folder:
        model.merge_and_unload().save_pretrained(folder)
        yield _top_level(Path(folder), FULL_FILES)


def _card_at(api: HfApi, repo: str, revision: str, timeout: float) -> ModelCard | None:
    try:
        return ModelCard.load(api.hf_hub_download(repo, "README.md", revision=revision,
                                                  etag_timeout=timeout), ignore_metadata_errors=True)
    except EntryNotFoundError:
        return None


def _refuse_foreign(api: HfApi, repo: str, run: Run, card: ModelCard | None) -> None:
    """Stop unless main is empty or holds a MediTOD card for the same model and task."""
    identity = card_identity(card) if card else None
    if identity and (identity.get("model"), identity.get("task")) == (run.model, run.task):
        return
    other = [f for f in api.list_repo_files(repo, revision="main") if f not in KEEP_ON_HUB]
    if identity is None and not other:
        return
    what = (f"a MediTOD {identity.get('model')} {identity.get('task')} model" if identity
            else "something that is not a MediTOD model (no `meditod` block in its card)")
    raise HubError(f"{repo} already holds {what}; one repo per (model, task): choose another "
                   f"--repo for {run.model} {run.task}")


def cascade_section(run: Run, cascade: Path | None) -> tuple[dict | None, dict[str, Path]]:
    """The card's cascade table and its files, from an `eval-cascade` folder (or nothing)."""
    if cascade is None:
        return None, {}
    # deferred: eval-cascade's models and metrics load only when a card takes its table
    from meditod_hub.evaluation.eval_cascade import card_section

    return card_section(cascade, run.path, run.task)


def publish(run_dir: Path, repo: str, *, public: bool = False, merged: bool = False,
            timeout: float = 600.0, cascade: Path | None = None,
            leaderboard: str | None = None, harness_results: Path | None = None) -> Published:
    timeout = check_timeout(timeout)
    run = read_run(run_dir)
    section, cascade_files = cascade_section(run, cascade)
    files = {**run_files(run, merged), **cascade_files}
    rid = run_id(files, merged)
    card_text = str(render_model_card(run, run_id=rid, repo_id=repo, revision=f"run-{rid}",
                                      merged=merged, cascade=section, leaderboard=leaderboard,
                                      harness_results=harness_results))
    action = f"publish {run.path} to {repo}"
    refuse_secrets({"README.md": card_text, **files}, action)

    def work() -> Published:
        with hub_session(action, timeout) as api:
            url = str(api.create_repo(repo, private=not public, exist_ok=True))
            return _push(api, run, Published(repo, rid, f"run-{rid}", "", False, merged, False,
                                             url), files, card_text, timeout)

    done = deadline(timeout, action, work)
    atomic_write(run.path / PUBLISHED, json.dumps(asdict(done), indent=2) + "\n")
    return done


def _push(api: HfApi, run: Run, done: Published, files: dict[str, Path], card_text: str,
          timeout: float) -> Published:
    """Commit the run to its branch (and to main if the repo is new) unless it is already there."""
    repo, branch = done.repo, done.revision
    branches = {b.name: b.target_commit for b in api.list_repo_refs(repo).branches}
    if branch in branches and (card := _card_at(api, repo, branch, timeout)) \
            and (card_identity(card) or {}).get("run_id") == done.run_id:
        done.commit, done.on_main = branches[branch], branches[branch] == branches.get("main")
        return done
    main_card = _card_at(api, repo, "main", timeout)
    _refuse_foreign(api, repo, run, main_card)
    if branch not in branches and main_card and card_identity(main_card)["run_id"] == done.run_id:
        api.create_branch(repo, branch=branch, revision=branches["main"])  # an interrupted push
        done.commit, done.on_main = branches["main"], True
        return done
    target = branch if branch in branches or main_card else "main"
    if target == branch and branch not in branches:
        api.create_branch(repo, branch=branch, revision="main")
    with merged_weights(run) if done.merged else _nothing() as weights:
        refuse_secrets(weights or {}, f"publish {run.path} to {repo}")
        uploads = {**{p: f for p, f in files.items() if not done.merged or p not in ADAPTER_FILES},
                   **(weights or {})}
        stale, record = upload_plan(api, repo, {**uploads, "README.md": card_text.encode()},
                                    revision=target, timeout=timeout, command="publish")
        operations = ([CommitOperationAdd("README.md", card_text.encode()),
                       CommitOperationAdd(UPLOAD_RECORD, record)]
                      + [CommitOperationAdd(p, str(f)) for p, f in sorted(uploads.items())]
                      + [CommitOperationDelete(p) for p in stale])
        commit = api.create_commit(repo, operations, revision=target,
                                   commit_message=f"MediTOD {run.task} {run.model}: run {done.run_id}")
    if target == "main":
        api.create_branch(repo, branch=branch, revision=commit.oid)
    done.commit, done.on_main, done.new_commit = commit.oid, target == "main", True
    return done


@contextmanager
def _nothing() -> Iterator[None]:
    yield None


def dry_run(run_dir: Path, repo: str, *, merged: bool = False, card_dir: Path | None = None,
            cascade: Path | None = None, leaderboard: str | None = None,
            harness_results: Path | None = None) -> str:
    """The file list and the rendered card, without network; with `card_dir` the card (and its
    charts, so the folder previews like the repo) is written there instead of printed."""
    run = read_run(run_dir)
    section, cascade_files = cascade_section(run, cascade)
    files = {**run_files(run, merged), **cascade_files}
    rid = run_id(files, merged)
    card = render_model_card(run, run_id=rid, repo_id=repo, revision=f"run-{rid}", merged=merged,
                             cascade=section, leaderboard=leaderboard,
                             harness_results=harness_results)
    shown = {p: f for p, f in files.items() if not merged or p not in ADAPTER_FILES}
    refuse_secrets({"README.md": str(card), **shown}, f"publish --dry_run {run.path}")
    charts = {f"eval/{split}/{chart.name}": chart for split in run.results
              if (chart := run.chart(split))}
    if card_dir:
        output_folder(card_dir, ["README.md", *charts], purpose="publish",
                      input_folders=[run.path, cascade], what="--card_dir")
    lines = [f"would push run {rid} of {run.model} {run.task} to {repo} (branch run-{rid}):",
             "  README.md (the model card)",
             f"  {UPLOAD_RECORD} (what this kit uploaded: a later push replaces only these)"]
    lines += [f"  {p}  ({f.stat().st_size} bytes)" for p, f in sorted(shown.items())]
    if merged:
        lines.append(f"  + the adapter merged into {base_label(run.info['base_model'])} in bf16 "
                     "(config.json, model*.safetensors)")
    if not card_dir:
        return "\n".join(lines + ["", str(card)])
    atomic_write(card_dir / "README.md", str(card), purpose="publish")
    for task, by_split in run.task_results.items():
        for split in by_split:
            if chart := run.chart(split, task):
                atomic_write(card_dir / run.eval_folder(split, task) / chart.name,
                             chart.read_bytes(), purpose="publish")
    return "\n".join(lines + [f"model card written to {card_dir / 'README.md'}"])


def published_table(runs: Path) -> str:
    """A Markdown table of every published run under `runs` (from the published.json records)."""
    rows = ["| model | task | repo (revision) | headline metric | " + " | ".join(EVAL_SPLITS)
            + " | paper, test |", "|---" * (5 + len(EVAL_SPLITS)) + "|"]
    for record_file in sorted(Path(runs).rglob(PUBLISHED)):
        record = read_json(record_file, fix=f"publish the run again (`meditod publish --run "
                           f"{record_file.parent}`) to rewrite it")
        if not {"repo", "url", "revision", "on_main"} <= set(record):
            raise RunError(f"{record_file}: not a publish record of this kit; publish the run "
                           "again to rewrite it")
        run = read_run(record_file.parent)
        revision = "main" if record["on_main"] else record["revision"]
        link = record["url"] if record["on_main"] else f"{record['url']}/tree/{revision}"
        where = f"[{record['repo']}]({link}) (`{revision}`)"
        for task in run.trained_tasks:  # a multi-task run: a row per task
            by_split = run.task_results.get(task.name, {})
            metric = task.headline_metric
            cells = [by_split[s].value(metric.key) if s in by_split else None
                     for s in EVAL_SPLITS]
            cells.append(paper_row(run, "test", task.name).get(metric.key))
            shown = ["—" if v is None else format(v, metric.fmt) for v in cells]
            rows.append(f"| {run.model} | {task.name} | {where} | {metric.name} | "
                        f"{' | '.join(shown)} |")
    return "\n".join(rows)

"""Upload the chat app as a Hub Space (private unless --public), in one commit; `upload` is
also the leaderboard Space's way up (`meditod leaderboard`).

    meditod space --repo my-org/meditod-assistant                  # the tiny runs, uploaded too
    meditod space --repo ORG/NAME --nlu ORG/meditod-llama3-8b-nlu --pol ... --nlg ...

The flags name one model per stage of the pipeline (`space_arguments`, made from the stages as
the chat's flags are). The Space gets `app.py`, the `meditod_hub` package (its .py files),
`requirements.txt`, a README whose front matter makes it a Gradio Space
(`spaces/assistant/README.md`, rendered with `SpaceCard`), and
`meditod_app.json` naming the models. A model given as a Hub id (with `--<task>_revision`) is
only named there; a local run folder (default `runs/tiny-llama/<task>`) is uploaded under
`models/<task>/` (weights, tokenizer, run_info.json, recipe.yaml: no checkpoints, no
predictions, never `training_args.bin`). The upload records what it put in the Space
(`meditod_upload.json`): files an earlier upload put there and this one does not are deleted in the
same commit; a file of the Space's owner that the upload would replace stops it; nothing else in
the Space is touched. A file holding a Hub token stops the upload (and the dry run). The token
comes from HF_TOKEN or `hf auth login` and is never printed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import field, make_dataclass
from fnmatch import fnmatch
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from huggingface_hub import SpaceCard, SpaceCardData

from meditod_hub.data import about, proof
from meditod_hub.data.tasks import Task
from meditod_hub.errors import UsageError
from meditod_hub.models.runs import (
    FULL_FILES,
    RUN_FILES,
    TOKENIZER_FILES,
    base_label,
    hub_id,
    run_settings,
)
from meditod_hub.publishing.hub import UPLOAD_RECORD, refuse_secrets

PROJECT = Path(__file__).resolve().parents[2]
TEMPLATE = PROJECT / "spaces" / "assistant" / "README.md"
REQUIREMENTS = PROJECT / "spaces" / "assistant" / "requirements.txt"
TINY_RUNS = "runs/tiny-llama"  # where `make tiny-runs` puts a stage's run: <TINY_RUNS>/<task>


def space_arguments(tasks: Sequence[Task]) -> type:
    """The flags of `meditod space` for a pipeline over `tasks` (the cascade's stages, in order):
    the Space, each stage's model and revision, then how to upload."""
    first = tasks[0]
    models = [(task.name, str | None, field(default=None, metadata={"help": (
                  f"{task.display_name} model: Hub id, or a local run folder to upload (default "
                  f"{TINY_RUNS}/{task.name})") if task is first
                  else f"{task.display_name} model (as --{first.name})"}))
              for task in tasks]
    revisions = [(f"{task.name}_revision", str | None, field(default=None, metadata={
                     "help": f"{task.display_name} Hub revision"})) for task in tasks]
    upload = [
        ("public", bool, field(default=False, metadata={"help": "create the Space public"})),
        ("dry_run", bool, field(default=False, metadata={"help": "list the files, upload nothing"})),
        ("timeout", float, field(default=600.0, metadata={"above": 0,
            "help": "seconds for the whole upload, retries included (also the limit of each "
                    "request)"})),
        ("take_over", bool, field(default=False, metadata={
            "help": "replace files changed on the Hub since the kit uploaded them, or a Space "
                    "another command (meditod leaderboard) uploaded"})),
    ]
    return make_dataclass(
        "SpaceArguments", [("repo", str, field(metadata={"help": "the Space, ORG/NAME"}))]
        + models + revisions + upload,
        namespace={"__doc__": "The Space, its stages' models and the upload, as command-line "
                              "flags.", "__module__": __name__, "STAGES": tuple(tasks)})


def _model_files(folder: Path) -> dict[str, Path]:
    """The files of a run a Space needs (the publish allow-lists), top level only."""
    info, _ = run_settings(folder)
    if info.get("adapter"):
        raise UsageError(f"{folder} is a LoRA adapter on a local base: push it with `make publish` "
                         "and give its Hub id instead")
    files = {p.name: p for p in sorted(folder.iterdir()) if p.is_file()
             and any(fnmatch(p.name, pattern) for pattern in FULL_FILES + TOKENIZER_FILES
                     + RUN_FILES)}
    if "config.json" not in files or not any(fnmatch(n, "model*.safetensors") for n in files):
        raise UsageError(f"{folder}: no config.json and model*.safetensors; is it a trained run?")
    return files


def plan(args) -> tuple[dict[str, Path | bytes], dict]:
    """Space path -> local file or content, and the app settings written to meditod_app.json
    (`args`: made by `space_arguments`)."""
    files: dict[str, Path | bytes] = {"app.py": PROJECT / "app.py",
                                      "requirements.txt": REQUIREMENTS}
    files.update(package_files())
    settings, shown, trained_on = {}, [], []
    for stage in args.STAGES:
        task = stage.name
        source = getattr(args, task) or f"{TINY_RUNS}/{task}"
        revision = getattr(args, f"{task}_revision")
        if Path(source).is_dir():
            if revision:
                raise UsageError(f"--{task}_revision applies to Hub ids, not the folder {source}")
            files.update({f"models/{task}/{name}": path
                          for name, path in _model_files(Path(source)).items()})
            settings[task] = {"source": f"models/{task}"}
            trained_on.append(proof.of_record(run_settings(source)[0]).describe())
        elif hub_id(source):
            settings[task] = {"source": source, **({"revision": revision} if revision else {})}
        else:
            raise UsageError(f"--{task} {source}: neither a run folder nor a Hub id (for the "
                             "tiny offline models run `make tiny-runs` first)")
        shown.append((stage.display_name, base_label(source)))
    files["meditod_app.json"] = (json.dumps(settings, indent=2) + "\n").encode()
    files["README.md"] = card(args.repo, shown,
                              tiny=not any(getattr(args, t.name) for t in args.STAGES),
                              trained_on=list(dict.fromkeys(trained_on)))
    return files, settings


def gradio_version() -> str:
    """The installed gradio's version: a Space's sdk_version."""
    try:
        return version("gradio")
    except PackageNotFoundError:
        raise UsageError("gradio is not installed: `pip install -e '.[app]'` (its version is the "
                         "Space's sdk_version)") from None


def card(repo: str, models: list[tuple[str, str]], tiny: bool, trained_on: list[str] = ()
         ) -> bytes:
    """The Space's README; `trained_on`: what the uploaded runs were trained on, each said as
    its provenance says it (`Provenance.describe`)."""
    data = SpaceCardData(title="MediTOD assistant", sdk="gradio", sdk_version=gradio_version(),
                         app_file="app.py", license="apache-2.0",
                         models=[m for _, m in models if hub_id(m)] or None,
                         tags=["meditod", "medical", "dialogue", "research-demo"],
                         short_description="Medical history-taking dialogue demo (research only)",
                         emoji="🩺", colorFrom="blue", colorTo="green", pinned=False)
    text = SpaceCard.from_template(data, template_path=str(TEMPLATE), title=f"MediTOD assistant "
                                   f"({repo.split('/')[-1]})", paper=about.PAPER, models=models,
                                   tiny=tiny, trained_on=trained_on, citation=about.CITATION)
    return str(text).encode()


def package_files() -> dict[str, Path]:
    """The `meditod_hub` package's .py files, as every Space of the kit carries them."""
    return {str(p.relative_to(PROJECT)): p for p in sorted((PROJECT / "meditod_hub").rglob("*.py"))}


def upload(repo: str, files: dict[str, Path | bytes], *, public: bool = False,
           timeout: float = 600.0, what: str = "the app",
           message: str = "MediTOD assistant: app, package and models", command: str = "space",
           take_over: bool = False) -> str:
    """Create the Space (private unless `public`) and commit `files` to it in one commit, with
    the record of what this kit uploaded, deleting only what an earlier upload of this kit put
    there and this one no longer uploads (`hub.upload_plan`); the Space's URL."""
    # deferred: huggingface_hub loads only when something is uploaded, not for `-h` or a dry run
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete

    from meditod_hub.hubclient import check_timeout, deadline, hub_session
    from meditod_hub.publishing.hub import UPLOAD_RECORD, refuse_secrets, upload_plan

    action = f"upload {what} to the Space {repo}"
    refuse_secrets(files, action)  # no token in anything a Space serves
    timeout = check_timeout(timeout)

    def work() -> str:
        with hub_session(action, timeout) as api:
            url = str(api.create_repo(repo, repo_type="space", space_sdk="gradio",
                                      private=not public, exist_ok=True))
            stale, record = upload_plan(api, repo, files, repo_type="space", timeout=timeout,
                                        command=command, take_over=take_over, check_edits=True)
            operations = ([CommitOperationAdd(path, content if isinstance(content, bytes)
                                              else str(content))
                           for path, content in sorted(files.items())]
                          + [CommitOperationAdd(UPLOAD_RECORD, record)]
                          + [CommitOperationDelete(p) for p in stale])
            api.create_commit(repo, operations, repo_type="space", commit_message=message)
            return url

    return deadline(timeout, action, work)


def print_plan(repo: str, files: dict[str, Path | bytes], public: bool) -> None:
    """What `upload` would send, after the same scan for tokens (nothing secret is printed)."""
    refuse_secrets(files, f"upload to the Space {repo}")
    print(f"would upload to the Space {repo} ({'public' if public else 'private'}):")
    for path, content in sorted(files.items()):
        size = len(content) if isinstance(content, bytes) else content.stat().st_size
        print(f"  {path}  ({size} bytes)")
    print(f"  {UPLOAD_RECORD}  (what this kit uploaded: a later upload replaces only these)")

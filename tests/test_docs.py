"""The docs are tests: every command block a doc shows runs as written, or says in the doc why not.

Collected: each ```bash and ```python block of README.md, docs/*.md, recipes/*/README.md and
spaces/*/README.md (listings such as file trees are ```text and are not commands). A block runs as
written, as one bash script (`set -euo pipefail`) or one Python program, in a sandbox: a copy of
the tracked files with the project's `.venv` linked in, on the embedded sample and tiny models,
offline, in a plain shell: the venv is not on PATH (system Python first), as a newcomer's shell
is. A doc that tells its reader to activate the venv (`source .venv/bin/activate`, anywhere in
it) has its blocks run after that line, as the reader who followed it types them; a doc that does
not has them run without it. Only hosts and tokens change:
the Hub is the local Hub server (tests/hub_server.py, through HF_ENDPOINT/HF_TOKEN) and an OpenAI-
compatible URL is the local chat server (tests/chat_server.py); placeholder paths name sandbox
folders made from the embedded sample (`SUBSTITUTIONS`, `PLACEHOLDER_FOLDERS`).

A block that cannot run so is marked in the doc itself, on the line before its fence:

    <!-- docs-test: skip: <why it cannot run offline> -->
    <!-- docs-test: dry-run: <why> -->    checked, not run: valid bash; `make -n` for make lines,
                                           `-h` for meditod lines, recipe paths must exist (lines
                                           using the block's shell variables: syntax only); Python
                                           compiles and every name it imports exists
    <!-- docs-test: server: <why> -->     each line starts a server: it must print its URL and
                                           answer it, then it is stopped

An unmarked block that fails fails the test; so does a marker without a reason. Blocks run in the
docs' order, servers after the blocks that run (a server may serve the tiny runs a later block
trains). The counts are printed at the end of the run (conftest's terminal summary).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import stop_group

PROJECT = Path(__file__).resolve().parent.parent
DOC_GLOBS = ("README.md", "docs/*.md", "recipes/*/README.md", "spaces/*/README.md")
FENCE = re.compile(r"^```(\w*)\s*$")
MARKER = re.compile(r"^<!--\s*docs-test:\s*([\w-]+)\s*:\s*(.*?)\s*-->\s*$")
MODES = ("run", "skip", "dry-run", "server")
BLOCK_TIMEOUT = 1200   # a block's whole run; make tiny-runs takes a few CPU minutes
DEMO_TIMEOUT = 900     # make demo's smoke profile: a few steps a run of the real model
SERVER_TIMEOUT = 180   # until a server prints its URL and answers it
DOCS: list[tuple[str, str]] = []  # (block, outcome), printed by conftest's terminal summary

# Placeholders of the docs -> what they are in the sandbox (hosts and paths only).
SUBSTITUTIONS = {
    "https://api.openai.com/v1": "{chat}",
    "https://router.huggingface.co/v1": "{chat}",
    "/path/to/MediTOD/data": "data/sample",
    "/path/to/data": "in-domain-sample",
    "/path/to/ood": "ood-sample",
}
# Folders the docs name as the reader's own, made from the embedded sample, and their files.
PLACEHOLDER_FOLDERS = ("my-release", "annotator-a", "annotator-b")
PLACEHOLDER_FILES = {"canonical-values.txt": "coughing\nfever\nwheezing\n"}
# the reader's run folders in `make results RUNS="runs other"` (before the README's training)
PLACEHOLDER_EMPTY_FOLDERS = ("runs", "other")


ACTIVATE = "source .venv/bin/activate"  # what a doc tells its reader to type once per shell


@dataclass(frozen=True)
class Block:
    doc: str
    line: int
    text: str
    mode: str
    reason: str
    lang: str
    activated: bool  # its doc tells the reader to activate the venv (ACTIVATE)

    @property
    def name(self) -> str:
        return f"{self.doc}:{self.line}"

    def shell(self, script: str, *flags: str) -> list[str]:
        """The command a reader's plain shell runs `script` (this block's language) with."""
        if self.lang == "python":
            return [".venv/bin/python" if self.activated else "python3", "-c", script]
        return ["bash", *flags, "-c", f"{ACTIVATE}\n{script}" if self.activated else script]


def doc_files() -> list[Path]:
    return sorted({p for pattern in DOC_GLOBS for p in PROJECT.glob(pattern)})


def collect(path: Path) -> tuple[list[Block], list[str]]:
    """The command blocks of one doc, and its problems (a bare fence, a marker without reason)."""
    rel = path.relative_to(PROJECT).as_posix()
    blocks, problems = [], []
    text = path.read_text(encoding="utf-8")
    activated = ACTIVATE in text
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        start, lang = i, fence.group(1)
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            i += 1
        body = "\n".join(lines[start + 1:i]) + "\n"
        i += 1
        if lang == "":
            problems.append(f"{rel}:{start + 1}: a fence without a language: ```bash for "
                            "commands, ```text for listings")
        if lang not in ("bash", "sh", "python"):
            continue
        marker = MARKER.match(lines[start - 1]) if start else None
        mode, reason = (marker.group(1), marker.group(2)) if marker else ("run", "")
        if mode not in MODES or (mode != "run" and not reason):
            problems.append(f"{rel}:{start}: docs-test marker needs a mode ({', '.join(MODES[1:])})"
                            " and a reason")
        blocks.append(Block(rel, start + 1, body, mode, reason, lang, activated))
    return blocks, problems


def all_blocks() -> list[Block]:
    """Every block, in the order they run: the docs' order, servers after the blocks that run."""
    blocks = [b for path in doc_files() for b in collect(path)[0]]
    return sorted(blocks, key=lambda b: MODES.index(b.mode) if b.mode == "server" else 0)


def test_every_command_block_runs_or_says_why_not():
    problems = [p for path in doc_files() for p in collect(path)[1]]
    assert not problems, "\n".join(problems)
    blocks = all_blocks()
    assert len(blocks) >= 20, f"only {len(blocks)} command blocks found: is the collector broken?"


REDIRECT = re.compile(r"(?<![\d&])>>?\s*([^\s&|;>]+)|\btee\s+(?:-a\s+)?([^\s&|;]+)")


def test_no_documented_command_leaves_a_file_git_would_track():
    """Issue 25: the few-shot quickstart wrote `serve.log` into the repository (untracked, not
    ignored). A file a block writes through a redirect goes under an ignored folder (out/...)."""
    targets = {(b.name, m.group(1) or m.group(2)) for b in all_blocks() if b.lang != "python"
               for line in command_lines(b.text)
               for m in REDIRECT.finditer(re.sub(r"\s+#.*$", "", line))}
    assert targets, "no redirect found: is REDIRECT broken?"
    kept = [(name, path) for name, path in sorted(targets)
            if path != "/dev/null" and "$" not in path and subprocess.run(
                ["git", "check-ignore", "-q", "--no-index", path], cwd=PROJECT).returncode != 0]
    assert not kept, f"written where git would track it (write under out/): {kept}"


def test_the_readme_shows_the_multitask_recipe():
    """Issue 25: the README never showed a multitask recipe in a command block."""
    readme = [b for b in collect(PROJECT / "README.md")[0]]
    runs = [b for b in readme if "-multitask" in b.text and b.mode == "run"]
    assert runs, "no README block that runs names a *-multitask recipe"
    assert any(re.search(r"make train MODEL=\S+-multitask\b", b.text) for b in readme)


# --- the sandbox ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sandbox(tmp_path_factory, embedded_release, smollm2, tiny_runs, embedded_build):
    """A copy of the tracked files with a view of the project's venv, its converted SmolLM2, the
    session's tiny runs (`_tiny_runs_made`), the placeholder folders, an out-of-domain copy of
    the sample, a local Hub and a local chat server."""
    from chat_server import ChatServer
    from hub_server import HubServer

    root = tmp_path_factory.mktemp("docs") / "kit"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=PROJECT, capture_output=True,
                             check=True).stdout.decode().split("\0")
    for rel in filter(None, tracked):
        source = PROJECT / rel
        if source.is_file():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, root / rel)
            shutil.copymode(source, root / rel)
    _venv_view(PROJECT / ".venv", root / ".venv")
    _wheel_cache_view(root)
    _pretrained_view(smollm2, root)
    _tiny_runs_made(tiny_runs, embedded_build, root)
    for name in PLACEHOLDER_FOLDERS:
        shutil.copytree(embedded_release, root / name)
    for name, text in PLACEHOLDER_FILES.items():
        (root / name).write_text(text, encoding="utf-8")
    for name in PLACEHOLDER_EMPTY_FOLDERS:
        (root / name).mkdir(exist_ok=True)  # runs/ may hold the tiny runs
    _split_by_domain(embedded_release, root / "in-domain-sample", root / "ood-sample")
    with HubServer() as hub, ChatServer() as chat:
        env = hub.client_env(root.parent)
        env["PATH"] = plain_path(env["PATH"])  # a newcomer's shell: no venv on it
        env.pop("VIRTUAL_ENV", None)
        env["PYTHONPATH"] = str(root)  # the sandbox's copy of the kit, also for `meditod`
        env.pop("MAKEFLAGS", None)
        yield root, env, {"chat": chat.url}


def plain_path(path: str) -> str:
    """PATH without any virtualenv's bin folder (the suite itself runs inside the venv)."""
    active = os.path.join(os.environ.get("VIRTUAL_ENV", "/no-venv"), "bin")
    return os.pathsep.join(p for p in path.split(os.pathsep)
                           if p and p != active and not p.rstrip("/").endswith(".venv/bin"))


def test_the_docs_shell_is_plain(sandbox):
    """The sandbox's shell has no `meditod` and its `python3` is the system's, so a block that
    needs the venv fails unless its doc says to activate it."""
    root, env, _ = sandbox
    found = subprocess.run(["bash", "-c", "command -v meditod; python3 -c 'import sys; "
                            "print(sys.prefix == sys.base_prefix)'"], cwd=root, env=env,
                           capture_output=True, text=True)
    assert found.stdout.strip() == "True", found.stdout + found.stderr
    readme = collect(PROJECT / "README.md")[0]
    assert readme and all(b.activated for b in readme), "README.md must say to activate the venv"
    assert f"{ACTIVATE}\n" in readme[0].shell("meditod --version")[-1]


def _venv_view(venv: Path, view: Path) -> None:
    """The project's venv seen from the sandbox: every entry linked, except the setup stamp,
    which is the sandbox's own and newer than its copies of the files setup depends on. So a
    `make` target's `setup` is done, never rerun: its `pip install -e .` would repoint the
    project's editable install at the sandbox."""
    if not (venv / ".installed").is_file():
        pytest.skip("no set-up venv: run `make setup` first")
    view.mkdir()
    for entry in venv.iterdir():
        if entry.name != ".installed":
            (view / entry.name).symlink_to(entry)
    (view / ".installed").touch()


def _wheel_cache_view(root: Path) -> None:
    """The wheels `make setup` fetched (SmolLM2's), seen from the sandbox as from the project:
    like the venv, what setup installs; `meditod pretrained` then needs no network."""
    from meditod_hub.models.pretrained import WHEEL_CACHE

    if (PROJECT / WHEEL_CACHE).is_dir():
        (root / WHEEL_CACHE).parent.mkdir(parents=True, exist_ok=True)
        (root / WHEEL_CACHE).symlink_to(PROJECT / WHEEL_CACHE)


def _pretrained_view(converted: Path, root: Path) -> None:
    """SmolLM2 as `make setup` and a first `meditod pretrained` leave it (the suite converts it
    once, `conftest.smollm2`; tests/test_chat_family.py checks the conversion): `meditod
    pretrained` and the demo then only check the folder, as on a newcomer's second run."""
    from meditod_hub.models.pretrained import DEFAULT_OUT

    (root / DEFAULT_OUT).mkdir(parents=True)
    (root / DEFAULT_OUT / converted.name).symlink_to(converted)


def _tiny_runs_made(runs: Path, data: Path, root: Path) -> None:
    """`make tiny-runs` as a reader's first run leaves it: the suite's tiny runs (conftest's
    `tiny_runs`: the same three recipes on the embedded sample from the same tiny base, trained
    once for every test) and their data, newer than the recipes, so the docs' `make tiny-runs`
    finds them made, as on a reader's second run, instead of training them a second time.
    tests/test_commands.py checks what it runs when they are not there."""
    copy = dict(copy_function=shutil.copyfile)  # new times: made after the sandbox's recipes
    shutil.copytree(data, root / "out" / "tiny" / "meditod", **copy)
    for task in ("nlu", "pol", "nlg"):
        shutil.copytree(runs / task, root / "runs" / "tiny-llama" / task, **copy)


def _split_by_domain(release: Path, in_domain: Path, ood: Path) -> None:
    """The embedded sample as two releases, as `--ood_source` takes them: its in-domain part,
    and its out-of-domain dialogues alone (all in `test`, which the build ignores for them)."""
    import json

    dialogs = json.loads((release / "dialogs.json").read_text(encoding="utf-8"))
    ood_ids = {str(i) for i in json.loads((release / "ood_ids.json").read_text(encoding="utf-8"))}
    shutil.copytree(release, in_domain)
    (in_domain / "ood_ids.json").unlink()
    (in_domain / "dialogs.json").write_text(json.dumps(
        {did: d for did, d in dialogs.items() if did not in ood_ids}), encoding="utf-8")
    ood.mkdir()
    (ood / "dialogs.json").write_text(json.dumps(
        {did: d for did, d in dialogs.items() if did in ood_ids}), encoding="utf-8")
    for name, ids in (("train_ids.json", []), ("valid_ids.json", []), ("test_ids.json", ood_ids)):
        (ood / name).write_text(json.dumps(sorted(ids)), encoding="utf-8")


def substituted(text: str, values: dict) -> str:
    for placeholder, value in SUBSTITUTIONS.items():
        text = text.replace(placeholder, value.format(**values))
    return text


def command_lines(text: str) -> list[str]:
    """One logical line per command (continuations joined, comments and blanks dropped)."""
    out, current = [], ""
    for line in text.splitlines():
        current += line.rstrip("\\") + (" " if line.endswith("\\") else "")
        if line.endswith("\\"):
            continue
        if current.strip() and not current.lstrip().startswith("#"):
            out.append(current.strip())
        current = ""
    return out


# Output that sends a newcomer the wrong way (issue 17): no documented command may print it.
MISLEADING = ("Failed to load CPU gemm_4bit_forward", "set share=True", "Loading weights",
              "Traceback (most recent call last)")


def run_block(block: Block, root: Path, env: dict, values: dict) -> None:
    """One block as one script in its own process group: what it leaves running in the
    background (a server the block forgot to stop, or could not, having failed) is stopped with
    it. Output goes to a file, so a background job cannot hold the block open."""
    script = substituted(block.text, values)
    command = block.shell(script, "-euo", "pipefail")
    log = root / ".docs-test-block.log"
    with log.open("w") as sink:
        proc = subprocess.Popen(command, cwd=root, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            code = proc.wait(timeout=BLOCK_TIMEOUT)
        except subprocess.TimeoutExpired:
            code = "timeout"
        finally:
            stop_group(proc, signal.SIGKILL)
    output = log.read_text(errors="replace")
    log.unlink()
    if code != 0:
        pytest.fail(f"{block.name} failed (exit {code}) as written:\n{block.text}\n"
                    f"--- output (end) ---\n{output[-3000:]}")
    misleading = [m for m in MISLEADING if m in output]
    assert not misleading, f"{block.name} printed {misleading}:\n{output[-3000:]}"


CHECK_IMPORTS = """
import ast, importlib, sys
tree = ast.parse(sys.stdin.read())
for node in ast.walk(tree):
    if isinstance(node, ast.ImportFrom):
        module = importlib.import_module(node.module)
        for alias in node.names:
            assert hasattr(module, alias.name), f"{node.module} has no {alias.name}"
    elif isinstance(node, ast.Import):
        for alias in node.names:
            importlib.import_module(alias.name)
"""


def dry_run(block: Block, root: Path, env: dict, values: dict) -> None:
    if block.lang == "python":
        result = subprocess.run(block.shell(CHECK_IMPORTS), input=block.text, cwd=root,
                                env=env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, f"{block.name}: {result.stderr[-2000:]}"
        return
    script = substituted(block.text, values)
    syntax = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    assert syntax.returncode == 0, f"{block.name}: not valid bash: {syntax.stderr}"
    for line in command_lines(script):
        line = re.sub(r"\s+#.*$", "", line)  # a trailing comment would swallow the -h
        if "$" in line or line.startswith(("for ", "done", "do ")):
            continue  # needs the block's shell variables: checked as bash syntax above
        words = line.split()
        if words[0] == "make":
            check = block.shell("make -n " + line[len("make"):])
        elif words[0] == "meditod" or line.startswith("python -m meditod_hub"):
            check = block.shell(f"{line} -h")
        else:
            missing = [w for w in words if w.startswith("recipes/") and not (root / w).exists()]
            assert not missing, f"{block.name}: {line!r} names missing files {missing}"
            continue
        result = subprocess.run(check, cwd=root, env=env, capture_output=True, text=True,
                                timeout=300, stdin=subprocess.DEVNULL)
        assert result.returncode == 0, (f"{block.name}: dry run of {line!r} failed:\n"
                                        f"{(result.stdout + result.stderr)[-2000:]}")


def serve_lines(block: Block, root: Path, env: dict, values: dict) -> None:
    for line in command_lines(substituted(block.text, values)):
        server = subprocess.Popen(block.shell(line), cwd=root, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            url = _first_url(server, f"{block.name}: {line!r}")
            try:
                with urllib.request.urlopen(url, timeout=60) as answer:
                    assert answer.status == 200, f"{block.name}: {url} answered {answer.status}"
            except OSError as exc:
                try:  # a server that is failing: let it finish saying why
                    server.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
                raise AssertionError(f"{block.name}: {line!r} printed {url}, which refused ({exc}; "
                                     f"server exit {server.poll()}); output:\n"
                                     f"{_available(server)[-2000:]}") from None
        finally:
            stop_group(server, signal.SIGINT)


def _available(server: subprocess.Popen) -> str:
    """What the server has printed and not yet been read, without waiting for more."""
    import selectors

    fd, text = server.stdout.fileno(), ""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while selector.select(timeout=0.1):
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            text += chunk.decode("utf-8", "replace")
    return text


def _first_url(server: subprocess.Popen, what: str) -> str:
    """The first http://127.0.0.1:PORT/ URL the server prints, within SERVER_TIMEOUT."""
    import selectors

    deadline = time.monotonic() + SERVER_TIMEOUT
    fd, buffer = server.stdout.fileno(), ""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while time.monotonic() < deadline and server.poll() is None:
            if not selector.select(timeout=1.0):
                continue
            buffer += os.read(fd, 65536).decode("utf-8", "replace")
            found = re.search(r"http://(?:127\.0\.0\.1|localhost):\d+/?", buffer)
            if found:
                return found.group(0)
    raise AssertionError(f"{what} printed no URL within {SERVER_TIMEOUT} s (exit "
                         f"{server.poll()}); output:\n{buffer[-2000:]}")


def editable_install() -> str:
    """Where the venv's editable install points (a block must never repoint it)."""
    found = sorted((PROJECT / ".venv").glob("lib/python*/site-packages/__editable__*meditod*finder.py"))
    return found[0].read_text(encoding="utf-8") if found else ""


@pytest.fixture
def install_untouched():
    before = editable_install()
    yield
    assert editable_install() == before, "a documented command reinstalled the project: fix the venv"


@pytest.mark.slow
@pytest.mark.parametrize("block", all_blocks(), ids=lambda b: b.name)
def test_documented_block(block, sandbox, install_untouched):
    root, env, values = sandbox
    if block.mode == "skip":
        DOCS.append((block.name, "skipped"))
        pytest.skip(f"marked in the doc: {block.reason}")
    try:
        {"run": run_block, "dry-run": dry_run, "server": serve_lines}[block.mode](
            block, root, env, values)
    except BaseException:
        DOCS.append((block.name, "failed"))
        raise
    DOCS.append((block.name, block.mode))


@pytest.mark.slow
def test_make_demo_runs_end_to_end(sandbox, install_untouched):
    """The README's first command, as a newcomer runs it, in its smoke profile: every command of
    the whole pipeline on synthetic data, at a few steps a run, and the check's parsing and
    provenance checks. The full demo, with its quality floors, runs in CI after the suite
    (.ci/run): its 15 minutes of training would be most of the suite's time."""
    root, env, _ = sandbox
    result = subprocess.run(["make", "demo", "DEMO_PROFILE=smoke"], cwd=root, env=env,
                            capture_output=True, text=True, timeout=DEMO_TIMEOUT,
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    card = root / "out" / "demo" / "model-card" / "README.md"
    assert "synthetic" in card.read_text(encoding="utf-8").lower()
    # its closing check ran on the real model's three runs, and the summary says what is what
    assert "The demo's check holds (smoke profile)" in result.stdout, result.stdout[-3000:]
    assert "state accuracy on the kit's" in result.stdout and "no floor" in result.stdout
    assert "no MediTOD data" in result.stdout and "make chat" in result.stdout
    for task in ("nlu", "pol", "nlg"):
        assert (root / "out" / "demo" / "runs" / "smollm2-135m" / task / "LICENSE").is_file()

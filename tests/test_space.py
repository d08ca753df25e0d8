"""`meditod space`: the app, its package and models uploaded as a private Gradio Space.

Against the local Hub-compatible server (tests/hub_server.py); the client runs in a subprocess
(huggingface_hub reads HF_ENDPOINT at import). The uploaded Space is then run from its files.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from importlib.metadata import packages_distributions, version
from pathlib import Path

import pytest
import yaml
from hub_server import WRITE_TOKEN

from meditod_hub.apps import webapp
from meditod_hub.apps.assistant import Assistant

pytestmark = pytest.mark.usefixtures("one_thread")

PROJECT = Path(__file__).resolve().parent.parent
# What the app runs (app.py, then the predictor's lazy imports and the formats).
APP_MODULES = ["app.py", "meditod_hub/__init__.py", "meditod_hub/quiet.py", "meditod_hub/files.py",
               "meditod_hub/errors.py", "meditod_hub/apps/__init__.py", "meditod_hub/apps/webapp.py",
               "meditod_hub/apps/assistant.py", "meditod_hub/apps/state_view.py",
               "meditod_hub/models/__init__.py", "meditod_hub/models/predictor.py",
               "meditod_hub/models/runs.py", "meditod_hub/data/__init__.py", "meditod_hub/data/views.py",
               "meditod_hub/data/release.py", "meditod_hub/data/state.py", "meditod_hub/data/cmas.py",
               *[f"meditod_hub/models/formats/{p.name}"
                 for p in (PROJECT / "meditod_hub" / "models" / "formats").glob("*.py")]]


def space(env: dict, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "meditod_hub.cli", "space", *flags], cwd=PROJECT,
                          env=env, capture_output=True, text=True, timeout=300)


def front_matter(readme: bytes) -> dict:
    return yaml.safe_load(readme.decode().split("---\n")[1])


def test_upload_is_private_and_runs_from_its_own_files(hub_server, tiny_runs, tmp_path):
    env = hub_server.client_env(tmp_path)
    runs = [f"--{t}={tiny_runs / t}" for t in ("nlu", "pol", "nlg")]
    result = space(env, "--repo", "org/assistant", *runs)
    assert result.returncode == 0, result.stderr[-2000:]
    assert WRITE_TOKEN not in result.stdout + result.stderr
    repo = hub_server.repo("space", "org/assistant")
    assert repo.private
    files = hub_server.files("space", "org/assistant")
    assert {"app.py", "requirements.txt", "README.md", "meditod_app.json",
            "meditod_hub/apps/assistant.py", "models/nlu/model.safetensors",
            "models/pol/run_info.json", "models/nlg/tokenizer.json"} <= set(files)
    assert not [p for p in files if "checkpoint" in p or p.endswith("training_args.bin")]
    meta = front_matter(files["README.md"])
    assert (meta["sdk"], meta["app_file"], meta["sdk_version"]) == ("gradio", "app.py",
                                                                    version("gradio"))
    assert "not medical advice" in files["README.md"].decode()

    deployed = tmp_path / "space"
    for path, content in files.items():
        (deployed / path).parent.mkdir(parents=True, exist_ok=True)
        (deployed / path).write_bytes(content)
    settings = webapp.settings({}, deployed)
    assert [s.source for s in settings.specs.values()] == [str(deployed / "models" / t)
                                                  for t in ("nlu", "pol", "nlg")]
    assistant = Assistant.load(settings.specs)
    assert assistant.respond(assistant.new_conversation(), "I have a cough.").reply

    with hub_server.lock:  # something the owner added by hand stays
        hub_server.commit(repo, "main", "notes", "", {"NOTES.md": b"mine"}, {})
    ids = [f"--{t}=org/meditod-tiny-{t}" for t in ("nlu", "pol", "nlg")]
    again = space(env, "--repo", "org/assistant", *ids, "--nlg_revision=v2")
    assert again.returncode == 0, again.stderr[-2000:]
    files = hub_server.files("space", "org/assistant")
    assert not [p for p in files if p.startswith("models/")] and "NOTES.md" in files
    assert front_matter(files["README.md"])["models"] == [f"org/meditod-tiny-{t}"
                                                          for t in ("nlu", "pol", "nlg")]
    assert b'"revision": "v2"' in files["meditod_app.json"]


def test_without_a_token_it_fails_in_one_line(hub_server, tiny_runs, tmp_path):
    runs = [f"--{t}={tiny_runs / t}" for t in ("nlu", "pol", "nlg")]
    result = space(hub_server.client_env(tmp_path, token=None), "--repo", "org/x", *runs)
    assert result.returncode == 1 and len(result.stderr.strip().splitlines()) == 1
    assert "no Hugging Face token" in result.stderr
    assert ("space", "org/x") not in hub_server.repos


def test_the_spaces_requirements_cover_what_the_app_imports():
    """Every distribution imported by the modules the app runs is in spaces/assistant/requirements.txt
    (gradio comes with the Space's SDK; peft and transformers are loaded by name)."""
    listed = {line.split(">=")[0].strip().lower().replace("_", "-")
              for line in (PROJECT / "spaces" / "assistant" / "requirements.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")}
    names = set()
    for module in APP_MODULES:
        tree = ast.parse((PROJECT / module).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    names -= set(sys.stdlib_module_names) | {"meditod_hub", "gradio", "__future__"}
    distributions = packages_distributions()
    needed = {d.lower().replace("_", "-") for n in names for d in distributions.get(n, [n])}
    assert needed | {"peft", "transformers"} <= listed, needed - listed

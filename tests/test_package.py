"""The package as `pip install .` ships it: built into a wheel, installed into a fresh folder and
run from there, outside the repository, it renders cards from its own templates. No network."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent

FROM_THE_WHEEL = """
import json, sys
from pathlib import Path
import meditod_hub
site, sample, out = sys.argv[1:]
assert meditod_hub.__file__.startswith(site), meditod_hub.__file__
from meditod_hub.data.build import BuildArguments, build
from meditod_hub.data.card import card_template
built = build(BuildArguments(source=Path(sample), out=Path(out)))
package = Path(meditod_hub.__file__).parent
print(json.dumps({"card": (Path(out) / "README.md").read_text(),
                  "model_template": card_template("model_card.md").is_file(),
                  "modules": sorted(str(p.relative_to(package)) for p in package.rglob("*.py")),
                  "annotate": sorted(p.name for p in (package / "apps" / "annotate" / "static").iterdir()),
                  "questions": (package / "apps" / "annotate" / "questions.json").is_file()}))
"""


@pytest.mark.slow
def test_an_installed_wheel_renders_cards_from_its_own_templates(tmp_path):
    wheels, site, tree = tmp_path / "wheels", tmp_path / "site", tmp_path / "tree"
    # built from the tracked files, as from a fresh clone: built in the project itself, setuptools'
    # build/lib would ship a module removed since its last build
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=PROJECT, capture_output=True,
                             check=True).stdout.decode().split("\0")
    for rel in filter(None, tracked):
        if (PROJECT / rel).is_file():
            (tree / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(PROJECT / rel, tree / rel)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(wheels), str(tree)], check=True, capture_output=True,
                   timeout=300)
    [wheel] = wheels.glob("meditod_hub-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                    str(site), str(wheel)], check=True, capture_output=True, timeout=300)
    done = subprocess.run([sys.executable, "-c", FROM_THE_WHEEL, str(site),
                           str(PROJECT / "data" / "sample"), str(tmp_path / "built")],
                          cwd=tmp_path, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin",
                                             "HF_HUB_OFFLINE": "1"},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    shipped = json.loads(done.stdout.splitlines()[-1])
    assert "# MediTOD-shaped synthetic sample" in shipped["card"] and "configs:" in shipped["card"]
    assert shipped["model_template"] and shipped["questions"]
    assert {"index.html", "main.js", "app.css", "guide.html"} <= set(shipped["annotate"])
    # Every module of the source tree ships, the templates of the top-level cards/ folder included
    # (pyproject lists the packages: a new subpackage missing from the list fails here).
    source = PROJECT / "meditod_hub"
    expected = {str(p.relative_to(source)) for p in source.rglob("*.py")} | {"cards/__init__.py"}
    assert set(shipped["modules"]) == expected

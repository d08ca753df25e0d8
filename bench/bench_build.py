"""Build cost at paper scale, as a user feels it: `meditod build` against a plain `json.load` of
the same release, both as whole processes (interpreter start and imports included), with their
peak memory. Two builds of the same dialogues: as a release without a generator record (what a
MediTOD build reads) and as the synthetic release whose licence the build proves by regenerating
it from its recorded seed (the same corpus made again: the extra seconds are that proof).

    .venv/bin/python bench/bench_build.py                   # 233 dialogues (paper Table 3)
    .venv/bin/python bench/bench_build.py --repeats 5
    .venv/bin/python bench/bench_build.py --long_utterance_mb 30   # one absurd utterance

Runs alternate (baseline, build, baseline, build, ...) and the medians are reported, so load
from other processes on a shared machine hits both arms alike. Target: the build at most 5x the
baseline's wall time. `--long_utterance_mb` gives one patient line of that size (every later row
of its dialogue repeats it in `context`): the build's peak memory must stay bounded.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from meditod_hub.data.synthetic import PAPER_DIALOGUES, generate_release  # noqa: E402

TARGET_RATIO = 5.0
LOAD = ("import json, sys, pathlib\n"
        "for p in sorted(pathlib.Path(sys.argv[1]).glob('*.json')):\n"
        "    json.loads(p.read_text(encoding='utf-8'))")


def run(command: list[str]) -> tuple[float, int]:
    """Wall seconds and peak resident memory (KiB) of one child process."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"failed: {' '.join(command)}\n{child.stderr.read().decode()[-2000:]}")
    return wall, usage.ru_maxrss


def with_long_utterance(release: Path, megabytes: float) -> None:
    dialogs = json.loads((release / "dialogs.json").read_text(encoding="utf-8"))
    first = next(iter(dialogs.values()))["utterances"]
    patient = next(u for u in first if u["speaker"] == "patient")
    patient["text"] = "cough " * int(megabytes * 1e6 / 6)
    (release / "dialogs.json").write_text(json.dumps(dialogs), encoding="utf-8")


def without_generator(release: Path, out: Path) -> Path:
    """A copy of `release` whose release.json records no generator: the same dialogues, read as
    any release the kit cannot regenerate (MediTOD's), so the build skips the regeneration that
    proves a synthetic corpus synthetic (`licence._generated`)."""
    shutil.copytree(release, out)
    metadata = json.loads((out / "release.json").read_text(encoding="utf-8"))
    metadata.pop("generator", None)
    (out / "release.json").write_text(json.dumps(metadata), encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dialogues", type=int, default=PAPER_DIALOGUES)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--long_utterance_mb", type=float, default=0.0)
    parser.add_argument("--quick", action="store_true",
                        help="a small run that checks the bench works (CI); its figures mean nothing")
    args = parser.parse_args(argv)
    if args.quick:
        args.dialogues, args.repeats = 12, 1

    with tempfile.TemporaryDirectory() as tmp:
        source = generate_release(Path(tmp) / "release", 0, args.dialogues)
        if args.long_utterance_mb:
            with_long_utterance(source, args.long_utterance_mb)
        megabytes = sum(p.stat().st_size for p in source.glob("*.json")) / 1e6
        plain = without_generator(source, Path(tmp) / "plain")
        load, build, plain_build = [], [], []
        for n in range(args.repeats):
            load.append(run([sys.executable, "-c", LOAD, str(source)]))
            build.append(run([sys.executable, "-m", "meditod_hub.cli", "build", "--source",
                              str(source), "--out", str(Path(tmp) / f"meditod-{n}")]))
            plain_build.append(run([sys.executable, "-m", "meditod_hub.cli", "build", "--source",
                                    str(plain), "--out", str(Path(tmp) / f"plain-{n}")]))
        infos = json.loads((Path(tmp) / "meditod-0" / "dataset_infos.json").read_text())

    rows = {config: sum(s["num_examples"] for s in info["splits"].values())
            for config, info in infos.items()}
    print(f"release: {args.dialogues} synthetic dialogues, {megabytes:.1f} MB of JSON"
          + (f" (one utterance of {args.long_utterance_mb:g} MB)" if args.long_utterance_mb else "")
          + f"; rows: {rows}")
    load_s = statistics.median(w for w, _ in load)
    load_mb = max(m for _, m in load) / 1024
    print(f"json.load, whole process: {load_s:.2f} s wall, peak {load_mb:.0f} MiB "
          f"(median of {args.repeats})")
    for name, arm in (("meditod build, a release that records no generator (as MediTOD's)",
                       plain_build),
                      ("meditod build, the synthetic release, proven by regenerating it from its "
                       "recorded seed", build)):
        build_s, build_mb = statistics.median(w for w, _ in arm), max(m for _, m in arm) / 1024
        ratio = build_s / load_s
        print(f"{name}: {build_s:.2f} s wall, peak {build_mb:.0f} MiB; {ratio:.1f}x the "
              f"baseline's wall time (target <= {TARGET_RATIO:g}x: "
              f"{'met' if ratio <= TARGET_RATIO else 'MISSED'}), {build_mb / load_mb:.1f}x its memory")


if __name__ == "__main__":
    main()

"""Build time at paper scale: `meditod.py build` on the synthetic corpus vs a plain json.load.

    .venv/bin/python bench/bench_build.py             # 233 dialogues (paper Table 3), seed 0
    .venv/bin/python bench/bench_build.py --profile   # plus the hottest functions of the build

Target: the build under 10 s on 2 cores. The baseline (json.load of the same release files) runs
in the same process, so the ratio compares across machines better than the seconds do.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import meditod  # noqa: E402
from meditod_hub.synthetic import PAPER_DIALOGUES, generate_release  # noqa: E402

TARGET_SECONDS = 10.0


def timed(function, *args) -> tuple[float, float]:
    """Wall-clock and CPU seconds: on a shared machine the CPU time is the steadier figure."""
    wall, cpu = time.perf_counter(), time.process_time()
    function(*args)
    return time.perf_counter() - wall, time.process_time() - cpu


def load_release_json(source: Path) -> list:
    return [json.loads(path.read_text(encoding="utf-8")) for path in sorted(source.glob("*.json"))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dialogues", type=int, default=PAPER_DIALOGUES)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", action="store_true",
                        help="print the build's hottest functions")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        source, out = Path(tmp) / "release", Path(tmp) / "meditod"
        generate_s, _ = timed(generate_release, source, args.seed, args.dialogues)
        megabytes = sum(p.stat().st_size for p in source.glob("*.json")) / 1e6
        load_s, load_cpu = timed(load_release_json, source)
        build_args = meditod.BuildArguments(source=source, out=out)
        profiler = cProfile.Profile()
        build = partial(profiler.runcall, meditod.build) if args.profile else meditod.build
        build_s, build_cpu = timed(build, build_args)
        infos = json.loads((out / "dataset_infos.json").read_text(encoding="utf-8"))

    print(f"synthetic release: {args.dialogues} dialogues, {megabytes:.1f} MB of JSON "
          f"(generated in {generate_s:.2f} s)")
    for config, info in infos.items():
        counts = ", ".join(f"{split} {s['num_examples']}" for split, s in info["splits"].items())
        print(f"  {config:<9} rows: {counts}")
    print(f"json.load baseline: {load_s:.2f} s wall, {load_cpu:.2f} s CPU")
    print(f"meditod.build:      {build_s:.2f} s wall, {build_cpu:.2f} s CPU "
          f"({build_cpu / load_cpu:.1f}x the baseline's CPU time)")
    verdict = "met" if build_s < TARGET_SECONDS else "MISSED"
    print(f"target: build under {TARGET_SECONDS:.0f} s wall on 2 cores: {verdict} "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores: the build is mostly "
          "single-threaded, so on an idle machine its wall time is about its CPU time)")
    if args.profile:
        print("profiled: the timings above include the profiler's overhead")
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()

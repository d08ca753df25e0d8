"""What one save of the annotation app costs at paper scale (233 synthetic dialogues, ~22.5k
utterances): open a dialogue, save one edited utterance (validate, refold, splice, atomic write),
save it unchanged, import a transcript, list every dialogue with its problems (the page does after
each save; only the saved dialogue is re-validated).

    .venv/bin/python bench/bench_annotate.py

Baseline, same run: `json.dumps(indent=2)` + a plain write of the whole `dialogs.json` (what a
save that re-serialised the file would cost at least). Figures only; no test asserts a speed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from meditod_hub.apps.annotate.labels import label_of  # noqa: E402
from meditod_hub.apps.annotate.store import ReleaseStore  # noqa: E402
from meditod_hub.data.synthetic import PAPER_DIALOGUES, generate_release  # noqa: E402

REPEATS = 5


def best(function) -> float:
    """Best wall-clock of REPEATS runs (the steadiest figure on a shared machine)."""
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> None:
    global REPEATS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="a small run that checks the bench works (CI); its figures mean nothing")
    args = parser.parse_args(argv)
    if args.quick:
        REPEATS = 1
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "release"
        generate_release(folder, dialogues=12 if args.quick else PAPER_DIALOGUES)
        store = ReleaseStore(folder)
        did = store.dialogue_ids()[len(store.dialogue_ids()) // 2]
        opened = store.open(did)
        labels = [label_of(u) for u in opened["dialogue"]["utterances"]]
        patient = next(i for i, u in enumerate(opened["dialogue"]["utterances"])
                       if u["speaker"] == "patient")
        edits = iter(range(10 ** 6))
        state = {"version": opened["version"]}

        def edit_and_save():
            changed = [list(x) for x in labels]
            changed[patient] = [{"intent": "inform", "slots": {"positive_symptom": [
                {"value": f"bench value {next(edits)}"}]}}]
            state["version"] = store.save(did, changed, state["version"]).version

        def unchanged_save():
            current = store.open(did)
            store.save(did, [label_of(u) for u in current["dialogue"]["utterances"]],
                       current["version"])

        size = (folder / "dialogs.json").stat().st_size
        text = (folder / "dialogs.json").read_text(encoding="utf-8")
        value = json.loads(text)
        baseline = best(lambda: (folder / "baseline.json").write_text(
            json.dumps(value, indent=2, ensure_ascii=False), encoding="utf-8"))
        start = time.perf_counter()
        ReleaseStore(folder).summaries()
        cold = time.perf_counter() - start
        saving = best(edit_and_save)
        figures = {"start + list every dialogue": cold,
                   "open one dialogue": best(lambda: store.open(did)),
                   "save one edited utterance": saving,
                   "save unchanged (no write)": best(unchanged_save),
                   "save + list every dialogue": best(lambda: (edit_and_save(), store.summaries())),
                   "import a 100-line transcript": best(lambda: store.import_transcript(
                       "\n".join(f"{'DP'[i % 2]}: line {i}" for i in range(100)), "bench"))}
        utterances = sum(len(d["utterances"]) for d in value.values())
        print(f"release: {len(value)} dialogues, {utterances} utterances, dialogs.json "
              f"{size / 1e6:.1f} MB; best of {REPEATS}")
        print(f"baseline  json.dumps(indent=2) + write of the whole file: {baseline * 1000:.0f} ms")
        for name, seconds in figures.items():
            print(f"{name:<32} {seconds * 1000:7.0f} ms  ({seconds / baseline:.2f} x baseline)")


if __name__ == "__main__":
    main()

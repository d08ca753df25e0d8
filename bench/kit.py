"""How a bench runs the kit's commands: in its own interpreter, one after the other.

`meditod(*args)` is `meditod <args>` called in this process (meditod_hub.cli.main), from the
project root (recipe paths are relative to it), so torch, transformers, peft and trl import once
per bench, not once per command: ~6 s a command on 2 idle cores (`python -X importtime -c
"import meditod_hub.models.train"`), which in a quick run is most of a command's time. A
command's own lines go to stderr, beside the bench's progress, so stdout holds the bench's
figures alone. The seconds returned are the command's work (loading its models included),
without an interpreter's start. A command that fails ends the bench.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
SMOLLM2 = "SmolLM2-135M-Instruct"
STAND_IN = "a tiny random Llama stand-in (--quick: the figures mean nothing)"
STAND_IN_CONTEXT = 16384


def meditod(*args: str | Path) -> float:
    """`meditod <args>` in this process; its wall-clock seconds."""
    from meditod_hub.cli import main

    words = [str(a) for a in args]
    print(f"[{time.strftime('%H:%M:%S')}] meditod {' '.join(words[:3])} ...", file=sys.stderr,
          flush=True)
    start = time.perf_counter()
    with contextlib.chdir(ROOT), contextlib.redirect_stdout(sys.stderr):
        code = main(words)
    if code:
        sys.exit(f"meditod {' '.join(words[:3])} ... failed (exit {code}): its error is above")
    return time.perf_counter() - start


def synthetic(*args: str | Path) -> None:
    """`python -m meditod_hub.commands.synthetic <args>` (a corpus generator, no `meditod`
    command) in this process."""
    from meditod_hub.commands.synthetic import main
    from meditod_hub.errors import run_main

    with contextlib.chdir(ROOT), contextlib.redirect_stdout(sys.stderr):
        code = run_main(main, [str(a) for a in args])
    if code:
        sys.exit(f"synthetic {' '.join(map(str, args[:2]))} ... failed (exit {code})")


def base_model(quick: bool) -> tuple[Path, str]:
    """The real-model benches' base and its name: SmolLM2-135M-Instruct (`meditod pretrained`'s
    offline conversion, made once into build/pretrained), or under `--quick` a tiny random
    Llama-shaped model (`meditod tiny` on the embedded sample, under a temporary folder): the
    same architecture, recipes and code paths in seconds, for a run that only shows the bench
    works. The stand-in's context is raised to STAND_IN_CONTEXT: its tokenizer, trained on ten
    dialogues, spells a few-shot prompt in several times SmolLM2's tokens (RoPE takes any
    length)."""
    if not quick:
        meditod("pretrained")
        return ROOT / "build/pretrained/smollm2-135m", SMOLLM2
    work = Path(tempfile.mkdtemp(prefix="bench-stand-in-"))
    atexit.register(shutil.rmtree, work, ignore_errors=True)  # the bench's own folder
    meditod("build", "--source", ROOT / "data/sample", "--out", work / "meditod")
    meditod("tiny", "--data", work / "meditod", "--out", work / "tiny", "--models", "tiny-llama")
    config = work / "tiny/tiny-llama/config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()),
                                  "max_position_embeddings": STAND_IN_CONTEXT}))
    return work / "tiny/tiny-llama", STAND_IN

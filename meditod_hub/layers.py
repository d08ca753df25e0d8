"""The kit's floors: every import inside `meditod_hub` points down (or stays on its floor).

A unit is a top-level module (`errors`, `files`, ...) or a package with everything under it
(`data`, `models`, ...). A unit may import the units of its own floor's lower floors and, within
itself, anything; it never imports a unit on a higher floor, and units of one floor never import
each other both ways. tests/test_layers.py parses every module's imports (module-level and
inside functions) and fails on an upward import or a cycle between units.

    0  errors, files, quiet, arguments, hubclient,  what every command stands on: one-line
       endpoint                                     failures, atomic writes, silenced libraries,
                                                    flag parsing, Hub HTTP deadlines, the one
                                                    OpenAI-compatible client (models, few-shot
                                                    runs and the LLM judge all call it)
    1  data         a release -> dialogues -> the tasks' rows -> the built dataset and its card;
                    the tasks' metrics (`data/metrics`), which a task scores itself with
    2  models       formats, training, run folders, the Predictor, its prediction records, and
                    the one cascade NLU -> state -> POL -> NLG (the assistant and eval-cascade)
    3  evaluation   predictions -> the paper's metrics -> results
    4  publishing   model cards, Hub pushes, Spaces
    5  apps         the assistant, chat, web app and annotation portal
    6  cli          `meditod`: dispatch only (it names command modules as strings)
       commands     one module per subcommand: its `main(argv)` parses the flags into the
                    library's `*Arguments` dataclasses (or the command's own, where nothing
                    else reads them: `PredictArguments`) and calls the library, which never
                    reads argv nor takes it (or train's overrides) as a parameter
                    (tests/test_layers.py checks that too)

A deferred (function-level) import is kept only where start-up time needs it (a heavy library, an
optional extra, or a module `meditod -h` must not load), with a comment giving the reason
(`# deferred: torch is slow to import`; tests/test_layers.py fails on one without); never to
break a circle. Anything else is imported at module level.

tests/test_layers.py also imports the floors one by one in a fresh interpreter and checks that,
after floors 0..f, no module of a higher floor is loaded.
"""

from __future__ import annotations

LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "files", "quiet", "arguments", "hubclient", "endpoint", "layers", "strictjson", "netwait"),
    ("data",),
    ("models",),
    ("evaluation",),
    ("publishing",),
    ("apps",),
    ("cli", "commands"),
)


def floor_of(unit: str) -> int:
    """The floor of a unit (`data`, `errors`, ...); `meditod_hub` itself is on the ground floor."""
    if unit == "meditod_hub":
        return 0
    for floor, units in enumerate(LAYERS):
        if unit in units:
            return floor
    raise KeyError(f"meditod_hub.{unit} is on no floor: add it to meditod_hub.layers.LAYERS")

"""What the held-out checks' commands share (`meditod eval-state`, `eval-policy`, `eval-nlg`):
their flags -> the check's `evaluate` -> what was scored on what, the figures, where they went."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from meditod_hub import quiet
from meditod_hub.arguments import parse_args


def run_check(argv: list[str], command: str, check: ModuleType, arguments: type,
              evaluate: Callable[[object], dict], files: tuple[str, str]) -> int:
    """Parse `arguments` for `command`, run `evaluate`, print its results with `check.table`;
    `files`: the results file and the per-item file the check writes."""
    (args,) = parse_args((arguments,), argv, command, check.__doc__.split("\n\n")[0])
    quiet.progress_bars_off()
    results = evaluate(args)
    print(f"{results['model']} on {results['evaluated_on']}; trained on {results['trained_on']}; "
          f"{'under the CMAS grammar' if results['constrained'] else 'free decoding'}:")
    print(check.table(results))
    print(f"wrote {results['out']}/{files[0]} and {files[1]}")
    return 0

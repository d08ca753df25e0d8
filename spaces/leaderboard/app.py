"""MediTOD leaderboard: the paper's tables beside every published model, a Hub Space's entry point.

    MEDITOD_LEADERBOARD_DATASET=my-org/meditod python spaces/leaderboard/app.py

Settings and refresh: see `meditod_hub/publishing/leaderboard.py`; `meditod leaderboard` uploads this file
with the package beside it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no telemetry, no version check

from meditod_hub.errors import run_main  # noqa: E402
from meditod_hub.publishing.leaderboard import serve  # noqa: E402


def main(argv: list[str]) -> int:
    serve(Path(__file__).resolve().parent)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))

"""MediTOD history-taking assistant: the Hub Space's entry point (`meditod app` locally).

    python app.py                                   # the same as `meditod app`, settings beside this file

Settings, privacy and storage: see `meditod_hub/apps/webapp.py`. A research demo, not medical advice.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no telemetry, no version check

from meditod_hub.commands import app  # noqa: E402
from meditod_hub.errors import run_main  # noqa: E402

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    sys.exit(run_main(lambda argv: app.main(argv, base=HERE), sys.argv[1:]))

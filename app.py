"""MediTOD history-taking assistant: a Gradio chat app, and a Hub Space's entry point.

    python app.py                                   # the tiny offline models (make tiny-runs)
    MEDITOD_NLU=org/meditod-llama3-8b-nlu MEDITOD_POL=... MEDITOD_NLG=... python app.py
    GRADIO_SERVER_PORT=7861 python app.py           # Gradio's own settings apply

Settings, privacy and storage: see `meditod_hub/webapp.py`. A research demo, not medical advice.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no telemetry, no version check

from meditod_hub import webapp  # noqa: E402
from meditod_hub.assistant import Assistant  # noqa: E402
from meditod_hub.errors import run_main  # noqa: E402

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    settings = webapp.settings(base=HERE)
    print("loading the NLU, POL and NLG models ...", file=sys.stderr)
    assistant = Assistant.load(*settings.specs)
    for note in assistant.loading:  # which stages share a base, and why others do not
        print(f"  {note}", file=sys.stderr)
    demo = webapp.build(assistant, settings.save_dir)
    webapp.launch(demo)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))

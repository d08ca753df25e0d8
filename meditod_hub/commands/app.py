"""`meditod app` (and the Space's app.py): the flags of `AppArguments` -> the web app
(`apps.webapp`), its models and storage from the environment and `base`."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from meditod_hub import quiet
from meditod_hub.apps import webapp
from meditod_hub.apps.assistant import Assistant
from meditod_hub.apps.webapp import DEFAULT_RUNS, AppArguments
from meditod_hub.arguments import parse_args
from meditod_hub.errors import run_main
from meditod_hub.models.cascade import loading_message, stages


def main(argv: list[str], base: Path | None = None) -> int:
    """Settings from the environment and `base` (default the working folder)."""
    (args,) = parse_args((AppArguments,), argv, "meditod app",
                         webapp.__doc__.split("\n\n")[0] + " Models: MEDITOD_"
                         + "/".join(task.display_name for task in stages()) + " (run "
                         f"folders or Hub ids), default {DEFAULT_RUNS}/<task>; MEDITOD_SAVE_DIR: "
                         "opt-in transcripts.")
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")  # no telemetry, no version check
    app_settings = webapp.settings(base=base)
    quiet.progress_bars_off()
    print(loading_message(stages()), file=sys.stderr)
    assistant = Assistant.load(app_settings.specs)
    for note in assistant.loading:  # which stages share a base, and why others do not
        print(f"  {note}", file=sys.stderr)
    demo = webapp.build(assistant, app_settings.save_dir)
    address = {key: value for key, value in (("server_name", args.host), ("server_port", args.port))
               if value is not None}
    webapp.launch(demo, **address)
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))

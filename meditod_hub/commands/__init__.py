"""One module per `meditod` subcommand, on top of the library: its `main(argv) -> int` parses the
flags into the library's documented `*Arguments` dataclasses and calls the library, which takes
typed arguments and never reads argv (as TRL's `trl/cli.py` dispatches to `trl/scripts/`).
`cli` names them as strings, so a command module is imported only when its command runs."""

from meditod_hub.hubclient import bound_hub_requests

bound_hub_requests()  # every command: no Hub request waits forever (harness, space, annotate, ...)

"""`meditod chat`: the flags of `PipelineArguments` (made from the stages) and `ChatArguments`
-> the stages' models loaded as one `Assistant`, talked to on stdin/stdout (`apps.chat.converse`)."""

from __future__ import annotations

import sys

from meditod_hub import quiet
from meditod_hub.apps import chat
from meditod_hub.apps.assistant import Assistant
from meditod_hub.apps.chat import ChatArguments
from meditod_hub.arguments import parse_args
from meditod_hub.errors import EXIT_OK, run_main
from meditod_hub.models.cascade import loading_message, pipeline_arguments, stages


def argument_types() -> tuple[type, ...]:
    """The flags' dataclasses: the pipeline's, made from the stages now, and the chat's."""
    return pipeline_arguments(stages()), ChatArguments


def main(argv: list[str]) -> int:
    pipeline, args = parse_args(argument_types(), argv, "meditod chat",
                                chat.__doc__.split("\n\n")[0])
    quiet.progress_bars_off()
    print(loading_message(pipeline.STAGES), file=sys.stderr)
    assistant = Assistant.load(pipeline.specs(), max_patient_chars=args.max_patient_chars)
    if hasattr(sys.stdin, "reconfigure"):
        sys.stdin.reconfigure(errors="surrogateescape")  # a bad line is skipped, not fatal
    for note in assistant.loading:  # which stages share a base, and why others do not
        print(f"  {note}", file=sys.stderr)
    try:
        chat.converse(assistant, sys.stdin, sys.stdout, args.show_state, sys.stdin.isatty())
    except KeyboardInterrupt:
        print("\n(conversation ended)", file=sys.stderr)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))

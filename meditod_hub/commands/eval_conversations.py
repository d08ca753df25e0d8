"""`meditod eval-conversations`: the flags of `PipelineArguments` (made from the stages) and
`EvalConversationsArguments` -> the stages' models loaded as one `Assistant`, run through the
scripted conversations (`evaluation.conversations`)."""

from __future__ import annotations

import sys

from meditod_hub import quiet
from meditod_hub.apps.assistant import Assistant
from meditod_hub.arguments import parse_args
from meditod_hub.errors import run_main
from meditod_hub.evaluation import conversations
from meditod_hub.evaluation.conversations import EvalConversationsArguments
from meditod_hub.models.cascade import loading_message, pipeline_arguments, stages


def argument_types() -> tuple[type, ...]:
    """The flags' dataclasses: the pipeline's, made from the stages now, and the scripts'."""
    return pipeline_arguments(stages()), EvalConversationsArguments


def main(argv: list[str]) -> int:
    pipeline, args = parse_args(argument_types(), argv,
                                "meditod eval-conversations",
                                conversations.__doc__.split("\n\n")[0])
    quiet.progress_bars_off()
    models = pipeline.sources()
    scripts = conversations.selected_scripts(args.script, args.turns)  # both fail before any model loads
    out = conversations.results_folder(args, models)
    print(loading_message(pipeline.STAGES), file=sys.stderr)
    assistant = Assistant.load(pipeline.specs())  # the assistant's default: under the grammar
    results = conversations.evaluate_conversations(assistant, scripts, out, models)
    print(f"the assistant ({results['trained_on']}) on {results['evaluated_on']}:")
    print(conversations.table(results))
    print(f"wrote {results['out']}/{conversations.RESULTS_FILE} and {conversations.TRANSCRIPT_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))

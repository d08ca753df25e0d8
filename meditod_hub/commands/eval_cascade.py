"""`meditod eval-cascade`: the flags of `PipelineArguments` (made from the stages) and
`EvalCascadeArguments` -> which data scores the stages' runs, then
`evaluation.eval_cascade.evaluate_cascade`."""

from __future__ import annotations

import sys

from meditod_hub import quiet
from meditod_hub.arguments import parse_args
from meditod_hub.data.metrics.nlg import bertscore_setting
from meditod_hub.errors import run_main
from meditod_hub.evaluation import eval_cascade
from meditod_hub.evaluation.eval_cascade import EvalCascadeArguments
from meditod_hub.models.cascade import pipeline_arguments, stages
from meditod_hub.models.runs import choose_data, trained_data


def argument_types() -> tuple[type, ...]:
    """The flags' dataclasses: the pipeline's, made from the stages now, and the evaluation's."""
    return pipeline_arguments(stages()), EvalCascadeArguments


def main(argv: list[str]) -> int:
    pipeline, args = parse_args(argument_types(), argv,
                                "meditod eval-cascade", eval_cascade.__doc__.split("\n\n")[0])
    quiet.progress_bars_off()
    args.data, notes = choose_data(args.data, {f"the {task.upper()} run": trained_data(source)
                                               for task, source in pipeline.sources().items()})
    for note in notes:
        print(note, file=sys.stderr)
    if args.bertscore_model:
        bertscore_setting(args.bertscore_model, args.bertscore_layer)
    results = eval_cascade.evaluate_cascade(pipeline, args)
    print(f"{eval_cascade.summary(results)}; wrote {results['out']}/results.json, .md, .png")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))

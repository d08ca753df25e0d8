"""`meditod evaluate`: the flags of `EvaluateArguments` -> where the results go and which data
scores them, then `evaluation.evaluate.evaluate` and the results files."""

from __future__ import annotations

import sys

from meditod_hub.arguments import parse_args
from meditod_hub.data.metrics.nlg import bertscore_setting
from meditod_hub.data.tasks import get_task
from meditod_hub.errors import run_main
from meditod_hub.evaluation import evaluate
from meditod_hub.evaluation.evaluate import EvaluateArguments
from meditod_hub.evaluation.report import write_results
from meditod_hub.files import output_path
from meditod_hub.models.records import file_in, results_name, side_files
from meditod_hub.models.runs import choose_data, trained_data


def main(argv: list[str]) -> int:
    (args,) = parse_args((EvaluateArguments,), argv, "meditod evaluate",
                         evaluate.__doc__.split("\n\n")[0])
    args.out = file_in(args.out or args.predictions.parent, results_name(args.predictions), ".json")
    args.data, notes = choose_data(args.data, {"the predictions' run": trained_data(args.predictions)})
    for note in notes:
        print(note, file=sys.stderr)
    for path in (args.out, *side_files(args.out)):
        output_path(path, purpose="evaluate", inputs=[args.predictions, args.judge_cache],
                    input_folders=[args.data])
    task = get_task(args.task)
    if args.bertscore_model and not task.structured:
        bertscore_setting(args.bertscore_model, args.bertscore_layer)
    results = evaluate.evaluate(args, task)
    write_results(results, args.out, chart=args.chart, purpose="evaluate",
                  system=evaluate.system_of(args.predictions))
    headline = task.headline_metric
    print(f"{headline.name} {format(results.value(headline.key), headline.fmt)}; "
          f"{results.scores['parse_failures']} parse failures -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))

"""`meditod eval-cascade`: the flags of `PipelineArguments` and `EvalCascadeArguments` -> which
data scores the three runs, then `evaluation.eval_cascade.evaluate_cascade`."""

from __future__ import annotations

import sys

from meditod_hub import quiet
from meditod_hub.arguments import parse_args
from meditod_hub.data.metrics.nlg import bertscore_setting
from meditod_hub.data.tasks import CASCADED_TASK_NAMES
from meditod_hub.errors import run_main
from meditod_hub.evaluation import eval_cascade
from meditod_hub.evaluation.eval_cascade import EvalCascadeArguments
from meditod_hub.models.cascade import PipelineArguments
from meditod_hub.models.runs import choose_data, trained_data


def main(argv: list[str]) -> int:
    pipeline, args = parse_args((PipelineArguments, EvalCascadeArguments), argv,
                                "meditod eval-cascade", eval_cascade.__doc__.split("\n\n")[0])
    quiet.progress_bars_off()
    args.data, notes = choose_data(args.data, {f"the {task.upper()} run": trained_data(source)
                                               for task, source in pipeline.sources().items()})
    for note in notes:
        print(note, file=sys.stderr)
    if args.bertscore_model:
        bertscore_setting(args.bertscore_model, args.bertscore_layer)
    results = eval_cascade.evaluate_cascade(pipeline, args)
    pol, nlg = (results[task] for task in CASCADED_TASK_NAMES)
    print(f"POL F1 {pol['gold_input']['f1']:.4f} -> {pol['cascaded']['f1']:.4f} cascaded; "
          f"NLG BLEU-4 {nlg['gold_input']['bleu4']:.2f} -> {nlg['cascaded']['bleu4']:.2f}; "
          f"wrote {results['out']}/results.json, .md, .png")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))

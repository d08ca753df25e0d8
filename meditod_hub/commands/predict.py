"""`meditod predict`: the flags of `PredictArguments` -> where the predictions go and which data
they are made on, then the Predictor (`models.predict`) over the split."""

from __future__ import annotations

import sys
from pathlib import Path

from meditod_hub.arguments import parse_args
from meditod_hub.data.tasks import MULTITASK, get_task
from meditod_hub.errors import UsageError, run_main
from meditod_hub.files import output_path
from meditod_hub.models import predict
from meditod_hub.models.predict import PredictArguments
from meditod_hub.models.predictor import load_predictor
from meditod_hub.models.records import file_in, predictions_name, write_predictions
from meditod_hub.models.runs import choose_data, run_of, run_settings, trained_data


def main(argv: list[str]) -> int:
    (args,) = parse_args((PredictArguments,), argv, "meditod predict",
                         predict.__doc__.split("\n\n")[0])
    run = run_of(args.model_path) if Path(args.model_path).is_dir() else None
    if args.out is None and run is None:
        raise UsageError("--out: give the folder for the predictions (the model is not a run "
                         "folder, whose eval/<split> is the default)")
    if args.out is None:  # the run's own evaluation folder (`runs.Run.eval_folder`)
        args.out = run / "eval" / args.split
        if run_settings(run)[0].get("task") == MULTITASK:
            args.out = args.out / args.task
    args.out = file_in(args.out, predictions_name(args.constrained), ".jsonl")
    args.data, notes = choose_data(args.data, {"the model": trained_data(args.model_path)})
    for note in notes:
        print(note, file=sys.stderr)
    out = output_path(args.out, purpose="predict", inputs=[args.upstream],
                      input_folders=[args.data])
    task = get_task(args.task)
    rows = predict.load_rows(args.data, task.name, args.split)[:args.limit]
    if args.upstream:
        rows = predict.cascade_rows(task, rows, args.upstream)
    predictor = load_predictor(predict.model_spec(args), task)
    if predictor.constraint is not None:
        print(predict.describe_constraint(predictor), file=sys.stderr)
    records = predictor.predict(rows, progress=True)
    write_predictions(records, out, purpose="predict")
    print(predict.parse_failure_summary(records), file=sys.stderr)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))

"""`meditod harness`: the flags of `HarnessArguments` -> the harnesses' task folder
(`evaluation.harness.export`) and the command lines that run it."""

from __future__ import annotations

import sys

from meditod_hub.arguments import parse_args
from meditod_hub.endpoint import check_url
from meditod_hub.errors import UsageError, run_main
from meditod_hub.evaluation.fewshot.retrieval import Retriever
from meditod_hub.evaluation.harness import command, export
from meditod_hub.evaluation.harness.command import HarnessArguments
from meditod_hub.files import output_folder
from meditod_hub.models.families import get_family
from meditod_hub.models.loading import model_source
from meditod_hub.models.predictor import check_named_family
from meditod_hub.models.runs import run_settings


def main(argv: list[str]) -> int:
    (args,) = parse_args((HarnessArguments,), argv, "meditod harness",
                         command.__doc__.split("\n\n")[0])
    settings = tuple(s.strip() for s in args.settings.split(",") if s.strip())
    if not settings or set(settings) - {"icl", "ft"}:
        raise UsageError(f"--settings {args.settings!r}: give icl, ft or icl,ft")
    splits = ([s.strip() for s in args.splits.split(",") if s.strip()] if args.splits
              else command.splits_of(args.data))
    if not splits:
        raise UsageError(f"--splits {args.splits!r} names no split: give e.g. test,test_ood")
    folder = model_source(args.model, "--model") if args.model is not None else None
    if folder is not None and args.family is not None:
        check_named_family(get_family(args.family), args.family, args.model,
                           run_settings(folder)[0], folder)
    check_url(args.endpoint, "--endpoint")
    out = output_folder(args.out, purpose=export.PURPOSE, input_folders=[args.data])
    retriever = None
    if "icl" in settings:
        retriever = Retriever(args.retriever)
    written = export.write(out, args.data, splits, settings=settings, shots=args.shots,
                           retriever=retriever, retrieval_cache=args.retrieval_cache,
                           ft_max_new_tokens=args.max_new_tokens, limit=args.limit, model=args.model,
                           family=args.family, endpoint=args.endpoint,
                           eos=command.eos_token(args.model))
    rows = sum(written.rows.values())
    print(f"{sum(map(len, written.tasks.values()))} tasks, {rows} rows ({', '.join(splits)}) -> {out}")
    print("\n".join(command.commands(written, args.model, args.endpoint)))
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))

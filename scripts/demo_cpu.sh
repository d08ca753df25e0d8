#!/usr/bin/env bash
# The whole MediTOD pipeline on the embedded synthetic sample, on CPU, offline: `make demo`.
#
#   1. build data/sample (10 invented dialogues, MediTOD's release format) into out/demo/meditod
#   2. build tiny random-weight models with tokenizers trained offline on it (meditod tiny)
#   3. train the tiny Llama-shaped model on NLU, POL and NLG (recipes/tiny-llama, all weights)
#   4. predict and evaluate each task on the train split (memorised: near-perfect scores) and
#      on the test split (unseen: the pipeline runs, the scores mean nothing), print the tables
#   5. render the NLU run's model card (no network) to out/demo/model-card/README.md
#
# Takes about 4 minutes on 2 CPU cores. Everything goes under out/demo, which it replaces: it
# never touches ./meditod, runs/ or anything else. PYTHON (default .venv/bin/python) runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
meditod=("$python" -m meditod_hub.cli)
demo=out/demo
data=$demo/meditod

rm -rf "$demo"  # the demo's own folder, from an earlier demo
"${meditod[@]}" build --source data/sample --out "$data"
"${meditod[@]}" tiny --data "$data" --out "$demo/tiny-models"
for task in nlu pol nlg; do
  run=$demo/runs/tiny-llama/$task
  "${meditod[@]}" train "recipes/tiny-llama/$task.yaml" --dataset_name="$data" \
    --model_name_or_path="$demo/tiny-models/tiny-llama" --output_dir="$run"
  for split in train test; do
    "${meditod[@]}" predict --model_path "$run" --task "$task" --data "$data" --split "$split" \
      --out "$run/eval/$split/predictions.jsonl"
    "${meditod[@]}" evaluate --task "$task" --data "$data" --split "$split" \
      --predictions "$run/eval/$split/predictions.jsonl" --out "$run/eval/$split/results.json"
  done
done
for task in nlu pol nlg; do
  for split in train test; do
    echo; echo "== tiny-llama, $task, $split split =="
    cat "$demo/runs/tiny-llama/$task/eval/$split/results.md"
  done
done
"${meditod[@]}" publish --run "$demo/runs/tiny-llama/nlu" --repo local/meditod-tiny-llama-nlu \
  --dry_run --card_dir "$demo/model-card"

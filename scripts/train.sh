#!/usr/bin/env bash
# `make train` helper: train MODEL on one task, or on nlu, pol and nlg in turn.
#
#   scripts/train.sh MODEL [TASK]
#   env: DATA (dataset folder or Hub id, default meditod), OUT (runs root of the model, default
#        runs/MODEL; the run directory is OUT/TASK), GPUS (processes; >1 launches
#        accelerate with ACCELERATE_CONFIG, default recipes/accelerate/ddp.yaml),
#        ARGS (extra --key=value overrides), PYTHON (default .venv/bin/python)
set -euo pipefail
model=${1:?usage: scripts/train.sh MODEL [TASK]}
tasks=${2:-nlu pol nlg}
python=${PYTHON:-.venv/bin/python}
gpus=${GPUS:-1}
out=${OUT:-runs/$model}
if [[ ! -d recipes/$model ]]; then
  echo "no recipes/$model; models: $(ls recipes | grep -v accelerate | tr '\n' ' ')" >&2
  exit 2
fi
for task in $tasks; do
  recipe=recipes/$model/$task.yaml
  if [[ ! -f $recipe ]]; then
    echo "no recipe $recipe; tasks: nlu pol nlg" >&2
    exit 2
  fi
  if (( gpus > 1 )); then
    launch=("$python" -m accelerate.commands.launch
            --config_file "${ACCELERATE_CONFIG:-recipes/accelerate/ddp.yaml}"
            --num_processes "$gpus" -m meditod_hub.train)
  else
    launch=("$python" -m meditod_hub.train)
  fi
  # shellcheck disable=SC2086  # ARGS is a list of --key=value words
  "${launch[@]}" "$recipe" --dataset_name="${DATA:-meditod}" --output_dir="$out/$task" ${ARGS:-}
done

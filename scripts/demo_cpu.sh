#!/usr/bin/env bash
# The whole MediTOD pipeline on synthetic data, on CPU, offline: `make demo` (VERBOSE=1: every
# command's own output; otherwise one line per stage, the output kept in out/demo/logs/).
#
#   1. build data/sample (10 invented dialogues, MediTOD's release format) into out/demo/meditod
#   2. the tiny random-weight Llama: build it, train it on NLU, POL and NLG (all weights), predict
#      and evaluate each task on the train split (seen: memorised) and the test split (unseen)
#   3. a realistic synthetic corpus (12 invented dialogues: varied phrasings, denials, several
#      slots a turn) built into out/demo/realistic
#   4. the real model: SmolLM2-135M-Instruct converted offline (meditod pretrained, once, into
#      build/pretrained), 80 LoRA steps of 4 NLU examples on the realistic corpus (more updates
#      of 4 learn more than fewer of 8 in the same CPU time), predicted and evaluated on its
#      unseen test dialogue beside the tiny model on the same rows
#   5. the assistant on the demo's runs (SmolLM2 NLU, tiny POL and NLG; as `make chat` loads them:
#      the CMAS grammar, medical values from the NLU run's training split), fed three patient
#      lines: the check that every NLU answer parses, every turn has actions, and the state
#      holds the cough as present and the fever as absent
#   6. the NLU run's model card (no network), the summary, and what to run next
#
# About 12 minutes on 2 CPU cores. Everything goes under out/demo, which it replaces, except the
# converted real model (build/pretrained/smollm2-135m, made once and reused). PYTHON (default
# .venv/bin/python) runs it. TINY_RUNS=<folder> (the test suite's, which trains them once per
# test run): step 2's three runs, trained by the same recipes on the same sample, copied in
# instead of trained again (each must be a tiny-llama run of its task: checked, and said).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
meditod=("$python" -m meditod_hub.cli)
demo=out/demo
data=$demo/meditod
realistic=$demo/realistic
logs=$demo/logs
started=$SECONDS

rm -rf "$demo"  # the demo's own folder, from an earlier demo
mkdir -p "$logs"

# stage NAME COMMAND...: run one step, one line of progress; its output goes to logs/NAME.log
# (shown as it comes with VERBOSE=1), and its last lines are shown if it fails.
stage() {
  local name=$1 begun=$SECONDS
  shift
  printf '%-58s' "[$(date +%H:%M:%S)] $name" >&2
  if [[ "${VERBOSE:-0}" == 1 ]]; then
    echo >&2
    "$@" 2>&1 | tee "$logs/$name.log"
  elif ! "$@" > "$logs/$name.log" 2>&1; then
    echo " FAILED; the end of $logs/$name.log:" >&2
    tail -n 20 "$logs/$name.log" >&2
    exit 1
  fi
  echo " $((SECONDS - begun)) s" >&2
}

evaluate() {  # evaluate RUN TASK DATA SPLIT EVAL_DIR
  stage "$(basename "$(dirname "$1")")-$2-predict-$4-$(basename "$3")" "${meditod[@]}" predict \
    --model_path "$1" --task "$2" --data "$3" --split "$4" --out "$5/predictions.jsonl"
  stage "$(basename "$(dirname "$1")")-$2-evaluate-$4-$(basename "$3")" "${meditod[@]}" evaluate \
    --task "$2" --data "$3" --split "$4" --predictions "$5/predictions.jsonl" \
    --out "$5/results.json"
}

echo "MediTOD pipeline demo on synthetic data (no MediTOD text), CPU only; logs in $logs" >&2
stage build-sample "${meditod[@]}" build --source data/sample --out "$data"
[[ -n "${TINY_RUNS:-}" ]] || stage tiny-models "${meditod[@]}" tiny --data "$data" \
  --out "$demo/tiny-models" --models tiny-llama
for task in nlu pol nlg; do
  run=$demo/runs/tiny-llama/$task
  if [[ -n "${TINY_RUNS:-}" ]]; then
    stage "tiny-llama-$task-copied-from-TINY_RUNS" "$python" - "$TINY_RUNS/$task" "$task" "$run" <<'PY'
import shutil, sys
from meditod_hub.models.runs import RunError, read_run
source, task, run = sys.argv[1:]
try:
    found = read_run(source, require_results=False)
except RunError as error:
    sys.exit(f"TINY_RUNS: {error}")
if (found.model, found.task) != ("tiny-llama", task):
    sys.exit(f"TINY_RUNS: {source} is a {found.model} {found.task} run, not one of "
             f"recipes/tiny-llama/{task}.yaml; unset TINY_RUNS to train it here")
shutil.copytree(source, run)
PY
  else
    stage "tiny-llama-$task-train" "${meditod[@]}" train "recipes/tiny-llama/$task.yaml" \
      --dataset_name="$data" --model_name_or_path="$demo/tiny-models/tiny-llama" --output_dir="$run"
  fi
  for split in train test; do
    evaluate "$run" "$task" "$data" "$split" "$run/eval/$split"
  done
done

stage realistic-corpus "$python" -m meditod_hub.commands.synthetic --out "$demo/realistic-release" \
  --dialogues 12 --style realistic
stage realistic-build "${meditod[@]}" build --source "$demo/realistic-release" --out "$realistic"
stage smollm2-convert "${meditod[@]}" pretrained
smollm2=$demo/runs/smollm2-135m/nlu
stage smollm2-nlu-train "${meditod[@]}" train recipes/smollm2-135m/nlu.yaml \
  --dataset_name="$realistic" --max_steps=80 --per_device_train_batch_size=4 --learning_rate=2e-3 \
  --output_dir="$smollm2"
evaluate "$smollm2" nlu "$realistic" test "$smollm2/eval/test"
evaluate "$demo/runs/tiny-llama/nlu" nlu "$realistic" test "$demo/runs/tiny-llama/nlu/eval/realistic-test"

stage assistant-check "$python" scripts/demo_check.py --demo "$demo"
stage model-card "${meditod[@]}" publish --run "$demo/runs/tiny-llama/nlu" \
  --repo local/meditod-tiny-llama-nlu --dry_run --card_dir "$demo/model-card"
cat "$logs/assistant-check.log"
echo "The demo took $(( (SECONDS - started) / 60 )) min $(( (SECONDS - started) % 60 )) s."

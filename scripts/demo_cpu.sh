#!/usr/bin/env bash
# The whole MediTOD pipeline on synthetic data, on CPU, offline: `make demo` (VERBOSE=1: every
# command's own output; otherwise one line per stage, the output kept in out/demo/logs/).
#
#   1. build data/sample (10 invented dialogues, MediTOD's release format) into out/demo/meditod:
#      the release checks and the Hub-ready folder
#   2. a realistic synthetic corpus (DIALOGUES invented dialogues: varied phrasings, denials,
#      several slots a turn) built into out/demo/realistic
#   3. the real model: SmolLM2-135M-Instruct converted offline (meditod pretrained, once, into
#      build/pretrained), one LoRA run per task on the realistic corpus (NLU_STEPS, POL_STEPS,
#      NLG_STEPS steps of 4 examples: more updates of 4 learn more than fewer of 8 in the same
#      CPU time); the NLU run predicted and evaluated on the corpus's unseen test dialogue
#   4. the NLU run's state accuracy on the kit's held-out patient lines (meditod eval-state); POL
#      and NLG are judged by what the assistant does with them (5): predicting POL's test split
#      alone (whole-dialogue states in every prompt) took longer than training it
#   5. the assistant on the three runs (as `make chat` loads them: the CMAS grammar, medical
#      values from each run's training split), fed two patient lines; the check
#      (scripts/demo_check.py) fails the demo when the state accuracy is below its floor, an
#      NLU answer does not parse, a reply that asks is not a question, or the tracked state is
#      not exactly what the patient said
#   6. the NLU run's model card (no network), the summary, and what to run next
#
# Everything goes under out/demo, which it replaces, except the converted real model
# (build/pretrained/smollm2-135m, made once and reused). PYTHON (default .venv/bin/python) runs
# it. How long it takes, measured: the README ("Two commands on a fresh machine").
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-.venv/bin/python}
meditod=("$python" -m meditod_hub.cli)
demo=out/demo
realistic=$demo/realistic
logs=$demo/logs
started=$SECONDS
# The training budget (bench/bench_state_curve.py measures the state accuracy along the steps):
# NLU gets most of it, as the assistant's state is NLU's (on a 60-dialogue corpus, bf16: 150
# steps 0.60 exact, 400 steps 0.83, on the dev lines). 16 dialogues keep the test split to one
# dialogue, which the NLU run predicts; 260 steps of 4 see their 613 NLU rows about 1.7 times
# (grouped by length; the step count chosen on the dev lines: bf16 0.731 exact, float32 0.615;
# 245 steps: 0.654; 185: 0.635). On the test lines, which chose nothing: scripts/demo_check.py. POL's 2 steps only teach it the answer format the
# assistant reads (its few steps learn no policy: bench/bench_real_model.py), NLG's 12 the shape
# of a doctor's question.
# DEMO_PROFILE=smoke (the suite's docs test: a minute or two) runs the same commands and the check's
# parsing and provenance checks at a step or a few of one example each, predicting the corpus's
# test dialogue with 16 new tokens a row, on the first 4 held-out lines and one patient line (a run
# of a few steps answers up to its whole token budget: each row costs seconds), without the floors:
# `make test` proves the pipeline runs; the full demo, after it in CI (.ci/run), proves it learns.
DIALOGUES=16
case ${DEMO_PROFILE:-full} in
  full) NLU_STEPS=260 POL_STEPS=2 NLG_STEPS=12 limit=() budget=() check=() smoke_batch=() ;;
  smoke) NLU_STEPS=3 POL_STEPS=1 NLG_STEPS=1 limit=(--limit 4) budget=(--max_new_tokens 16)
         check=(--smoke) smoke_batch=(--per_device_train_batch_size=1 --gradient_accumulation_steps=1) ;;
  *) echo "DEMO_PROFILE=${DEMO_PROFILE} is none of full, smoke" >&2; exit 2 ;;
esac
# PRECISION=auto (the default): bf16 autocast where the CPU computes bf16 natively (AVX512-BF16,
# AMX): 2.8 s a step of 4 NLU examples against 3.6 in float32 on 2 AMD EPYC cores
# (bench/bench_cpu_step.py); where it is emulated it is slower, so float32 there (and wherever
# /proc/cpuinfo is not). PRECISION=float32 forces float32 on a CPU with bf16 (what a CPU without
# it runs), PRECISION=bf16 forces bf16.
case ${PRECISION:-auto} in
  auto) precision=--bf16=false
        if grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo 2>/dev/null; then precision=--bf16=true; fi ;;
  float32) precision=--bf16=false ;;
  bf16) precision=--bf16=true ;;
  *) echo "PRECISION=${PRECISION} is none of auto, float32, bf16" >&2; exit 2 ;;
esac

rm -rf "$demo"  # the demo's own folder, from an earlier demo
mkdir -p "$logs"

# stage NAME COMMAND...: run one step, one line of progress; its output goes to logs/NAME.log
# (shown as it comes with VERBOSE=1), and its last lines are shown if it fails.
stage() {
  local name=$1 begun=$SECONDS
  shift
  printf '%-44s' "[$(date +%H:%M:%S)] $name" >&2
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

echo "MediTOD pipeline demo on synthetic data (no MediTOD text), CPU only; logs in $logs" >&2
stage build-sample "${meditod[@]}" build --source data/sample --out "$demo/meditod"
stage realistic-corpus "$python" -m meditod_hub.commands.synthetic --out "$demo/realistic-release" \
  --dialogues "$DIALOGUES" --style realistic
stage realistic-build "${meditod[@]}" build --source "$demo/realistic-release" --out "$realistic"
stage smollm2-convert "${meditod[@]}" pretrained
for task in nlu pol nlg; do
  steps=${task^^}_STEPS
  # NLU's batches are grouped by length (18% fewer padded tokens than batches drawn at random,
  # for the same accuracy: bench/bench_state_curve.py); POL's and NLG's few steps draw theirs at
  # random: grouped, a short run's first batches would be the corpus's longest (POL's
  # whole-dialogue states), at several times the cost of a mean one
  sampling=random
  if [[ $task == nlu ]]; then sampling=group_by_length; fi
  stage "smollm2-$task-train" "${meditod[@]}" train "recipes/smollm2-135m/$task.yaml" \
    --dataset_name="$realistic" --max_steps="${!steps}" --train_sampling_strategy="$sampling" \
    "$precision" "${smoke_batch[@]}" --output_dir="$demo/runs/smollm2-135m/$task"
done
nlu=$demo/runs/smollm2-135m/nlu
stage smollm2-nlu-predict "${meditod[@]}" predict --model_path "$nlu" --task nlu --split test \
  --batch_size 32 --out "$nlu/eval/test" "${budget[@]}"
stage smollm2-nlu-evaluate "${meditod[@]}" evaluate --task nlu --split test \
  --predictions "$nlu/eval/test/predictions.jsonl"
stage smollm2-nlu-eval-state "${meditod[@]}" eval-state --nlu "$demo/runs/smollm2-135m/nlu" \
  "${limit[@]}"
stage assistant-check "$python" scripts/demo_check.py --demo "$demo" "${check[@]}"
stage model-card "${meditod[@]}" publish --run "$demo/runs/smollm2-135m/nlu" \
  --repo local/meditod-demo-smollm2-nlu --dry_run --card_dir "$demo/model-card"
cat "$logs/assistant-check.log"
echo "The demo took $(( (SECONDS - started) / 60 )) min $(( (SECONDS - started) % 60 )) s."

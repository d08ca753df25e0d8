"""MediTOD in the evaluation harnesses researchers already run: EleutherAI's
lm-evaluation-harness (`lm_eval`) and Hugging Face's `lighteval`.

`meditod harness` (`command`) writes, for a built dataset, one task folder: the rows of each task
and evaluation split as the harnesses read them (`rows`: the authors' in-context question with
its retrieved exemplars, precomputed here exactly as `meditod fewshot` retrieves them, and the
fine-tuned prompt of the model's family: the chat family's messages, or a span family's input
text fitted by the run's tokenizer), lm-eval task YAMLs (`lm_eval/`) and a lighteval custom-task
module for the fine-tuned tasks (`lighteval_tasks.py`; lighteval 0.13 runs in a venv of its own,
`make harness-env`, and reaches the model through an OpenAI-compatible server: docs/harness.md),
and prints the lm_eval and lighteval command lines that run them. The harnesses build
the prompts, drive the model (a Hugging Face folder, vLLM, an OpenAI-compatible endpoint) and
hand the raw answers back to the kit (`scoring`): the same parsers and the same `Task.score` as
`meditod fewshot` and `meditod evaluate`, so the figures mean the same and agree to the digit.
`read` turns an lm-eval results file back into the kit's scores for `meditod results`.

Nothing here imports a harness at module level, except the modules the harnesses import
themselves (`lm_eval_tasks`, `lighteval_tasks`), so the core install does not need them.
"""

"""The paper's in-context baselines: retrieved exemplars, the authors' prompts, any endpoint.

`prompts` spells the system prompts, user messages and exemplar answers and the NLU
status-as-attribute mapping; `retrieval` finds the exemplars (last turn, CLS, normalised, inner
product); `run` is `meditod fewshot`. Both follow docs/format.md, "In-context prompts and
retrieval", and the paper's appendix "Prompts in In-context Setting".
"""

"""The paper's in-context baselines: retrieved exemplars, the authors' prompts, any endpoint.

`prompts` spells the system prompts, user messages and exemplar answers (reference 3.4, paper
appendix "Prompts in In-context Setting") and the NLU status-as-attribute mapping; `retrieval`
finds the exemplars (last turn, CLS, normalised, inner product); `run` is `meditod fewshot`.
"""

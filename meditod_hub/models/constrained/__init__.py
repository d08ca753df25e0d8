"""Constrained decoding: every NLU and POL output parses and stays inside CMAS.

The output language of each family format is small and fully known from `cmas`: intents, slot
keys (with their status prefixes), the attributes of each slot, action types, action slots and
check types. Each structured task's `language` (`meditod_hub.data.tasks.language`) reads them at
call time (a new slot or attribute needs no edit here); `language.label_schema` hands them over
and three renderers (`grammars`) write them in each format's concrete syntax:

| format  | families              | NLU / POL answer                             | NLG                       |
| ------- | --------------------- | -------------------------------------------- | ------------------------- |
| chat    | chat                  | `[answer] <JSON list> [done]`                | `[answer] <text> [done]`  |
| span    | flan-t5, biogpt       | the span grammar without markers             | free                      |
| pptod   | pptod                 | the span grammar inside `<sos_b>`/`<sos_a>`  | `<sos_r> <text> <eos_r>`  |
| fewshot | served in-context LLM | a JSON list (NLU: status as an attribute)    | free                      |

One module per job, each importing only the ones above it:

* `language`: a task's CMAS label language, and the medical values in its labels;
* `vocabulary`: the medical values a grammar allows (`--vocabulary`: the training split, a file,
  or none);
* `grammars`: a format's answer as EBNF (GBNF) text or, for the fewshot answer, a JSON schema;
* `processor`: local generation, the grammar compiled by xgrammar into a logits processor;
* `request`: a served model, the grammar as the structured-output fields its server reads.
"""

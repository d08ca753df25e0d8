"""Flan-T5 / BioGPT / PPTOD inputs and targets (the span-grammar families of the registry), the
context rule, and token budgets.

Offline: an invented dialogue goes through the project's own views; budgets use a word-level
tokenizer trained here. The authors' sample (read in place, skipped when absent) checks the
context rule and the PPTOD user/response spans against their own PPTOD views.
"""

from __future__ import annotations

import json

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

from meditod_hub.data.release import read_release
from meditod_hub.data.tasks import TASKS, view_rows
from meditod_hub.data.tasks.spans import (
    ACTION_SPAN,
    MARKERS,
    NLU_SPAN,
    serialise_actions,
    serialise_nlu,
    serialise_state,
    unwrap,
)
from meditod_hub.errors import UsageError
from meditod_hub.models.families import FAMILIES, SPAN_FAMILIES, Budget, get_family
from meditod_hub.models.formats import context_lines
from meditod_hub.models.formats.fit import BudgetError, fit_to_budget, special_ids
from meditod_hub.models.formats.span_models import state_order


def _utt(uid, speaker, text, label):
    return {"uttr_id": uid, "speaker": speaker, "text": text,
            ("actions" if speaker == "doctor" else "nlu"): label}


ACHE = {"intent": "inform", "slots": {"positive_symptom": [{"value": "zorbic ache",
                                                            "location": ["knee"]}]}}
ASK_ONSET = {"action": "inquire", "symptom": [{"value": "zorbic ache", "checks": [{"type": "onset"}]}]}
DIALOGUE = {"utterances": [
    _utt(0, "doctor", "Good day, what brings you here?", [{"action": "nod_prompt_salutations"}]),
    _utt(1, "patient", "My knee has a zorbic ache.", [ACHE]),
    _utt(2, "doctor", "Since when?", [ASK_ONSET]),
    _utt(3, "patient", "Two moons.", [{"intent": "inform", "slots": {"positive_symptom": [
        {"value": "zorbic ache", "onset": "two moons"}]}}]),
    _utt(4, "doctor", "Any vell rash?", [{"action": "inquire", "symptom": [{"value": "vell rash"}]}]),
    _utt(5, "patient", "Nice weather.", [{"intent": "chit-chat"}]),
    _utt(6, "doctor", "Indeed.", [{"action": "chit-chat"}]),
    _utt(7, "patient", "No rash.", [{"intent": "inform", "slots": {"negative_symptom": [
        {"value": "vell rash"}]}}]),
    _utt(8, "doctor", "Thank you.", [{"action": "chit-chat"}]),
]}
NLU_ROWS = view_rows("nlu", "9", DIALOGUE)
NLG_ROWS = view_rows("nlg", "9", DIALOGUE)
LINES = ["patient: My knee has a zorbic ache.", "doctor: Since when?", "patient: Two moons.",
         "doctor: Any vell rash?", "patient: Nice weather.", "doctor: Indeed.", "patient: No rash."]


def source_text(family: str, task: str, row: dict) -> tuple[str, str]:
    parts = FAMILIES[family].source_parts(TASKS[task], row)
    return parts.prefix, parts.body


def target_text(family: str, task: str, row: dict) -> str:
    return FAMILIES[family].target_text(TASKS[task], row)


# --- the context rule -----------------------------------------------------------------------

def test_context_starts_at_the_first_patient_line_and_ends_with_the_current_one():
    assert [context_lines(row) for row in NLU_ROWS] == [LINES[:1], LINES[:3], LINES[:5], LINES[:7]]
    assert [context_lines(row) for row in NLG_ROWS] == [LINES[:1], LINES[:3], LINES[:5], LINES[:7]]


def test_every_line_before_the_first_patient_line_is_left_out():
    two_openers = {"utterances": [_utt(0, "doctor", "Hi.", []), _utt(1, "doctor", "Hello?", []),
                                  *[dict(u, uttr_id=u["uttr_id"] + 1) for u in DIALOGUE["utterances"][1:3]]]}
    assert context_lines(view_rows("pol", "9", two_openers)[0]) == LINES[:1]
    patient_first = {"utterances": DIALOGUE["utterances"][1:3]}
    assert context_lines(view_rows("nlu", "9", patient_first)[0]) == LINES[:1]


# --- layouts --------------------------------------------------------------------------------

def test_flan_t5_nlu_sees_the_whole_context():
    assert source_text("flan-t5", "nlu", NLU_ROWS[3]) == (
        "convert dialog to dialog state:", " ".join(LINES))


def test_flan_t5_pol_sees_the_real_state_and_four_lines():
    row = NLG_ROWS[3]
    state = serialise_state(row["state"])
    assert state.startswith("[positive_symptom] ( value=zorbic ache # location=knee # onset=two moons )")
    assert source_text("flan-t5", "pol", row) == (
        "convert dialog state and history to dialog act:", f"dst: {state} history: " + " ".join(LINES[3:]))
    empty = dict(row, state={})
    assert source_text("flan-t5", "pol", empty)[1].startswith("dst: NONE history: ")


def test_flan_t5_nlg_sees_the_gold_action():
    assert source_text("flan-t5", "nlg", NLG_ROWS[1]) == (
        "convert dialog actions and history to dialog act:",
        "actions: @inquire@ [symptom] ( value=vell rash ) history: " + " ".join(LINES[:3]))


@pytest.mark.parametrize("task", ["nlu", "pol", "nlg"])
def test_biogpt_is_flan_t5_plus_the_trigger(task):
    prefix, body = source_text("biogpt", task, NLG_ROWS[2] if task != "nlu" else NLU_ROWS[2])
    flan = source_text("flan-t5", task, NLG_ROWS[2] if task != "nlu" else NLU_ROWS[2])
    assert (prefix, body) == (flan[0], f"{flan[1]} answer:")


def test_pptod_wraps_the_context_and_appends_the_gold_input():
    spans = ("<sos_u> My knee has a zorbic ache. <eos_u> <sos_r> Since when? <eos_r> "
             "<sos_u> Two moons. <eos_u>")
    assert source_text("pptod", "nlu", NLU_ROWS[1]) == (
        "translate dialogue to belief state:", f"<sos_context> {spans} <eos_context>")
    state = serialise_state(NLG_ROWS[1]["state"])
    assert source_text("pptod", "pol", NLG_ROWS[1]) == (
        "translate dialogue to dialogue action:",
        f"<sos_context> {spans} <eos_context> <sos_b> {state} <eos_b>")
    assert source_text("pptod", "nlg", NLG_ROWS[1])[1].endswith(
        "<eos_context> <sos_a> @inquire@ [symptom] ( value=vell rash ) <eos_a>")


def test_targets_carry_markers_for_pptod_only():
    row = {**NLG_ROWS[0], "nlu": [ACHE]}
    assert target_text("pptod", "nlu", row) == serialise_nlu([ACHE])
    assert target_text("flan-t5", "nlu", row) == unwrap(NLU_SPAN, serialise_nlu([ACHE]))[0]
    assert target_text("biogpt", "pol", row) == unwrap(ACTION_SPAN, serialise_actions([ASK_ONSET]))[0]
    assert target_text("pptod", "nlg", row) == "<sos_r> Since when? <eos_r>"
    assert target_text("flan-t5", "nlg", row) == "Since when?"


def test_unknown_family_or_task_and_missing_columns_are_clear_errors():
    with pytest.raises(UsageError, match="unknown model family 't5-xxl'"):
        get_family("t5-xxl")
    with pytest.raises(UsageError, match="unknown task 'dst'"):
        FAMILIES["flan-t5"].parse("dst", "x")
    with pytest.raises(KeyError, match="'9-1'.*'actions'"):
        source_text("flan-t5", "nlg", NLU_ROWS[0])


def test_nlg_parse_strips_markers_and_flags_truncation():
    assert FAMILIES["pptod"].parse("nlg", "<sos_r> Since when? <eos_r>").value == "Since when?"
    result = FAMILIES["pptod"].parse("nlg", "<sos_r> Since wh")
    assert (result.value, result.ok) == ("Since wh", False)


def test_biogpt_spacing_repairs():
    detokenised = ("@ inquire @ [symptom] (value = zorbic ache # checks-type = location # "
                   "location-values = knee / elbow | arm)")
    result = FAMILIES["biogpt"].parse("pol", detokenised)
    assert result.ok and result.value == [{"action": "inquire", "symptom": [{"value": "zorbic ache",
        "checks": [{"type": "location", "values": ["knee/elbow", "arm"]}]}]}]
    assert FAMILIES["biogpt"].parse("nlg", "a / b = c").value == "a / b = c"
    assert not FAMILIES["flan-t5"].parse("pol", detokenised).ok  # no repairs for Flan-T5


# --- token budgets --------------------------------------------------------------------------

def _tokenizer(template: str) -> PreTrainedTokenizerFast:
    """A word-level tokenizer over this file's texts; `template` places `</s>` like T5/BioGPT."""
    texts = [text for row in NLG_ROWS for family in SPAN_FAMILIES for task in ("pol", "nlg")
             for text in (*source_text(family, task, row), target_text(family, task, row))]
    backend = Tokenizer(models.WordLevel(unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.train_from_iterator(texts + LINES, trainers.WordLevelTrainer(
        special_tokens=["<pad>", "</s>", "<unk>", *MARKERS]))
    backend.post_processor = processors.TemplateProcessing(
        single=template, special_tokens=[("</s>", backend.token_to_id("</s>"))])
    return PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="</s>", pad_token="<pad>",
                                   unk_token="<unk>")


T5_LIKE, BIOGPT_LIKE = _tokenizer("$A </s>"), _tokenizer("</s> $A")


def _ids(tokenizer, text):
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def test_special_ids_follow_the_tokenizer_template():
    eos = T5_LIKE.convert_tokens_to_ids("</s>")
    assert special_ids(T5_LIKE) == ([], [eos]) and special_ids(BIOGPT_LIKE) == ([eos], [])


@pytest.mark.parametrize("family", SPAN_FAMILIES)
def test_an_input_that_fits_is_the_whole_text(family):
    parts = FAMILIES[family].source_parts(TASKS["pol"], NLG_ROWS[3])
    fitted = fit_to_budget(T5_LIKE, parts, 512, "9-8")
    assert not fitted.truncated and (fitted.dropped, fitted.dropped_state) == (0, 0)
    assert fitted.input_ids == _ids(T5_LIKE, parts.prefix) + T5_LIKE(parts.body)["input_ids"]


@pytest.mark.parametrize("tokenizer", [T5_LIKE, BIOGPT_LIKE], ids=["t5", "biogpt"])
@pytest.mark.parametrize("family, task", [("flan-t5", "nlu"), ("biogpt", "nlu"), ("pptod", "nlg")])
def test_without_a_state_only_the_context_is_cut_from_the_left(tokenizer, family, task):
    parts = FAMILIES[family].source_parts(TASKS[task], NLG_ROWS[3] if task != "nlu" else NLU_ROWS[3])
    lead, trail = special_ids(tokenizer)
    before = lead + _ids(tokenizer, parts.prefix) + _ids(tokenizer, parts.head)
    after = _ids(tokenizer, parts.tail) + trail
    context = [i for line in parts.context for i in _ids(tokenizer, line)]
    whole, target = len(before) + len(context) + len(after), 5
    for max_length in range(len(before) + len(after) + target, whole + target + 3):
        fitted = fit_to_budget(tokenizer, parts, max_length, "9-8", target_length=target)
        kept = len(fitted.input_ids) - len(before) - len(after)
        assert len(fitted.input_ids) == min(whole, max_length - target)
        assert fitted.input_ids == before + context[len(context) - kept:] + after
        assert fitted.dropped == len(context) - kept and fitted.truncated == (kept < len(context))
        assert fitted.dropped_state == 0


STATEFUL = NLG_ROWS[3]  # its state: the ache (with location and onset), then the rash


def _contains(ids: list[int], part: list[int]) -> bool:
    return any(ids[i:i + len(part)] == part for i in range(len(ids) - len(part) + 1))


@pytest.mark.parametrize("family", SPAN_FAMILIES)
def test_pol_cuts_old_context_then_the_oldest_state_entries_then_the_last_turn(family):
    parts = FAMILIES[family].source_parts(TASKS["pol"], STATEFUL)
    assert parts.state_entries == len(state_order(STATEFUL["state"])) == 2
    lead, trail = special_ids(T5_LIKE)
    fixed = len(lead) + len(_ids(T5_LIKE, parts.prefix)) + len(trail)

    def head_and_protected(k: int) -> int:
        smaller = parts.drop_state(k)
        protected = " ".join([*smaller.context[-2:], smaller.tail])
        return len(_ids(T5_LIKE, smaller.head)) + len(_ids(T5_LIKE, protected))

    last_turn = _ids(T5_LIKE, " ".join(parts.context[-2:]))
    whole = fixed + len(T5_LIKE(parts.body, add_special_tokens=False)["input_ids"])
    seen = set()
    for max_length in range(whole, 0, -1):
        try:
            fitted = fit_to_budget(T5_LIKE, parts, max_length, "9-8")
        except BudgetError as exc:
            smallest = parts.drop_state(parts.state_entries)
            assert fixed + len(_ids(T5_LIKE, smallest.head)) + len(_ids(T5_LIKE, smallest.tail)) \
                > max_length, "refused while the head and tail still fit"
            assert "9-8" in str(exc)
            break
        assert len(fitted.input_ids) <= max_length
        k = fitted.dropped_state
        assert fitted.input_ids[len(lead) + len(_ids(T5_LIKE, parts.prefix)):][
            :len(_ids(T5_LIKE, parts.drop_state(k).head))] == _ids(T5_LIKE, parts.drop_state(k).head)
        if k == 0 or fixed + head_and_protected(k) <= max_length:
            assert _contains(fitted.input_ids, last_turn), "the last turn went before the state"
        if k:
            assert fixed + head_and_protected(k - 1) > max_length, "a state entry went too soon"
        seen.add("state" if k else "context" if fitted.dropped else "whole")
        seen.add("last turn" if not _contains(fitted.input_ids, last_turn) else "")
    assert {"whole", "context", "state", "last turn"} <= seen


def test_examples_that_cannot_fit_name_themselves():
    parts = FAMILIES["biogpt"].source_parts(TASKS["pol"], NLG_ROWS[3])
    with pytest.raises(BudgetError, match="example 9-8: the target alone is 40 tokens"):
        fit_to_budget(BIOGPT_LIKE, parts, 40, "9-8", target_length=40)
    with pytest.raises(BudgetError, match="example 9-8: .* even without context or state"):
        fit_to_budget(BIOGPT_LIKE, parts, 12, "9-8", target_length=5)


# --- the authors' sample, read in place -----------------------------------------------------

def _sample(folder, config):
    release = read_release(folder)
    return [row for ids in release.splits.values() for did in ids
            for row in view_rows(config, did, release.dialogues[did])]


def test_sample_context_matches_the_authors_pptod_views(sample_release):
    sessions = {session[0]["dial_id"]: session for name in ("train", "dev", "test")
                for session in json.loads((sample_release / "pptod" /
                                           f"fine-processed-{name}.json").read_text())}
    rows = _sample(sample_release, "nlu")
    assert len(rows) == 178
    for row in rows:
        turns = sessions[f"osce{row['dialogue_id']}"][:row["turn"] + 1]
        spans = [span for turn in turns for span in (turn["user"], turn["resp"])][:-1]
        assert FAMILIES["pptod"].source_parts(TASKS["nlu"], row).context == spans, row["id"]
        lines = [f"{'patient' if span.startswith('<sos_u>') else 'doctor'}: {span[8:-8]}" for span in spans]
        assert context_lines(row) == lines, row["id"]


def test_sample_spans_survive_biogpt_detokenisation(sample_release):
    moses = pytest.importorskip("sacremoses", reason="BioGPT's tokenizer needs sacremoses")
    tokenize, detokenize = moses.MosesTokenizer(lang="en"), moses.MosesDetokenizer(lang="en")
    for task, config, column in (("nlu", "nlu", "nlu"), ("pol", "pol", "actions")):
        for row in _sample(sample_release, config):
            # What BioGPT's tokenizer does on encode and on decode.
            tokens = tokenize.tokenize(target_text("biogpt", task, row),
                                       aggressive_dash_splits=True, return_str=False, escape=True)
            result = FAMILIES["biogpt"].parse(task, detokenize.detokenize(tokens))
            assert result.ok and result.value == row[column], row["id"]


def _biogpt_tokenizer(tmp_path):
    """BioGPT's own tokenizer class (Moses pre-tokenisation, then BPE) with a character-level
    vocabulary built here: its word splits are exactly BioGPT's, offline."""
    pytest.importorskip("sacremoses", reason="BioGPT's tokenizer needs sacremoses")
    from transformers import BioGptTokenizer

    chars = [chr(c) for c in range(32, 127)]
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    for c in chars:
        for token in (c, c + "</w>"):
            vocab.setdefault(token, len(vocab))
    (tmp_path / "vocab.json").write_text(json.dumps(vocab))
    (tmp_path / "merges.txt").write_text("#version: 0.2\n")
    return BioGptTokenizer(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt"))


def test_biogpt_nlu_inputs_are_tokenised_as_the_authors_did(sample_release, tmp_path):
    """Upstream tokenises the body as one string and cuts it from the left; Moses splits a final
    period only at a string's end, so tokenising line by line (as the kit once did) differed."""
    tokenizer = _biogpt_tokenizer(tmp_path)
    biogpt = FAMILIES["biogpt"]
    lead, trail = special_ids(tokenizer)
    rows = _sample(sample_release, "nlu")
    differed_per_line = 0
    for row in rows:
        parts = biogpt.source_parts(TASKS["nlu"], row)
        prefix = tokenizer(parts.prefix, add_special_tokens=False)["input_ids"]
        body = tokenizer(parts.body, add_special_tokens=False)["input_ids"]
        per_line = [t for text in [*parts.context, parts.tail]
                    for t in tokenizer(text, add_special_tokens=False)["input_ids"]]
        differed_per_line += per_line != body
        fitted = biogpt.prompt(TASKS["nlu"], row, tokenizer, Budget(512, 128))
        room = 512 - 128 - len(lead) - len(prefix) - len(trail)
        assert fitted.input_ids == lead + prefix + body[-room:] + trail, row["id"]
    assert differed_per_line > len(rows) // 2  # the old rule really was different

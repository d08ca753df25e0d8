"""Flan-T5 / BioGPT / PPTOD inputs and targets, the context rule, and token budgets.

Offline: an invented dialogue goes through the project's own views; budgets use a word-level
tokenizer trained here. The authors' sample (read in place, skipped when absent) checks the
context rule and the PPTOD user/response spans against their own PPTOD views.
"""

from __future__ import annotations

import json

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

from meditod_hub.formats import context_lines, seq2seq
from meditod_hub.formats.fit import BudgetError, fit_to_budget, special_ids
from meditod_hub.formats.pptod import (ACTION_SPAN, MARKERS, NLU_SPAN, serialise_actions, serialise_nlu,
                                       serialise_state, unwrap)
from meditod_hub.release import read_release
from meditod_hub.views import view_rows


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
    assert seq2seq.source_text("flan-t5", "nlu", NLU_ROWS[3]) == (
        "convert dialog to dialog state:", " ".join(LINES))


def test_flan_t5_pol_sees_the_real_state_and_four_lines():
    row = NLG_ROWS[3]
    state = serialise_state(row["state"])
    assert state.startswith("[positive_symptom] ( value=zorbic ache # location=knee # onset=two moons )")
    assert seq2seq.source_text("flan-t5", "pol", row) == (
        "convert dialog state and history to dialog act:", f"dst: {state} history: " + " ".join(LINES[3:]))
    empty = dict(row, state={})
    assert seq2seq.source_text("flan-t5", "pol", empty)[1].startswith("dst: NONE history: ")


def test_flan_t5_nlg_sees_the_gold_action():
    assert seq2seq.source_text("flan-t5", "nlg", NLG_ROWS[1]) == (
        "convert dialog actions and history to dialog act:",
        "actions: @inquire@ [symptom] ( value=vell rash ) history: " + " ".join(LINES[:3]))


@pytest.mark.parametrize("task", ["nlu", "pol", "nlg"])
def test_biogpt_is_flan_t5_plus_the_trigger(task):
    prefix, body = seq2seq.source_text("biogpt", task, NLG_ROWS[2] if task != "nlu" else NLU_ROWS[2])
    flan = seq2seq.source_text("flan-t5", task, NLG_ROWS[2] if task != "nlu" else NLU_ROWS[2])
    assert (prefix, body) == (flan[0], f"{flan[1]} answer:")


def test_pptod_wraps_the_context_and_appends_the_gold_input():
    spans = ("<sos_u> My knee has a zorbic ache. <eos_u> <sos_r> Since when? <eos_r> "
             "<sos_u> Two moons. <eos_u>")
    assert seq2seq.source_text("pptod", "nlu", NLU_ROWS[1]) == (
        "translate dialogue to belief state:", f"<sos_context> {spans} <eos_context>")
    state = serialise_state(NLG_ROWS[1]["state"])
    assert seq2seq.source_text("pptod", "pol", NLG_ROWS[1]) == (
        "translate dialogue to dialogue action:",
        f"<sos_context> {spans} <eos_context> <sos_b> {state} <eos_b>")
    assert seq2seq.source_text("pptod", "nlg", NLG_ROWS[1])[1].endswith(
        "<eos_context> <sos_a> @inquire@ [symptom] ( value=vell rash ) <eos_a>")


def test_targets_carry_markers_for_pptod_only():
    row = {**NLG_ROWS[0], "nlu": [ACHE]}
    assert seq2seq.target_text("pptod", "nlu", row) == serialise_nlu([ACHE])
    assert seq2seq.target_text("flan-t5", "nlu", row) == unwrap(NLU_SPAN, serialise_nlu([ACHE]))[0]
    assert seq2seq.target_text("biogpt", "pol", row) == unwrap(ACTION_SPAN, serialise_actions([ASK_ONSET]))[0]
    assert seq2seq.target_text("pptod", "nlg", row) == "<sos_r> Since when? <eos_r>"
    assert seq2seq.target_text("flan-t5", "nlg", row) == "Since when?"


def test_unknown_family_or_task_and_missing_columns_are_clear_errors():
    with pytest.raises(ValueError, match="unknown model family"):
        seq2seq.source_text("t5-xxl", "nlu", NLU_ROWS[0])
    with pytest.raises(ValueError, match="unknown task"):
        seq2seq.parse_target("dst", "x")
    with pytest.raises(KeyError, match="'9-1'.*'actions'"):
        seq2seq.source_text("flan-t5", "nlg", NLU_ROWS[0])


def test_nlg_parse_strips_markers_and_flags_truncation():
    assert seq2seq.parse_target("nlg", "<sos_r> Since when? <eos_r>").value == "Since when?"
    result = seq2seq.parse_target("nlg", "<sos_r> Since wh")
    assert (result.value, result.ok) == ("Since wh", False)


def test_biogpt_spacing_repairs():
    detokenised = ("@ inquire @ [symptom] (value = zorbic ache # checks-type = location # "
                   "location-values = knee / elbow | arm)")
    result = seq2seq.parse_target("pol", detokenised, family="biogpt")
    assert result.ok and result.value == [{"action": "inquire", "symptom": [{"value": "zorbic ache",
        "checks": [{"type": "location", "values": ["knee/elbow", "arm"]}]}]}]
    assert seq2seq.parse_target("nlg", "a / b = c", family="biogpt").value == "a / b = c"


# --- token budgets --------------------------------------------------------------------------

def _tokenizer(template: str) -> PreTrainedTokenizerFast:
    """A word-level tokenizer over this file's texts; `template` places `</s>` like T5/BioGPT."""
    texts = [text for row in NLG_ROWS for family in seq2seq.FAMILIES for task in ("pol", "nlg")
             for text in (*seq2seq.source_text(family, task, row), seq2seq.target_text(family, task, row))]
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


@pytest.mark.parametrize("family", seq2seq.FAMILIES)
def test_an_input_that_fits_is_the_whole_text(family):
    parts = seq2seq.source_parts(family, "pol", NLG_ROWS[3])
    fitted = fit_to_budget(T5_LIKE, parts, 512, "9-8")
    assert not fitted.truncated and fitted.dropped == 0
    assert fitted.input_ids == _ids(T5_LIKE, parts.prefix) + T5_LIKE(parts.body)["input_ids"]


@pytest.mark.parametrize("tokenizer", [T5_LIKE, BIOGPT_LIKE], ids=["t5", "biogpt"])
@pytest.mark.parametrize("family, task", [("flan-t5", "nlu"), ("biogpt", "pol"), ("pptod", "nlg")])
def test_only_the_context_is_cut_from_the_left(tokenizer, family, task):
    parts = seq2seq.source_parts(family, task, NLG_ROWS[3] if task != "nlu" else NLU_ROWS[3])
    lead, trail = special_ids(tokenizer)
    before = lead + _ids(tokenizer, parts.prefix) + _ids(tokenizer, parts.head)
    after = _ids(tokenizer, parts.tail) + trail
    context = [i for line in parts.context for i in _ids(tokenizer, line)]
    whole, target = len(before) + len(context) + len(after), 5
    for max_length in range(len(before) + len(after) + target + 1, whole + target + 3):
        fitted = fit_to_budget(tokenizer, parts, max_length, "9-8", target_length=target)
        kept = len(fitted.input_ids) - len(before) - len(after)
        assert len(fitted.input_ids) == min(whole, max_length - target)
        assert fitted.input_ids == before + context[len(context) - kept:] + after
        assert fitted.dropped == len(context) - kept and fitted.truncated == (kept < len(context))


def test_examples_that_cannot_fit_name_themselves():
    parts = seq2seq.source_parts("biogpt", "pol", NLG_ROWS[3])
    with pytest.raises(BudgetError, match="example 9-8: the target alone is 40 tokens"):
        fit_to_budget(BIOGPT_LIKE, parts, 40, "9-8", target_length=40)
    with pytest.raises(BudgetError, match="example 9-8: .* leave no room for context"):
        fit_to_budget(BIOGPT_LIKE, parts, 40, "9-8", target_length=20)


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
        assert seq2seq.source_parts("pptod", "nlu", row).context == spans, row["id"]
        lines = [f"{'patient' if span.startswith('<sos_u>') else 'doctor'}: {span[8:-8]}" for span in spans]
        assert context_lines(row) == lines, row["id"]


def test_sample_spans_survive_biogpt_detokenisation(sample_release):
    moses = pytest.importorskip("sacremoses", reason="BioGPT's tokenizer needs sacremoses")
    tokenize, detokenize = moses.MosesTokenizer(lang="en"), moses.MosesDetokenizer(lang="en")
    for task, config, column in (("nlu", "nlu", "nlu"), ("pol", "pol", "actions")):
        for row in _sample(sample_release, config):
            # What BioGPT's tokenizer does on encode and on decode.
            tokens = tokenize.tokenize(seq2seq.target_text("biogpt", task, row),
                                       aggressive_dash_splits=True, return_str=False, escape=True)
            result = seq2seq.parse_target(task, detokenize.detokenize(tokens), family="biogpt")
            assert result.ok and result.value == row[column], row["id"]

"""PPTOD span grammar: serialise, parse, refuse what it cannot carry. Offline, invented labels.

The authors' sample is read in place (skipped when absent): all 178 `bspn_nlu` / `aspn` strings
must be reproduced byte for byte and parse back to the release's own structures.
"""

from __future__ import annotations

import json

import pytest

from meditod_hub.data.release import read_release
from meditod_hub.data.tasks import ParseResult, view_rows
from meditod_hub.data.tasks.spans import (
    SpanValueError,
    parse_actions,
    parse_nlu,
    serialise_actions,
    serialise_nlu,
    serialise_state,
)

NLU = [
    {"intent": "inform", "slots": {
        "positive_symptom": [{"value": "zorbic ache", "location": ["left elbow", "knee"],
                              "onset": "two moons ago"},
                             {"value": "vell rash"}],
        "negative_habit": [{"value": "quab chewing"}]}},
    {"intent": "chit-chat"},
]
NLU_SPAN = ("<sos_b> @inform@ [positive_symptom] ( value=zorbic ache # location=left elbow | knee "
            "# onset=two moons ago ) ( value=vell rash ) [negative_habit] ( value=quab chewing ) "
            "@chit-chat@ <eos_b>")
ACTIONS = [
    {"action": "inquire", "symptom": [
        {"value": "zorbic ache", "checks": [{"type": "location", "values": ["arm", "leg"]},
                                            {"type": "onset"}]},
        {"value": "vell rash"}]},
    {"action": "nod_prompt_salutations"},
]
ACTION_SPAN = ("<sos_a> @inquire@ [symptom] ( value=zorbic ache # checks-type=location # "
               "location-values=arm | leg # checks-type=onset ) ( value=vell rash ) "
               "@nod_prompt_salutations@ <eos_a>")


def test_serialise_follows_the_grammar():
    assert serialise_nlu(NLU) == NLU_SPAN
    assert serialise_actions(ACTIONS) == ACTION_SPAN
    assert serialise_nlu([]) == "<sos_b> <eos_b>"


def test_parse_gives_the_structures_back_with_or_without_markers():
    for text in (NLU_SPAN, NLU_SPAN.removeprefix("<sos_b> ").removesuffix(" <eos_b>")):
        assert parse_nlu(text).value == NLU and parse_nlu(text).ok
    result = parse_actions(ACTION_SPAN)
    assert result.ok and result.reason is None and result.value == ACTIONS
    assert "slots" not in parse_nlu("@chit-chat@").value[0]  # intent-only: no `slots` key


def test_state_is_a_slot_span_without_head_or_markers():
    state = {"positive_symptom": NLU[0]["slots"]["positive_symptom"], "travel": [{"status": "no"}]}
    text = serialise_state(state)
    assert text.startswith("[positive_symptom] ( value=zorbic ache # location=left elbow | knee")
    assert text.endswith("[travel] ( status=no )")
    assert parse_nlu(f"@inform@ {text}").value == [{"intent": "inform", "slots": state}]
    assert serialise_state({}) == ""


def test_empty_containers_are_not_carried():
    assert parse_nlu(serialise_nlu([{"intent": "inform", "slots": {}}])).value == [{"intent": "inform"}]
    span = serialise_actions([{"action": "inquire", "habit": [{"value": "x", "checks": []}]}])
    assert parse_actions(span).value == [{"action": "inquire", "habit": [{"value": "x"}]}]
    empty_lists = [{"intent": "inform", "slots": {"positive_symptom": [{"value": "x", "location": []}]}}]
    assert parse_nlu(serialise_nlu(empty_lists)).value == empty_lists


@pytest.mark.parametrize("char", list("=#()@[]"))
@pytest.mark.parametrize("where", ["attribute", "list element", "action value", "check value"])
def test_reserved_characters_are_refused_naming_where_never_the_value(char, where):
    bad = f"secret{char}value"
    if where == "attribute":
        items = [{"intent": "inform", "slots": {"positive_symptom": [{"value": "a", "onset": bad}]}}]
        call, names = serialise_nlu, ("item 0 (inform)", "'positive_symptom'", "'onset'")
    elif where == "list element":
        items = [{"intent": "inform", "slots": {"positive_symptom": [{"location": ["a", bad]}]}}]
        call, names = serialise_nlu, ("'positive_symptom'", "'location'")
    elif where == "action value":
        items = [{"action": "inquire", "symptom": [{"value": bad}]}]
        call, names = serialise_actions, ("item 0 (inquire)", "'symptom'", "'value'")
    else:
        items = [{"action": "inquire", "symptom": [{"value": "a", "checks": [
            {"type": "location", "values": [bad]}]}]}]
        call, names = serialise_actions, ("'symptom'", "check 0")
    with pytest.raises(SpanValueError) as error:
        call(items)
    message = str(error.value)
    assert all(name in message for name in names) and char in message
    assert "secret" not in message


def test_values_may_hold_marker_text():
    items = [{"intent": "inform", "slots": {"positive_symptom": [{"value": "<eos_b> <sos_b>"}]}}]
    assert parse_nlu(serialise_nlu(items)) == ParseResult(items, True, None)


def test_bar_is_reserved_only_inside_list_elements():
    ok = [{"intent": "inform", "slots": {"positive_symptom": [{"value": "a", "onset": "x | y"}]}}]
    assert parse_nlu(serialise_nlu(ok)).value == ok
    with pytest.raises(SpanValueError, match="'location'"):
        serialise_nlu([{"intent": "inform", "slots": {"positive_symptom": [{"location": ["x | y"]}]}}])


@pytest.mark.parametrize("items, match", [
    ([{"intent": "inform", "slots": {"positive_symptom": [{"value": " padded"}]}}], "whitespace"),
    ([{"intent": "inform", "slots": {"positive_symptom": [{"location": [""]}]}}], "empty list element"),
    ([{"intent": "inform", "slots": {"positive_symptom": [{"location": "arm"}]}}], "must be a list"),
    ([{"intent": "inform", "slots": {"positive_symptom": [{"onset": ["x"]}]}}], "must be a string"),
    ([{"intent": "inform", "slots": {"positive_symptom": [{"value": 3}]}}], "expected a string"),
    ([{"intent": "two words"}], "whitespace"),
    ([{"intent": "inform", "extra": 1}], "cannot be carried"),
    ([{"slots": {}}], "expected an object with 'intent'"),
])
def test_labels_the_grammar_cannot_carry_are_refused(items, match):
    with pytest.raises(SpanValueError, match=match):
        serialise_nlu(items)


def test_action_check_shape_is_validated():
    with pytest.raises(SpanValueError, match="check 0"):
        serialise_actions([{"action": "inquire", "symptom": [{"value": "a", "checks": [{"kind": "x"}]}]}])


A = {"intent": "inform", "slots": {"positive_symptom": [{"value": "a"}]}}


@pytest.mark.parametrize("text, kept, reason", [
    ("<sos_b> @inform@ [positive_symptom] ( value=a ) ( value=b", [A], "unparsable"),
    ("<sos_b> @inform@ [positive_symptom] ( value=a ) @chit-chat@", [A, {"intent": "chit-chat"}],
     "no <eos_b>"),
    ("<sos_b> @chit-chat@ <eos_b> @inform@", [{"intent": "chit-chat"}], "text after <eos_b>"),
    ("@inform@ [positive_symptom] ( value=a # novalue ) ( value=b )",
     [{"intent": "inform", "slots": {"positive_symptom": []}}], "malformed"),
    ("[positive_symptom] ( value=a )", [], "before the first @name@"),
    ("@inform@ ( value=a )", [{"intent": "inform"}], "before the first [slot]"),
    ("garbage", [], "unparsable"),
])
def test_malformed_spans_keep_the_complete_prefix(text, kept, reason):
    result = parse_nlu(text)
    assert not result.ok and reason in result.reason
    assert result.value == kept


def test_parse_tolerates_spacing_and_rejects_non_text():
    spaced = "@inquire@[symptom](value=a#checks-type=location#location-values=x|y)"
    assert parse_actions(spaced).value == [{"action": "inquire", "symptom": [
        {"value": "a", "checks": [{"type": "location", "values": ["x", "y"]}]}]}]
    assert parse_nlu(None) == ParseResult([], False, "expected a string, got NoneType")


def test_values_without_their_check_type_are_malformed():
    result = parse_actions("@inquire@ [symptom] ( value=a ) ( value=b # location-values=x )")
    assert not result.ok and result.value == [{"action": "inquire", "symptom": [{"value": "a"}]}]


# --- the authors' sample, read in place -----------------------------------------------------

def _rows(folder, config):
    release = read_release(folder)
    return [row for ids in release.splits.values() for did in ids
            for row in view_rows(config, did, release.dialogues[did])]


def _pptod_turns(folder):
    turns = {}
    for name in ("train", "dev", "test"):
        for session in json.loads((folder / "pptod" / f"fine-processed-{name}.json").read_text()):
            for turn in session:
                turns[turn["dial_id"], turn["turn_num"]] = turn
    return turns


def test_sample_spans_are_reproduced_exactly_and_parse_back(sample_release):
    turns = _pptod_turns(sample_release)
    nlu_rows, pol_rows = _rows(sample_release, "nlu"), _rows(sample_release, "pol")
    assert len(nlu_rows) == len(pol_rows) == len(turns) == 178
    for nlu_row, pol_row in zip(nlu_rows, pol_rows, strict=True):
        turn = turns[f"osce{nlu_row['dialogue_id']}", nlu_row["turn"]]
        assert (pol_row["dialogue_id"], pol_row["turn"]) == (nlu_row["dialogue_id"], nlu_row["turn"])
        assert serialise_nlu(nlu_row["nlu"]) == turn["bspn_nlu"], nlu_row["id"]
        assert serialise_actions(pol_row["actions"]) == turn["aspn"], pol_row["id"]
        nlu, actions = parse_nlu(turn["bspn_nlu"]), parse_actions(turn["aspn"])
        assert nlu.ok and nlu.value == nlu_row["nlu"], nlu_row["id"]
        assert actions.ok and actions.value == pol_row["actions"], pol_row["id"]

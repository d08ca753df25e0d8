"""NLU / POL tuple unrolling and F1 on hand-computed synthetic labels, and on the authors' sample.

No network. Labels here are invented; the authors' sample is only read from ../shared.
"""

from __future__ import annotations

import pytest

from meditod_hub.data.metrics import Counts, nlu_f1, nlu_tuples, pol_f1, pol_tuples
from meditod_hub.data.metrics.tuples import MalformedLabel
from meditod_hub.data.release import read_release
from meditod_hub.data.tasks import view_rows

HEADACHE = {"intent": "inform", "slots": {"positive_symptom": [
    {"value": "headache", "location": ["forehead", "temple"], "duration": "three days"}]}}


class TableJudge:
    """Says "equivalent" for the listed (gold, predicted) pairs; remembers what it was asked."""

    name = "table"

    def __init__(self, positive=()):
        self.positive = set(positive)
        self.asked: list[tuple[str, str]] = []

    def equivalent(self, pairs):
        self.asked += pairs
        return [pair in self.positive for pair in pairs]

    def describe(self):
        return {"name": self.name}


def rows(release, config, splits=("test",)):
    return [row for split in splits for d in release.splits[split]
            for row in view_rows(config, d, release.dialogues[d])]


def test_nlu_unrolling_of_a_medical_slot():
    t = nlu_tuples([HEADACHE])
    head = ("inform", "positive_symptom", "headache")
    assert t.medical == {head, head + ("location", "forehead"), head + ("location", "temple")}
    assert t.non_medical == {head + ("duration", "three days")}


def test_nlu_unrolling_of_status_slots_basic_information_and_bare_intents():
    items = [{"intent": "chit-chat"},
             {"intent": "inform", "slots": {
                 "residence": [{"value": "apartment", "status": "living", "household_size": "2"}],
                 "basic_information": [{"age": "40"}],
                 "negative_habit": [{"frequency": "daily"}]}}]
    t = nlu_tuples(items)
    assert t.medical == {("chit-chat",), ("inform", "residence", "status", "living"),
                         ("inform", "basic_information", "age", "40")}
    # an entry without `value` has no head tuple; its attributes use the placeholder head
    assert t.non_medical == {("inform", "residence", "value", "apartment"),
                             ("inform", "residence", "household_size", "2"),
                             ("inform", "negative_habit", "dummy", "frequency", "daily")}


def test_pol_unrolling():
    actions = [
        {"action": "inquire", "symptom": [{"value": "cough", "checks": [
            {"type": "location", "values": ["chest"]},
            {"type": "characteristics", "values": ["dry"]}]}]},
        {"action": "inquire", "residence": [{"value": "other", "checks": [
            {"type": "status", "values": ["living"]}, {"type": "household_size", "values": ["3"]}]}]},
        {"action": "inquire", "basic_information": [{"value": "none", "checks": [{"type": "age"}]}]},
        {"action": "chit-chat"},
    ]
    t = pol_tuples(actions)
    cough = ("inquire", "symptom", "cough")
    assert t.medical == {("chit-chat",), cough, cough + ("location",), cough + ("location", "chest"),
                         cough + ("characteristics",), ("inquire", "residence", "status"),
                         ("inquire", "residence", "status", "living"),
                         ("inquire", "residence", "household_size")}
    assert t.non_medical == {cough + ("characteristics", "dry"), ("inquire", "residence", "other"),
                             ("inquire", "residence", "household_size", "3"),
                             ("inquire", "basic_information", "none")}


def test_unknown_slot_keys_give_no_tuples_and_are_counted():
    t = nlu_tuples([{"intent": "inform", "slots": {"symptom": [{"value": "headache"}]}}])
    assert (t.all, t.unknown_slot_keys) == (frozenset(), 1)
    assert pol_tuples([{"action": "inquire", "hobby": [{"value": "chess"}]}]).unknown_slot_keys == 1


@pytest.mark.parametrize("label", [
    "inform", [["inform"]], [{"slots": {}}], [{"intent": "inform", "slots": ["x"]}],
    [{"intent": "inform", "slots": {"positive_symptom": "headache"}}],
    [{"intent": "inform", "slots": {"positive_symptom": [{"value": {"x": 1}}]}}],
    [{"intent": "inform", "slots": {"residence": [{"value": ["a", "b"]}]}}],
    [{"intent": 3}], ["inform"], [{"intent": "inform", "slots": {"positive_symptom": ["headache"]}}],
    [{"intent": "inform", "slots": {"symptom": "headache"}}],
    [{"intent": "inform", "slots": {"positive_symptom": [{"value": "x", "onset": {"a": 1}}]}}],
    [{"intent": "inform", "slots": {"positive_symptom": [{"value": "x", "onset": [["a"]]}]}}],
])
def test_malformed_nlu_labels_raise(label):
    with pytest.raises(MalformedLabel):
        nlu_tuples(label)


def test_nlu_f1_hand_computed_with_exact_judge():
    predicted = [{"intent": "inform", "slots": {
        "positive_symptom": [{"value": "headache", "location": ["forehead"], "duration": "3 days"}],
        "negative_symptom": [{"value": "nausea"}]}}]
    scores = nlu_f1([[HEADACHE]], [predicted]).as_dict()
    # medical: head + forehead match; temple missed; nausea extra. non-medical: 3 vs three days.
    assert scores["medical"] == pytest.approx({"precision": 2 / 3, "recall": 2 / 3, "f1": 2 / 3,
                                               "tp": 2, "fp": 1, "fn": 1})
    non_medical = scores["non_medical"]
    assert (non_medical["tp"], non_medical["fp"], non_medical["fn"]) == (0, 1, 1)
    assert (scores["precision"], scores["recall"], scores["f1"]) == (0.5, 0.5, 0.5)
    assert scores["joint_accuracy"] == 0.0
    assert scores["judge"] == {"name": "exact"}
    assert scores["per_slot"]["symptom"]["overall"]["tp"] == 2


def test_a_judge_only_sees_non_medical_pairs_of_shared_groups():
    predicted = [{"intent": "inform", "slots": {"positive_symptom": [
        {"value": "headache", "location": ["forehead", "brow"], "duration": "3 days"}]}}]
    judge = TableJudge({("three days", "3 days")})
    scores = nlu_f1([[HEADACHE]], [predicted], judge)
    assert judge.asked == [("three days", "3 days")]  # `brow` vs `temple` is medical: exact only
    assert (scores.total("non_medical").tp, scores.total("medical").fp) == (1, 1)
    assert scores.judge == {"name": "table"}


def test_greedy_one_to_one_matching_in_sorted_order():
    def label(*durations):
        return [{"intent": "inform", "slots": {"positive_symptom": [
            {"value": "fever", "duration": list(durations)}]}}]
    # sorted by (-length, string): gold [for two days, two days], predicted [since 2 days, 2 days]
    judge = TableJudge({("for two days", "since 2 days"), ("for two days", "2 days"),
                        ("two days", "since 2 days")})
    counts = nlu_f1([label("two days", "for two days")], [label("2 days", "since 2 days")],
                    judge).total("non_medical")
    # greedy: `for two days` takes `since 2 days`, leaving `two days` with no accepted partner
    assert (counts.tp, counts.fp, counts.fn) == (1, 1, 1)


def test_groups_on_one_side_only_are_all_fn_or_all_fp():
    gold = [{"intent": "inform", "slots": {"positive_symptom": [{"value": "cough", "onset": "monday"}]}}]
    pred = [{"intent": "inform", "slots": {"positive_symptom": [{"value": "cough", "color": "green"}]}}]
    judge = TableJudge({("monday", "green")})
    counts = nlu_f1([gold], [pred], judge).total("non_medical")
    assert (counts.tp, counts.fp, counts.fn) == (0, 1, 1)
    assert judge.asked == []


def test_skipped_turns_count_only_in_joint_accuracy():
    gold = [[{"intent": "inform"}], [{"intent": "chit-chat"}], []]
    pred = [[{"intent": "chit-chat"}], [{"intent": "chit-chat"}], []]
    scores = nlu_f1(gold, pred)
    assert (scores.total().tp, scores.total().fp, scores.total().fn) == (1, 0, 0)
    assert scores.scored_turns == 1
    assert scores.joint_accuracy == pytest.approx(2 / 3)  # upstream: 1/3, see metrics/f1.py


def test_parse_failures_are_counted_and_scored_as_empty():
    gold = [[HEADACHE], [{"intent": "chit-chat"}], [{"intent": "chit-chat"}]]
    pred = [None, [{"intent": "inform", "slots": {"positive_symptom": "headache"}}],
            [{"intent": "inform", "slots": {"symptom": [{"value": "x"}]}}]]
    scores = nlu_f1(gold, pred)
    assert scores.parse_failures == 2  # the unknown slot key parses, it just scores nothing
    assert scores.unknown_slot_keys == 1
    assert scores.total() == Counts(0, 0, 6)


def test_recall_is_guarded_on_tp_plus_fn():
    assert Counts(0, 3, 0).recall == 0.0  # upstream guarded TP + FP and divided by zero here
    gold = [[{"intent": "inform", "slots": {"mystery_slot": [{"value": "x"}]}}]]
    scores = nlu_f1(gold, [[HEADACHE]])
    assert (scores.total().fp, scores.total().fn, scores.total().recall) == (4, 0, 0.0)


def test_pol_skips_a_single_bare_inquire():
    gold = [[{"action": "inquire"}], [{"action": "chit-chat"}]]
    pred = [[{"action": "chit-chat"}], [{"action": "chit-chat"}]]
    scores = pol_f1(gold, pred)
    assert (scores.scored_turns, scores.total().tp, scores.total().fp) == (1, 1, 0)
    assert scores.joint_accuracy == 0.5


def test_malformed_gold_names_its_id():
    with pytest.raises(MalformedLabel, match="407-9"):
        pol_f1([[{"action": 3}]], [[]], ids=["407-9"])


def test_sample_totals_and_gold_scores_one(sample_release):
    release = read_release(sample_release)
    splits = ("train", "validation", "test")
    nlu = [r["nlu"] for r in rows(release, "nlu", splits)]
    pol = [r["actions"] for r in rows(release, "pol", splits)]
    nlu_scores, pol_scores = nlu_f1(nlu, nlu), pol_f1(pol, pol)
    assert (nlu_scores.total("medical").tp, nlu_scores.total("non_medical").tp) == (268, 96)
    assert (pol_scores.total("medical").tp, pol_scores.total("non_medical").tp) == (291, 13)
    assert sum(bool(pol_tuples(a).non_medical) for a in pol) == 12
    for scores in (nlu_scores, pol_scores):
        d = scores.as_dict()
        assert d["f1"] == d["medical"]["f1"] == d["non_medical"]["f1"] == d["joint_accuracy"] == 1.0

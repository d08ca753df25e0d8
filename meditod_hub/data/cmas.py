"""The CMAS vocabulary (Comprehensive Medical Attribute Schema): the one place that spells it.

Every other module (release validation, the state fold, dataset views, model formats, metrics,
cards) imports these names. docs/format.md ("Release format", "Metrics") says what they mean
and where they come from.
"""

from __future__ import annotations

from dataclasses import dataclass

SPEAKERS = ("doctor", "patient")

# Patient NLU intents seen in the canonical data (salutations + nod_prompt were merged upstream).
PATIENT_INTENTS = ("inform", "chit-chat", "nod_prompt_salutations")
# Doctor action types; `other` is in the authors' POL prompt though not in the public sample.
ACTION_TYPES = ("inquire", "diagnosis", "chit-chat", "nod_prompt_salutations", "other")

# Patient slots carry their polarity as a key prefix; actions use bare base names.
POLARITY_PREFIXES = ("positive", "negative", "unknown")
TEST_PREFIXES = ("avail", "unavail")

# Base slots whose entries are medical concepts (head value canonicalised to UMLS), in the
# fixed order the dialogue state renders them (docs/format.md, "The dialogue-state rule").
POLAR_SLOTS = ("symptom", "medical_history", "family_history", "habit", "exposure", "medication")
TEST_SLOT = "medical_test"
# Non-polar patient slots: status, if any, is an attribute.
PLAIN_SLOTS = ("residence", "occupation", "travel", "basic_information")
BASE_SLOTS = POLAR_SLOTS + (TEST_SLOT,) + PLAIN_SLOTS
MEDICAL_BASE_SLOTS = POLAR_SLOTS + (TEST_SLOT,)

# Attributes per base slot (entry keys), in the order the authors' prompts list them.
SLOT_ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "symptom": (
        "value", "location", "onset", "initiation", "duration", "severity", "progression",
        "frequency", "volume", "color",
        "positive_characteristics", "negative_characteristics", "unknown_characteristics",
        "alleviating_factor", "aggravating_factor", "not_alleviating_factor",
        "not_aggravating_factor", "not_alleviating_aggravating_factor", "unknown_factor",
        "itching", "lesion_size", "lesions_peel_off", "rash_swollen",
    ),
    "medical_history": ("value", "starting", "frequency"),
    "family_history": ("value", "relation"),
    "habit": ("value", "starting", "frequency"),
    "exposure": ("value", "where", "when"),
    # `respone_to` (sic) is spelled so in data, prompts and metrics upstream: kept.
    "medication": ("value", "respone_to", "impact", "frequency", "start"),
    "medical_test": ("value", "when"),
    "residence": ("value", "status", "household_size"),
    "occupation": ("value", "status", "exposure"),
    "travel": ("status", "destination", "date"),
    "basic_information": ("age", "gender", "name"),
}

# List-valued attributes: exactly the authors' parser `list_fields` (docs/format.md, "Release
# format"), which also has `unknown_ana_factor` (the prompt says `unknown_factor`; which one the
# full data uses is unknown, so both are accepted on symptoms).
LIST_ATTRIBUTES = frozenset({
    "location",
    "positive_characteristics", "negative_characteristics", "unknown_characteristics",
    "aggravating_factor", "alleviating_factor", "not_aggravating_factor",
    "not_alleviating_factor", "not_alleviating_aggravating_factor",
    "unknown_factor", "unknown_ana_factor",
})
SLOT_ATTRIBUTES["symptom"] = SLOT_ATTRIBUTES["symptom"] + ("unknown_ana_factor",)

# Medical ("canon", exact match) attributes per base slot, as the metric code classifies them
# (docs/format.md, "Metrics"). The head `value` of a medical slot is always medical; everything not listed
# is non-medical and may go through a semantic equivalence judge.
MEDICAL_ATTRIBUTES: dict[str, frozenset[str]] = {
    "symptom": frozenset({"value", "location", "progression", "severity", "lesion_size",
                          "rash_swollen", "itching", "lesions_peel_off"}),
    "medical_history": frozenset({"value"}),
    "family_history": frozenset({"value"}),
    "habit": frozenset({"value"}),
    "exposure": frozenset({"value"}),
    "medication": frozenset({"value", "respone_to", "impact"}),
    "medical_test": frozenset({"value"}),
    "residence": frozenset({"status"}),
    "occupation": frozenset({"status"}),
    "travel": frozenset({"status"}),
    "basic_information": frozenset({"age", "gender", "name"}),
}

# Doctor action slots are unprefixed; `disease` only appears with `diagnosis`.
ACTION_SLOTS = POLAR_SLOTS + (TEST_SLOT, "residence", "occupation", "travel",
                              "basic_information", "disease")
ACTION_ENTRY_KEYS = ("value", "checks")
CHECK_KEYS = ("type", "values")
# Action slots whose entries are medical heads in the POL metric (docs/format.md, "Metrics").
MEDICAL_ACTION_SLOTS = MEDICAL_BASE_SLOTS + ("disease",)

# How the NLU/POL metrics unroll the non-medical slots (docs/format.md, "Metrics"): the status slots
# have no head tuple and only their `status` is medical; basic information is all medical in
# NLU, and in POL its head is non-medical and its checks are ignored.
STATUS_SLOTS = ("residence", "occupation", "travel")
BASIC_INFORMATION_SLOT = "basic_information"
# POL: a check on a slot is always medical; the values the doctor names for a check are medical
# only for these check types (the slot's medical attributes other than its head).
MEDICAL_CHECK_VALUE_TYPES: dict[str, frozenset[str]] = {
    slot: MEDICAL_ATTRIBUTES[slot] - {"value"} for slot in ("symptom", "medication") + STATUS_SLOTS
}

# The scoring skip rules name one patient intent and one action type (docs/format.md, "Metrics").
INFORM_INTENT = "inform"
INQUIRE_ACTION = "inquire"

# Check types a doctor asks about, per action slot (those seen in the authors' sample), and the
# patient attributes that answer them where a check type names a family of attributes.
CHECK_TYPES = {
    "symptom": ("onset", "ana_factors", "location", "characteristics", "progression",
                "duration", "frequency", "severity", "color", "volume"),
    "habit": ("frequency", "starting"), "medication": ("frequency", "respone_to"),
    "exposure": ("where",), "residence": ("value",), "travel": ("status",),
}
CHECK_TYPE_ATTRIBUTES = {
    "ana_factors": ("aggravating_factor", "alleviating_factor", "not_aggravating_factor",
                    "not_alleviating_factor"),
    "characteristics": ("positive_characteristics", "negative_characteristics"),
}

NO_VALUE = None  # state key of an entry without `value` (travel, basic_information, ...)


@dataclass(frozen=True)
class SlotKey:
    """A patient slot key split into its status prefix (or None) and its base slot."""

    status: str | None
    base: str

    @property
    def key(self) -> str:
        return f"{self.status}_{self.base}" if self.status else self.base


def _patient_slot_keys() -> tuple[str, ...]:
    keys = [f"{p}_{b}" for b in POLAR_SLOTS for p in POLARITY_PREFIXES]
    keys += [f"{p}_{TEST_SLOT}" for p in TEST_PREFIXES]
    return tuple(keys) + PLAIN_SLOTS


# Every patient slot key, in the fixed top-level order of a rendered dialogue state.
PATIENT_SLOT_KEYS = _patient_slot_keys()
_SPLIT = {k: SlotKey(k.split("_", 1)[0], k.split("_", 1)[1]) for k in PATIENT_SLOT_KEYS
          if k not in PLAIN_SLOTS}
_SPLIT.update({k: SlotKey(None, k) for k in PLAIN_SLOTS})


def split_slot_key(key: str) -> SlotKey | None:
    """`negative_symptom` -> SlotKey('negative', 'symptom'); None for an unknown key."""
    return _SPLIT.get(key)


def is_medical_attribute(base: str, attribute: str) -> bool:
    return attribute in MEDICAL_ATTRIBUTES.get(base, frozenset())


def is_list_attribute(attribute: str) -> bool:
    return attribute in LIST_ATTRIBUTES

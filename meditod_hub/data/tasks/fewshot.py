"""What the in-context prompts (`meditod_hub.evaluation.fewshot.prompts`) define for a structured
task, and how its answers view a label: the intents, slots and attributes the system message lists
as Python-dict literals (`nlu.py` and `pol.py` name theirs), and the NLU answer's status as an
attribute (`to_status_attributes`, `from_status_attributes`).

The texts follow the released prompting code (`dialog`, where the paper's appendix prints
`dialogue`), so a prompt is byte-identical to the authors' for the same exemplars
(tests/test_fewshot_prompts.py pins it on their sample). The intent and slot names come from `cmas`;
the descriptions are the prompt's own.

Deviation: the authors' mapping kept one list per base slot, so an NLU item with two polarities
of one slot (`positive_symptom` and `negative_symptom`) lost the first in the exemplar answers;
here both are kept, which makes `from_status_attributes` the exact inverse on every label.
"""

from __future__ import annotations

from meditod_hub.data import cmas

NLU_INTENTS = {
    "inform": "The patient is providing information to the doctor.",
    "chit-chat": "The patient is chit-chatting with the doctor.",
    "nod_prompt_salutations": "The patient is nodding to the doctor or delivering salutations.",
}
POL_INTENTS = {  # sic: "from the doctor"
    "inquire": "The doctor is inquiring information from the doctor.",
    "chit-chat": "The doctor is chit-chatting with the patient.",
    "nod_prompt_salutations": "The doctor is nodding to the patient or delivering salutations.",
    "diagnosis": "The doctor making a diagnosis.",
    "other": "Any other action.",
}
_FACTOR = ("laying down", "sleeping")
_CHARACTERISTIC = ("sharp", "burning")
_SCALE = ("4", "7")
_CONDITION = ("hypertensive disease", "malignant neoplasm")


def _status(has: str, has_not: str, unknown: str = "; otherwise, it is 'unknown.'") -> str:
    return f"The status is {has} or {has_not}{unknown}"


# (base slot, description, ((attribute, description, examples), ...)), in the prompt's order.
# `status` rows are the NLU status-as-attribute; the POL prompt leaves them out.
SLOT_DEFINITIONS: tuple = (
    ("symptom", "A symptom relevant to the patient's condition.", (
        ("value", "The symptom in medical terms.", ("coughing, dyspnea",)),
        ("status", _status("'positive' if the patient has the symptom currently",
                           "'negative' if the patient does not have the symptom"), ()),
        ("onset", "When did this symptom appear?", ("three days ago", "one week back")),
        ("initiation", "How did this symptom appear?", ("abruptly", "gradually")),
        ("location", "Where is the symptom located?", ("back", "neck")),
        ("duration", "How long does the symptom persist?", ("a few minutes", "a few hours")),
        ("severity", "What is the severity of this symptom on a scale of 10?", _SCALE),
        ("progression", "How is the symptom's progression?", ("getting worse", "constant")),
        ("frequency", "Frequency, if applicable, to the symptom.", ("3-4 times a day", "every hour")),
        ("positive_characteristics", "A characteristic positively associated with the symptom.",
         _CHARACTERISTIC),
        ("negative_characteristics", "A characteristic not associated with the symptom.",
         _CHARACTERISTIC),
        ("unknown_characteristics", "A characteristic with unknown relation with the symptom.",
         _CHARACTERISTIC),
        ("alleviating_factor", "A condition that alleviates the symptom.", _FACTOR),
        ("not_alleviating_factor", "A condition that does not alleviate the symptom.", _FACTOR),
        ("aggravating_factor", "A condition that aggravates the symptom.", _FACTOR),
        ("not_aggravating_factor", "A condition that does not aggravate the symptom.", _FACTOR),
        ("not_alleviating_aggravating_factor",
         "A condition that neither alleviates nor aggravates the symptom.", _FACTOR),
        ("unknown_factor", "A condition with unknown alleviation/aggravation status.", _FACTOR),
        ("volume", "Volume, if applicable to the symptom.", ("couple of teaspoons",)),
        ("color", "Color, if applicable to the symptom.", ("ping", "red")),
        ("itching", "How severe is the itching on a scale of 10?", _SCALE),
        ("lesion_size", "Is the lesion (or are the lesions) larger than 1cm (Yes/No)?", ()),
        ("lesions_peel_off", "Do the lesions peel off (Yes/No)?", ()),
        ("rash_swollen", "Is the rash swollen (Yes/No)?", ()),
    )),
    ("medical_history", "A medical condition relevant to the patient's medical history.", (
        ("value", "Name of the medical condition.", _CONDITION),
        ("status", _status("'positive' if the patient experienced the medical condition",
                           "'negative' if the patient did not experience the medical condition"),
         ()),
        ("starting", "When did the patient start to experience the condition?",
         ("since teenage", "ten years ago")),
        ("frequency", "How frequently does the patient experience the added condition?",
         ("every year", "during summer")),
    )),
    ("family_history", "A medical condition relevant to the patient's family.", (
        ("value", "Name of the medical condition.", _CONDITION),
        ("status", _status("'positive' if someone in the patient's family suffered from the "
                           "medical condition", "'negative' if no one in the patient's family "
                           "suffered from the medical condition"), ()),
        ("relation", "Relationship with the patient", ("mother", "aunt")),
    )),
    ("habit", "An habitual activity such as smoking, alcoholism, etc.", (
        ("value", "Name of an activity.", ("smoking", "marijuana")),
        ("status", _status("'positive' if the patient engages in the activity habitually",
                           "'negative' if the patient does not engage in the activity "
                           "habitually"), ()),
        ("starting", "When did the patient pick up the activities?", ("ten years back", "as a child")),
        ("frequency", "How frequently does the patient engage in the selected activity?",
         ("on weekends", "every day")),
    )),
    ("exposure", "An environmental/chemical factor such as asbestos, pets, etc.", (
        ("value", "Name of an environmental factor.", ("pets", "dust")),
        ("status", _status("'positive' if the patient was exposed to the factor",
                           "'negative' if the patient was not exposed"), ()),
        ("where", "Where was the patient exposed to the selected factor?", ("work", "home")),
        ("when", "When was the patient exposed to the selected factor?", ("four days ago",)),
    )),
    ("medication", "A medication.", (
        ("value", "Name of a medication.", ("over-the-counter medicine", "paracetamol")),
        ("status", _status("'positive' if the patient took the medicine",
                           "'negative' if the patient did not take the medicine",
                           "; otherwize, it is unknown."), ()),  # sic
        ("start", "Since when did the patient start taking the medication?",
         ("few weeks ago", "two days back")),
        ("impact", "Did the medication help the patient (Yes/No/Maybe)?", ()),
        ("respone_to", "For which condition/symptom is medication for?",
         ("hypertensive disease", "diabetes")),
        ("frequency", "How frequently does the patient take the medication?", ("daily",)),
    )),
    ("medical_test", "A medical test.", (
        ("value", "Name of a medical test.", ("chest X-ray", "electrocardiogram")),
        ("status", _status("'avail' if the patient took the test",
                           "'unavail' if the patient did not take the test"), ()),
        ("when", "When did the patient had the medical test done?", ("yesterday", "a week ago")),
    )),
    ("residence", "Information regarding patient's living conditions.", (
        ("value", "Place where the patient resides.", ("apartment", "old building")),
        ("status", _status("'living' if the patient is currently living at the place",
                           "'not_living' if the patient is not currently living at the place",
                           "."), ()),
        ("household_size", "Size of the patient's household.", ("2", "4")),
    )),
    ("occupation", "Information regarding the patient's occupation.", (
        ("value", "Job/occupation of the patient.", ("nurse", "student")),
        ("status", _status("'true' if the patient works/worked at the above occupation",
                           "'false' if the patient does/did not work at the above occupation",
                           "."), ()),
        ("exposure", "Are there any hazards/substances/dangers to which the patient got exposed "
                     "at work?", ("chemical fumes", "dust")),
    )),
    ("travel", "Information regarding the patient's recent travels.", (
        ("destination", "Where has the patient travelled to?", ("canada", "united states")),
        ("status", _status("'traveled' if the patient travelled recently",
                           "'not_traveled' if the patient did not", "."), ()),
        ("date", "When did the patient travel?", ("last week", "a year ago")),
    )),
    ("basic_information", "Basic information about the patient.", (
        ("age", "Age of the patient.", ("32", "50")),
        ("gender", "Gender of the patient.", ("male", "female")),
        ("name", "Name of the patient.", ("John", "Lily")),
    )),
)
DISEASE_DEFINITION = ("disease", "A medical condition.", (
    ("value", "Name of the medical condition", ("viral pneumonia", "common cold")),))

# The doctor's slots (the POL prompt's) have no status and add the disease.
DOCTOR_SLOT_DEFINITIONS: tuple = tuple((s, d, tuple(a for a in attrs if a[0] != "status"))
                                       for s, d, attrs in SLOT_DEFINITIONS) + (DISEASE_DEFINITION,)


# --- NLU status as an attribute -------------------------------------------------------------

# Base slot -> the statuses its key prefix may carry (the rest of the slots have no prefix).
STATUSES = {**{slot: cmas.POLARITY_PREFIXES for slot in cmas.POLAR_SLOTS},
            cmas.TEST_SLOT: cmas.TEST_PREFIXES}
UNKNOWN_STATUS = "unknown"


def to_status_attributes(items: list[dict]) -> list[dict]:
    """`positive_symptom: [e]` -> `symptom: [e + status: positive]`; other slots unchanged."""
    out = []
    for item in items:
        mapped = {"intent": item["intent"]}
        if "slots" in item:
            slots: dict = {}
            for key, entries in item["slots"].items():
                parsed = cmas.split_slot_key(key)
                if parsed is None or parsed.status is None:
                    slots[key] = entries
                    continue
                slots.setdefault(parsed.base, []).extend(
                    {**entry, "status": parsed.status} for entry in entries)
            mapped["slots"] = slots
        out.append(mapped)
    return out


def from_status_attributes(items: list) -> list[dict]:
    """The inverse: `symptom: [e + status: s]` -> `s_symptom: [e]`; a missing or invalid status
    becomes `unknown_<slot>` (upstream's rule, `unknown_medical_test` included). Raises
    ValueError on a shape that is not a list of items with an object of slot lists."""
    out = []
    for item in json_objects(items, "the answer"):
        mapped = {"intent": item.get("intent")}
        if "slots" in item:
            if not isinstance(item["slots"], dict):
                raise ValueError("`slots` is not an object")
            slots: dict = {}
            for key, entries in item["slots"].items():
                statuses = STATUSES.get(key)
                if statuses is None:
                    slots[key] = entries
                    continue
                for entry in json_objects(entries, f"slot {key!r}"):
                    status = entry.get("status")
                    prefix = status if status in statuses else UNKNOWN_STATUS
                    slots.setdefault(f"{prefix}_{key}", []).append(
                        {k: v for k, v in entry.items() if k != "status"})
            mapped["slots"] = slots
        out.append(mapped)
    return out


def json_objects(value, what: str) -> list[dict]:
    """`value` if it is a list of objects (an answer's items, a slot's entries), else ValueError."""
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise ValueError(f"{what} is not a list of objects")
    return value

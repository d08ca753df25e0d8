"""A deterministic, MediTOD-shaped synthetic corpus at paper scale, for benches, tests and training.

The real release needs a UMLS licence, so build, metric and training benches run on invented
dialogues with the paper's shape: Table 3 sizes (175/20/18 respiratory + 20 musculoskeletal
dialogues, ~96 utterances per dialogue), the intent shares of its section 3 (patients 92.2%
inform, doctors 87.5% inquire), its slot shares (symptom 56%, medical history 13.5%, habit
7.5%). Labels use the CMAS names and lowercase canonical values. No MediTOD text; two styles say
the labels:

- `template` (the default): one fixed template per label, padded with filler words to the
  paper's ~13.4 words per utterance. Plainly synthetic; for benches of scale and shape.
- `realistic`: varied doctor and patient phrasings (`meditod_hub.data.phrasings`): lay names
  for canonical values, denials, several slots in one turn, greetings, chit-chat, and a bare
  "No." to a yes/no question whose value the doctor said, as in MediTOD. Every label is said
  exactly; denials carry no details and symptoms only the details that fit them. Same sizes,
  utterances per dialogue and intent/slot shares, shorter utterances (~8 words). For training.

States are the `meditod_hub.data.state` fold, so a build reports no warnings. release.json
records seed, size and (when not the default) style, from which a build regenerates the corpus.
`python -m meditod_hub.commands.synthetic` writes one.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from meditod_hub.data import cmas
from meditod_hub.data.phrasings import RealisticVoice
from meditod_hub.data.release import (
    DIALOGS_FILE,
    GENERATOR,
    OOD_SPLIT,
    OOD_SPLIT_FILES,
    PATIENT_LABELS,
    SPLIT_FILES,
)
from meditod_hub.data.state import DialogueState
from meditod_hub.errors import UsageError, name_ids
from meditod_hub.files import new_folder, replaceable_folder

# Paper Table 3 per split: dialogues, mean utterances per dialogue, mean words per utterance.
PAPER_SHAPE = {"train": (175, 95.29, 13.46), "validation": (20, 92.45, 12.77),
               "test": (18, 98.89, 13.03), "test_ood": (20, 109.85, 14.00)}
PAPER_DIALOGUES = sum(n for n, _, _ in PAPER_SHAPE.values())  # 233
# How the labels are said (module docstring); release.json records any style but the default.
DEFAULT_STYLE = "template"
STYLES = (DEFAULT_STYLE, "realistic")
IN_DOMAIN, OUT_OF_DOMAIN = "respiratory", "musculoskeletal"

# Paper section 3 shares (percent). Doctors open with a greeting and close with a diagnosis
# (forced, ~2% of doctor turns each), so the turns in between draw from what is left.
PATIENT_INTENT_SHARES = {"inform": 92.2, "chit-chat": 4.2, "nod_prompt_salutations": 3.6}
DOCTOR_ACTION_SHARES = {"inquire": 87.5, "nod_prompt_salutations": 5.0, "chit-chat": 4.8,
                        "diagnosis": 1.9, "other": 0.8}
OPENING_ACTION, CLOSING_ACTION = "nod_prompt_salutations", "diagnosis"
MIDDLE_ACTION_SHARES = {**DOCTOR_ACTION_SHARES, OPENING_ACTION: 2.9, CLOSING_ACTION: 0.0}
SLOT_SHARES = {"symptom": 56.0, "medical_history": 13.5, "habit": 7.5, "family_history": 5.0,
               "medication": 6.0, "exposure": 3.5, "medical_test": 3.5, "residence": 1.5,
               "occupation": 1.5, "travel": 1.0, "basic_information": 1.0}
# Shapes seen in the authors' sample: doctor turns with 1, 2, 3 action items; the chance that
# a patient volunteers a second slot key in an item, or says a second NLU item.
ACTIONS_PER_TURN = {1: 93.0, 2: 5.0, 3: 2.0}
EXTRA_SLOT_KEY = 0.09
SECOND_NLU_ITEM = 0.03

# Invented values, lowercase, UMLS-looking. Keys: a slot (its heads), an attribute, or
# (slot, attribute) where one attribute name means different things on different slots.
_FACTORS = ("exertion", "lying flat", "cold air", "rest", "warm drinks", "climbing stairs",
            "heat pack", "stretching", "prolonged standing")
VALUES: dict = {
    "medical_history": ("asthma", "hypertensive disorder", "diabetes mellitus type 2",
                        "gastroesophageal reflux disease", "seasonal allergic rhinitis",
                        "hypercholesterolemia", "drug allergy", "other"),
    "family_history": ("asthma", "heart disease", "diabetes mellitus", "lung cancer",
                       "rheumatoid arthritis", "stroke"),
    "habit": ("tobacco smoking", "alcohol consumption", "cannabis use", "physical exercise",
              "vaping"),
    "exposure": ("sick contact", "house dust", "mold", "chemical fumes", "animal dander",
                 "construction dust"),
    "residence": ("apartment", "house", "shared house", "other"),
    "occupation": ("teacher", "nurse", "warehouse worker", "office worker", "carpenter",
                   "student"),
    ("action", "travel"): ("other",), ("action", "basic_information"): ("none",),
    "onset": ("two days ago", "last week", "three weeks ago", "a few months ago", "this morning"),
    "initiation": ("sudden", "gradual"),
    "duration": ("a few minutes", "all day", "constant", "on and off", "about an hour"),
    "severity": tuple(str(n) for n in range(1, 11)),
    "progression": ("unchanged with time", "gradually getting worse over time",
                    "gradually getting better over time", "rapidly getting worse over time",
                    "fluctuating"),
    "frequency": ("every day", "twice a week", "a few times a day", "once a month", "at night"),
    "volume": ("a teaspoon", "small amount", "a lot"),
    "color": ("yellow", "green", "clear", "white"),
    **dict.fromkeys(cmas.CHECK_TYPE_ATTRIBUTES["ana_factors"], _FACTORS),
    "starting": ("since college", "five years ago", "as a teenager", "last year"),
    "relation": ("mother", "father", "sister", "brother", "grandmother", "uncle"),
    "where": ("at home", "at work", "at school"),
    "when": ("last week", "two years ago", "last month", "in the spring"),
    "respone_to": ("pain", "wheezing", "hypertensive disorder", "seasonal allergic rhinitis"),
    "impact": ("yes", "no", "maybe"),
    "start": ("a month ago", "last year", "two weeks ago"),
    ("residence", "status"): ("living", "not_living"),
    "household_size": ("1", "2", "3", "4", "5"),
    ("occupation", "status"): ("true", "false"),
    ("occupation", "exposure"): ("dust at work", "sick colleagues", "solvents"),
    ("travel", "status"): ("traveled", "not_traveled"),
    "destination": ("the coast", "another province", "overseas", "the mountains"),
    "date": ("last month", "two weeks ago", "in the summer"),
    "age": tuple(str(n) for n in range(19, 80, 3)),
    "gender": ("female", "male"),
    "name": ("alex rowan", "sam kiran", "jo marlow", "robin vale"),
}
# The realistic style opens each interview on the chief complaint, as MediTOD's do ("what
# brings you in?" -> "I've had a cough for two weeks"): a present symptom and its onset,
# drawn with these weights (the complaints that bring a respiratory or musculoskeletal patient in).
CHIEF_COMPLAINTS = {
    IN_DOMAIN: {"coughing": 40, "dyspnea": 20, "fever": 15, "chest pain": 10, "wheezing": 10,
                "sore throat": 5},
    OUT_OF_DOMAIN: {"pain": 50, "joint swelling": 20, "stiffness": 15, "numbness": 15},
}
CHIEF_ONSETS = ("two weeks", "three days", "a week", "a month", "four days", "a few days")
DOMAIN_VALUES: dict[str, dict] = {
    IN_DOMAIN: {
        "symptom": ("coughing", "dyspnea", "fever", "chills", "wheezing", "chest pain",
                    "colored/excess sputum", "sore throat", "fatigue", "rhinorrhea",
                    "hemoptysis", "night sweats", "headache", "loss of appetite"),
        "disease": ("community acquired pneumonia", "acute bronchitis", "asthma exacerbation",
                    "viral upper respiratory tract infection", "covid-19",
                    "chronic obstructive lung disease exacerbation"),
        "medication": ("salbutamol", "fluticasone", "acetaminophen", "ibuprofen",
                       "cough suppressant", "amoxicillin", "other"),
        "medical_test": ("plain chest x-ray", "spirometry", "covid-19 rt-pcr testing",
                         "complete blood count", "oxygen saturation measurement"),
        "location": ("chest", "structure of throat", "left side of chest",
                     "right side of chest", "nasal sinus structure"),
        "positive_characteristics": ("dry", "productive", "barky", "tight", "sharp", "burning"),
        "negative_characteristics": ("dry", "productive", "barky", "tight", "sharp"),
    },
    OUT_OF_DOMAIN: {
        "symptom": ("pain", "joint swelling", "stiffness", "numbness", "tingling sensation",
                    "muscle weakness", "limited range of motion", "fever", "fatigue",
                    "joint redness", "clicking of joint"),
        "disease": ("osteoarthritis of knee", "carpal tunnel syndrome", "rotator cuff tear",
                    "gout", "lumbar strain", "sprain of ankle"),
        "medication": ("ibuprofen", "naproxen", "acetaminophen", "topical diclofenac",
                       "prednisone", "other"),
        "medical_test": ("x-ray of knee", "magnetic resonance imaging",
                         "serum uric acid measurement", "nerve conduction study"),
        "location": ("structure of knee", "lower back structure", "shoulder region structure",
                     "wrist region structure", "ankle region structure", "structure of hip"),
        "positive_characteristics": ("sharp", "dull", "aching", "throbbing", "burning"),
        "negative_characteristics": ("sharp", "dull", "radiating", "throbbing"),
    },
}

DOCTOR_ASK = {
    "symptom": "have you had any {}", "medical_history": "have you ever been told you have {}",
    "family_history": "does anyone in your family have {}", "habit": "can you tell me about {}",
    "exposure": "have you been around any {}", "medication": "are you taking any {}",
    "medical_test": "have you had a {} done", "residence": "who do you live with at the {}",
    "occupation": "what do you do for work, {}", "travel": "have you travelled anywhere, {}",
    "basic_information": "can I confirm a few details, {}",
}
PATIENT_SAYS = {"positive": "yes I do have {}", "negative": "no, I have not had {}",
                "unknown": "I am not really sure about {}", "avail": "yes I had the {}",
                "unavail": "no I never had a {}", None: "well, {}"}
NO_DETAIL_STATUSES = ("negative", "unavail")  # denials rarely come with attributes
INTENT_ONLY_TEXT = {
    ("doctor", "nod_prompt_salutations"): ("hello, what brings you in today", "okay", "alright"),
    ("doctor", "chit-chat"): ("I am sorry to hear that", "that sounds hard", "thanks for that"),
    ("doctor", "other"): ("let me write that down", "I will check your chart"),
    ("patient", "nod_prompt_salutations"): ("okay", "sure", "yes", "alright doctor"),
    ("patient", "chit-chat"): ("thank you doctor", "it has been a long week honestly"),
}
DIAGNOSIS_TEXT = "it sounds like {}, so we will run a few tests and start treatment today"
FILLERS = ("um", "so", "well", "okay", "I think", "you know", "I mean", "actually", "uh",
           "to be honest", "if I remember right", "I would say", "more or less", "let me think",
           "now that you mention it", "for the last little while", "as far as I can tell",
           "just to be clear", "if that makes sense", "and then")


def _draw(rng: random.Random, shares: dict):
    return rng.choices(list(shares), weights=list(shares.values()))[0]


def _pool(domain: str, *keys) -> tuple:
    for table in (DOMAIN_VALUES[domain], VALUES):
        for key in keys:
            if key in table:
                return table[key]
    return ()


class _TemplateVoice:
    """The template style: each label said by one fixed template, padded with filler words to
    the paper's words per utterance. Plainly synthetic; it may say any label."""

    volunteers = EXTRA_SLOT_KEY  # the authors' sample's rate
    off_topic = 0.0

    def __init__(self, rng: random.Random, words: float):
        self.rng, self.words = rng, words
        self.said = self.word_count = 0

    @staticmethod
    def check_kinds(base, head, kinds):
        return kinds

    @staticmethod
    def check_values(base, head, kind, pool):
        return pool

    @staticmethod
    def attribute_values(base, head, attribute, pool, entry):
        return pool

    @staticmethod
    def details(status, wanted):
        return wanted

    def doctor(self, kind: str, actions: list[dict], opening: bool) -> str:
        if kind == cmas.INQUIRE_ACTION:
            core = ", and ".join(DOCTOR_ASK[base].format(entries[0]["value"]) for act in actions
                                 for base, entries in act.items() if base != "action")
        elif kind == CLOSING_ACTION:
            core = DIAGNOSIS_TEXT.format(actions[0]["disease"][0]["value"])
        else:
            core = self.rng.choice(INTENT_ONLY_TEXT["doctor", kind])
        return self._pad(core) + ("?" if kind == cmas.INQUIRE_ACTION else ".")

    def patient(self, items: list[dict], asked: dict) -> str:
        return self._pad("; ".join(map(self._spoken, items))) + "."

    def _spoken(self, item: dict) -> str:
        if "slots" not in item:
            return self.rng.choice(INTENT_ONLY_TEXT["patient", item["intent"]])
        said = []
        for key, entries in item["slots"].items():
            status = cmas.split_slot_key(key).status
            for entry in entries:
                details = [", ".join(v) if isinstance(v, list) else v
                           for attribute, v in entry.items() if attribute != "value"]
                head = PATIENT_SAYS[status].format(entry.get("value", ""))
                said.append(" ".join([head] + details))
        return "; ".join(said)

    def _pad(self, core: str) -> str:
        """Filler words up to a drawn length; feedback on the running mean keeps the dialogue
        near its split's words per utterance."""
        surplus = self.word_count - self.words * self.said
        mean = max(1.0, self.words - surplus / 2)
        target = round(self.rng.gammavariate(1.5, mean / 1.5))
        words = core.split()
        while len(words) < target:
            filler = self.rng.choice(FILLERS).split()
            words = filler + words if self.rng.random() < 0.5 else words + filler
        self.said += 1
        self.word_count += len(words)
        text = " ".join(words)
        return text[0].upper() + text[1:]


class _Interview:
    """One synthetic interview: the doctor asks, the patient answers, the state folds. The
    style's voice says each turn's labels, and narrows what may be drawn to what it can say."""

    def __init__(self, rng: random.Random, domain: str, utterances: int, words: float,
                 style: str = DEFAULT_STYLE):
        self.rng, self.domain, self.length = rng, domain, utterances
        self.voice = _TemplateVoice(rng, words) if style == DEFAULT_STYLE else RealisticVoice(rng)
        self.positives = rng.sample(_pool(domain, "symptom"), rng.randint(2, 5))
        self.complaint = None  # the realistic style's chief complaint, said first
        if style != DEFAULT_STYLE:
            self.complaint = _draw(rng, CHIEF_COMPLAINTS[domain])
            self.positives = [self.complaint, *(p for p in self.positives if p != self.complaint)]
        self.disease = rng.choice(_pool(domain, "disease"))
        self.state = DialogueState()
        self.utterances: list[dict] = []

    def generate(self) -> dict:
        actions = self.doctor(OPENING_ACTION)
        exchanges = (self.length - 1) // 2
        for turn in range(exchanges):
            self.patient(actions)
            last = turn == exchanges - 1
            actions = self.doctor(CLOSING_ACTION if last else _draw(self.rng, MIDDLE_ACTION_SHARES))
        return {"utterances": self.utterances}

    # -- doctor -------------------------------------------------------------------------------
    def doctor(self, kind: str) -> list[dict]:
        if kind == cmas.INQUIRE_ACTION:
            bases = [_draw(self.rng, SLOT_SHARES) for _ in range(_draw(self.rng, ACTIONS_PER_TURN))]
            actions = [{"action": kind, base: [self._action_entry(base)]} for base in bases]
        elif kind == CLOSING_ACTION:
            actions = [{"action": kind, "disease": [{"value": self.disease}]}]
        else:
            actions = [{"action": kind}]
        self._say("doctor", self.voice.doctor(kind, actions, not self.utterances),
                  {"actions": actions})
        return actions

    def _action_entry(self, base: str) -> dict:
        entry = {"value": self._head(base) or self.rng.choice(_pool(self.domain, ("action", base)))}
        kinds = self.voice.check_kinds(base, entry["value"], cmas.CHECK_TYPES.get(base, ()))
        if kinds and self.rng.random() < (0.4 if base == "symptom" else 0.25):
            count = min(len(kinds), self.rng.choice((1, 1, 1, 2)))
            entry["checks"] = [self._check(base, entry["value"], kind)
                               for kind in self.rng.sample(kinds, count)]
        return entry

    def _check(self, base: str, head: str, kind: str) -> dict:
        pool = self.voice.check_values(base, head, kind, _pool(
            self.domain, (base, kind), kind, *cmas.CHECK_TYPE_ATTRIBUTES.get(kind, ())))
        if kind == "value" or not pool or self.rng.random() >= 0.28:
            return {"type": kind}
        return {"type": kind, "values": self.rng.sample(pool, 2)}

    # -- patient ------------------------------------------------------------------------------
    def patient(self, doctor_actions: list[dict]) -> None:
        if self.complaint is not None and not any(u["speaker"] == "patient"
                                                  for u in self.utterances):
            items = [self._chief_complaint()]
            self._say("patient", self.voice.complaint(items[0]), {PATIENT_LABELS: items})
            return
        asked = [(base, entry) for act in doctor_actions if act["action"] == cmas.INQUIRE_ACTION
                 for base, entries in act.items() if base != "action" for entry in entries]
        intents = [_draw(self.rng, PATIENT_INTENT_SHARES)]
        if self.rng.random() < SECOND_NLU_ITEM:
            intents.append(_draw(self.rng, PATIENT_INTENT_SHARES))
        # a second inform item volunteers something rather than answering the question again
        items = [self._inform(asked if i == 0 else []) if intent == cmas.INFORM_INTENT
                 else {"intent": intent} for i, intent in enumerate(intents)]
        questions = {(base, entry["value"]): "checks" in entry for base, entry in asked}
        self._say("patient", self.voice.patient(items, questions), {PATIENT_LABELS: items})

    def _inform(self, asked: list[tuple[str, dict]]) -> dict:
        answers = [(base, entry["value"], entry.get("checks", [])) for base, entry in asked]
        if answers and self.voice.off_topic and self.rng.random() < self.voice.off_topic:
            answers = []
        if not answers:
            answers.append(self._volunteered())
        if self.rng.random() < self.voice.volunteers:
            answers.append(self._volunteered())
        slots: dict[str, list[dict]] = {}
        for base, head, checks in answers:
            key, entry = self._nlu_entry(base, head if self._has_head(base) else None, checks)
            slots.setdefault(key, []).append(entry)
        return {"intent": cmas.INFORM_INTENT, "slots": slots}

    def _chief_complaint(self) -> dict:
        entry = {"value": self.complaint, "onset": self.rng.choice(CHIEF_ONSETS)}
        characteristics = self._values("symptom", self.complaint, "positive_characteristics", entry)
        if characteristics and self.rng.random() < 0.5:
            entry["positive_characteristics"] = [self.rng.choice(characteristics)]
        key = cmas.SlotKey(cmas.POLARITY_PREFIXES[0], "symptom").key
        return {"intent": cmas.INFORM_INTENT, "slots": {key: [entry]}}

    def _volunteered(self) -> tuple[str, str | None, list]:
        base = _draw(self.rng, SLOT_SHARES)
        return base, self._head(base), []

    def _nlu_entry(self, base: str, head: str | None, checks: list[dict]) -> tuple[str, dict]:
        status = self._status(base, head)
        options = [a for a in cmas.SLOT_ATTRIBUTES[base]
                   if a != "value" and self._values(base, head, a, {})]
        wanted = {self.rng.choice(cmas.CHECK_TYPE_ATTRIBUTES.get(c["type"], (c["type"],))) for c in checks}
        extra = 0 if status in NO_DETAIL_STATUSES else self.rng.choice((0, 0, 1, 1, 2, 3))
        wanted.update(self.rng.sample(options, min(max(extra, head is None), len(options))))
        wanted = self.voice.details(status, wanted)
        entry = {} if head is None else {"value": head}
        for attribute in options:  # in CMAS order
            if attribute in wanted and (pool := self._values(base, head, attribute, entry)):
                entry[attribute] = self._attribute(attribute, pool)
        return cmas.SlotKey(status, base).key, entry

    def _status(self, base: str, head: str | None) -> str | None:
        if base == cmas.TEST_SLOT:
            return self.rng.choice(cmas.TEST_PREFIXES)
        if base not in cmas.POLAR_SLOTS:
            return None
        positive, negative, unknown = cmas.POLARITY_PREFIXES
        if base == "symptom":  # consistent with the case, with an occasional change of mind
            likely, other = (positive, negative) if head in self.positives else (negative, positive)
            return _draw(self.rng, {likely: 90, unknown: 5, other: 5})
        return _draw(self.rng, {positive: 35, negative: 55, unknown: 10})

    def _values(self, base: str, head: str | None, attribute: str, entry: dict) -> tuple:
        pool = _pool(self.domain, (base, attribute), attribute)
        return self.voice.attribute_values(base, head, attribute, pool, entry)

    def _attribute(self, attribute: str, pool: tuple):
        if cmas.is_list_attribute(attribute):
            return self.rng.sample(pool, min(self.rng.choice((1, 1, 2)), len(pool)))
        return self.rng.choice(pool)

    # -- shared -------------------------------------------------------------------------------
    @staticmethod
    def _has_head(base: str) -> bool:
        return "value" in cmas.SLOT_ATTRIBUTES[base]

    def _head(self, base: str) -> str | None:
        if not self._has_head(base):
            return None
        pool = _pool(self.domain, base)
        if base == "symptom" and self.complaint is not None:
            # half the symptoms asked about or volunteered are the case's own, half are not (a
            # pool-wide draw would also hit the case's own: 2 present to 1 absent), so a
            # realistic corpus has as many denials as present symptoms to learn from
            others = [s for s in pool if s not in self.positives]
            return self.rng.choice(self.positives if self.rng.random() < 0.5 else others)
        return self.rng.choice(pool)

    def _say(self, speaker: str, text: str, labels: dict) -> None:
        utterance = {"speaker": speaker, "uttr_id": len(self.utterances), "text": text,
                     "keywords": []}
        if speaker == "patient":
            utterance["dialog_state"] = self.state.update(labels[PATIENT_LABELS]).render()
        self.utterances.append({**utterance, **labels})


def split_sizes(dialogues: int = PAPER_DIALOGUES) -> dict[str, int]:
    """Dialogues per split in the paper's proportions (175/20/18/20 at 233)."""
    if dialogues < len(PAPER_SHAPE):
        raise ValueError(f"need at least {len(PAPER_SHAPE)} dialogues (one per split), "
                         f"got {dialogues}")
    sizes = {split: max(1, round(dialogues * n / PAPER_DIALOGUES))
             for split, (n, _, _) in PAPER_SHAPE.items() if split != "train"}
    return {"train": dialogues - sum(sizes.values()), **sizes}


def split_ids(dialogues: int = PAPER_DIALOGUES) -> dict[str, list[str]]:
    """Dialogue ids per split: "1", "2", ... in split order."""
    ids, start = {}, 1
    for split, size in split_sizes(dialogues).items():
        ids[split] = [str(i) for i in range(start, start + size)]
        start += size
    return ids


def _lengths(rng: random.Random, count: int, mean: float) -> list[int]:
    """Odd utterance counts (the doctor opens and closes) summing to the split's paper mean."""
    lengths = [max(5, 2 * round(rng.gauss(mean, mean / 5) / 2) + 1) for _ in range(count)]
    target = round(mean * count)
    target -= (target - count) % 2  # a sum of `count` odd numbers has the parity of `count`
    while gap := target - sum(lengths):
        i = rng.randrange(count)
        lengths[i] = max(5, lengths[i] + (2 if gap > 0 else -2))
    return lengths


def generate_dialogues(seed: int = 0, dialogues: int = PAPER_DIALOGUES,
                       style: str = DEFAULT_STYLE) -> dict[str, dict]:
    """A `dialogs.json` object (id -> {"utterances": [...]}), split as `split_ids` says."""
    if style not in STYLES:
        raise ValueError(f"unknown style {style!r}: one of {', '.join(STYLES)}")
    out = {}
    for split, ids in split_ids(dialogues).items():
        _, mean_utterances, mean_words = PAPER_SHAPE[split]
        domain = OUT_OF_DOMAIN if split == OOD_SPLIT else IN_DOMAIN
        lengths = _lengths(random.Random(f"{seed}-{split}"), len(ids), mean_utterances)
        for did, length in zip(ids, lengths):
            rng = random.Random(f"{seed}-{did}")
            out[did] = _Interview(rng, domain, length, mean_words, style).generate()
    return out


def generate_release(out_dir: str | Path, seed: int = 0, dialogues: int = PAPER_DIALOGUES,
                     style: str = DEFAULT_STYLE) -> Path:
    """Write a release folder (dialogs.json, the id files, release.json); same seed, same bytes.
    release.json records the seed, size and style, from which the build proves the corpus
    synthetic.

    Written whole beside `out_dir` and moved into place (`files.new_folder`), so a failed or
    interrupted generation leaves what was there untouched. Replaces only a folder that is new,
    empty, or exactly a release this generator wrote: never a real one, nor files added to or
    edited in a synthetic one."""
    out = replaceable_folder(out_dir, example="synthetic")
    recorded = _previous_generator(out)
    files = _release_files(seed, dialogues, style)
    if recorded is not None:
        _check_unchanged(out, files if recorded == (seed, dialogues, style) else None, recorded)
    out.parent.mkdir(parents=True, exist_ok=True)
    with new_folder(out) as tmp:
        for name, text in files.items():
            (tmp / name).write_text(text, encoding="utf-8")
    return Path(out_dir)


def _release_files(seed: int, dialogues: int, style: str) -> dict[str, str]:
    """File name -> text of the release folder `generate_release` writes."""
    id_files = {**SPLIT_FILES, OOD_SPLIT: OOD_SPLIT_FILES[0]}
    return {DIALOGS_FILE: json.dumps(generate_dialogues(seed, dialogues, style)),
            **{id_files[split]: json.dumps(ids) + "\n"
               for split, ids in split_ids(dialogues).items()},
            "release.json": json.dumps(release_metadata(seed, dialogues, style), indent=2) + "\n"}


def _previous_generator(out: Path) -> tuple | None:
    """The (seed, dialogues, style) that `out`'s release.json records (None: `out` is new or
    empty); checked before generating, so a folder that is no synthetic release is refused at
    once."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out} is a file: give a folder for the synthetic release")
    if not out.exists() or not any(out.iterdir()):
        return None
    try:
        generator = json.loads((out / "release.json").read_text(encoding="utf-8"))["generator"]
    except (OSError, ValueError, KeyError, TypeError):
        generator = None
    if not isinstance(generator, dict) or generator.get("name") != GENERATOR:
        raise UsageError(f"{out} holds files and no synthetic release.json: write the synthetic "
                         "release into a new or empty folder")
    return generator.get("seed"), generator.get("dialogues"), generator.get("style", DEFAULT_STYLE)


def _check_unchanged(out: Path, wrote: dict[str, str] | None, recorded: tuple) -> None:
    """Refuse to replace `out` unless its files are exactly those its recorded seed, size and
    style regenerate (`wrote`, when they are this call's)."""
    if wrote is None:
        seed, dialogues, _ = recorded
        try:
            wrote = _release_files(*recorded) if type(seed) is int and type(dialogues) is int else {}
        except ValueError:  # a size or style the generator refuses: nothing regenerates
            wrote = {}
    present = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*")
               if p.is_file()}
    changed = sorted(name for name in {*wrote, *present}
                     if name not in wrote or present.get(name) != wrote[name].encode("utf-8"))
    if changed:
        raise UsageError(f"{out} holds a synthetic release changed or added to since it was "
                         f"generated ({name_ids(changed, 3)}): move it away or write into a new or "
                         "empty folder")


def release_metadata(seed: int, dialogues: int, style: str = DEFAULT_STYLE) -> dict:
    """The release.json `generate_release` writes; the licence proof regenerates it too, so a
    synthetic release's release.json can carry nothing else."""
    generator = {"name": GENERATOR, "seed": seed, "dialogues": dialogues}
    said = ""
    if style != DEFAULT_STYLE:  # the default is not recorded: its releases keep their bytes
        generator["style"] = style
        said = f", {style} style"
    return {"name": "MediTOD-shaped synthetic corpus",
            "description": f"{dialogues} generated dialogues shaped like the paper's corpus "
                           f"(Table 3 sizes, intent and slot shares): meditod_hub.data.synthetic, "
                           f"seed {seed}{said}.",
            "generator": generator}

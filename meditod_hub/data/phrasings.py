"""How the synthetic corpus's realistic style (`--style realistic`) says its labels.

`meditod_hub.data.synthetic` draws the labels; this module turns them into the words a doctor
and a patient would use, varied, and keeps every label exact: each value is said through one of
its `surfaces` (lay phrases a reader recognises the canonical name in: `dyspnea` -> "shortness
of breath"), denials and only denials are said with a negation, and a bare "No." or "Yeah."
answers a yes/no question whose value the doctor just said, as in MediTOD. It also says which
details fit which symptoms (sputum has a colour, a fever does not) so the labels stay sensible.
"""

from __future__ import annotations

import random

from meditod_hub.data import cmas

# Lay phrases per canonical value (noun phrases, with an article where one is needed). Keys: a
# value, or (slot or attribute, value) where one name is said differently in different places.
# A value not listed is said as it is spelled.
SURFACES: dict = {
    # respiratory symptoms
    "coughing": ("a cough",), "dyspnea": ("shortness of breath", "trouble breathing",
                                          "breathlessness", "breathing problems"),
    "fever": ("a fever", "fevers", "a temperature"), "wheezing": ("wheezing", "a wheeze"),
    "chest pain": ("chest pain", "pain in the chest"),
    "colored/excess sputum": ("phlegm", "sputum", "mucus"), "sore throat": ("a sore throat",),
    "fatigue": ("fatigue", "tiredness", "low energy"), "rhinorrhea": ("a runny nose",
                                                                      "a drippy nose"),
    "night sweats": ("night sweats", "sweats at night"),
    "chills": ("chills", "shivers"),
    "hemoptysis": ("blood in the phlegm", "blood in the sputum"), "headache": ("a headache",
                                                                               "headaches"),
    "loss of appetite": ("loss of appetite", "a poor appetite"),
    # musculoskeletal symptoms
    "joint swelling": ("joint swelling", "swelling in the joint"),
    "tingling sensation": ("tingling", "pins and needles"),
    "muscle weakness": ("muscle weakness", "weakness in the muscles"),
    "limited range of motion": ("a limited range of motion", "trouble moving the joint"),
    "joint redness": ("joint redness", "redness over the joint"),
    "clicking of joint": ("a clicking joint", "clicking in the joint"),
    # history, habits, exposures, medications, tests
    "hypertensive disorder": ("high blood pressure", "hypertension"),
    "diabetes mellitus type 2": ("type 2 diabetes", "type two diabetes"),
    "diabetes mellitus": ("diabetes",),
    "gastroesophageal reflux disease": ("acid reflux", "GERD"),
    "seasonal allergic rhinitis": ("seasonal allergies", "hay fever"),
    "hypercholesterolemia": ("high cholesterol",),
    "drug allergy": ("allergies to medications", "a drug allergy", "medication allergies"),
    ("medical_history", "other"): ("other medical conditions", "other health problems"),
    ("medication", "other"): ("other medications", "other medicines"),
    ("residence", "other"): ("some other kind of place",),
    "tobacco smoking": ("smoke", "smoke cigarettes"), "alcohol consumption": ("drink alcohol",
                                                                              "drink"),
    "cannabis use": ("use cannabis", "smoke cannabis"), "physical exercise": ("exercise",
                                                                            "do physical exercise"),
    "vaping": ("vape",),
    "sick contact": ("sick people", "sick contacts"), "house dust": ("house dust",),
    "mold": ("mold",), "chemical fumes": ("chemical fumes",),
    "animal dander": ("pets", "animal dander"), "construction dust": ("construction dust",),
    "cough suppressant": ("a cough suppressant",), "topical diclofenac": ("diclofenac gel",),
    "plain chest x-ray": ("a chest x-ray",), "spirometry": ("spirometry", "a breathing test"),
    "covid-19 rt-pcr testing": ("a covid test", "a covid-19 PCR test"),
    "complete blood count": ("a blood count", "a complete blood count"),
    "oxygen saturation measurement": ("an oxygen saturation measurement",
                                      "an oxygen saturation check"),
    "x-ray of knee": ("a knee x-ray", "an x-ray of the knee"),
    "magnetic resonance imaging": ("an MRI", "magnetic resonance imaging"),
    "serum uric acid measurement": ("a uric acid test",), "nerve conduction study": (
        "a nerve conduction study",),
    "apartment": ("an apartment",), "house": ("a house",), "shared house": ("a shared house",),
    "teacher": ("a teacher",), "nurse": ("a nurse",), "warehouse worker": ("a warehouse worker",),
    "office worker": ("an office worker",), "carpenter": ("a carpenter",), "student": ("a student",),
    # diagnoses
    "community acquired pneumonia": ("pneumonia", "a community acquired pneumonia"),
    "acute bronchitis": ("acute bronchitis", "bronchitis"),
    "asthma exacerbation": ("an asthma exacerbation", "an asthma flare-up"),
    "viral upper respiratory tract infection": ("a viral upper respiratory infection",
                                                "a viral respiratory infection"),
    "covid-19": ("covid-19", "covid"),
    "chronic obstructive lung disease exacerbation": ("a COPD exacerbation", "a COPD flare-up"),
    "osteoarthritis of knee": ("osteoarthritis of the knee", "osteoarthritis"),
    "carpal tunnel syndrome": ("carpal tunnel syndrome",), "rotator cuff tear": (
        "a rotator cuff tear",), "lumbar strain": ("a lumbar strain", "a strained lower back"),
    "sprain of ankle": ("an ankle sprain", "a sprained ankle"),
    # symptom details
    "structure of throat": ("throat",), "nasal sinus structure": ("sinuses",),
    "left side of chest": ("left side of the chest",), "right side of chest": (
        "right side of the chest",), "structure of knee": ("knee",), "lower back structure": (
        "lower back",), "shoulder region structure": ("shoulder",), "wrist region structure": (
        "wrist",), "ankle region structure": ("ankle",), "structure of hip": ("hip",),
    "sudden": ("suddenly", "all of a sudden"), "gradual": ("gradually", "gradual"),
    "constant": ("constant",), "small amount": ("a small amount",),
    "unchanged with time": ("it's stayed the same", "it's unchanged"),
    "gradually getting worse over time": ("it's gradually getting worse",
                                          "it's been getting worse over time"),
    "gradually getting better over time": ("it's gradually getting better",
                                           "it's been getting better over time"),
    "rapidly getting worse over time": ("it's rapidly getting worse", "it's getting worse fast"),
    "fluctuating": ("it fluctuates", "it's fluctuating, up and down"),
    ("impact", "yes"): ("it helps", "it does help"), ("impact", "maybe"): ("maybe it helps",
                                                                        "it maybe helps a bit"),
    ("impact", "no"): ("it doesn't help", "it doesn't really help"),
    "alex rowan": ("Alex Rowan",), "sam kiran": ("Sam Kiran",), "jo marlow": ("Jo Marlow",),
    "robin vale": ("Robin Vale",),
}

# Symptom details that fit only some symptoms: detail family -> symptom -> the values that fit
# (None: the whole pool). A family not listed fits every symptom (onset, severity, factors, ...).
_CHEST = ("chest", "left side of chest", "right side of chest")
_JOINTS = ("structure of knee", "lower back structure", "shoulder region structure",
           "wrist region structure", "ankle region structure", "structure of hip")
_MSK_PAINS = ("pain", "joint swelling", "stiffness", "numbness", "tingling sensation",
              "muscle weakness", "limited range of motion", "joint redness", "clicking of joint")
SYMPTOM_DETAILS = {
    "location": {"chest pain": _CHEST, "sore throat": ("structure of throat",),
                 "rhinorrhea": ("nasal sinus structure",), **dict.fromkeys(_MSK_PAINS, _JOINTS)},
    "characteristics": {"coughing": ("dry", "productive", "barky"),
                        "chest pain": ("tight", "sharp", "burning"),
                        "headache": ("sharp", "dull", "throbbing"),
                        "pain": ("sharp", "dull", "aching", "throbbing", "burning", "radiating")},
    "color": {"colored/excess sputum": None}, "volume": {"colored/excess sputum": None},
}
_FAMILY = {"positive_characteristics": "characteristics", "negative_characteristics":
           "characteristics"}
# Check types whose offered values read as a question ("Is the cough dry or productive?").
CHECK_VALUE_TYPES = ("onset", "ana_factors", "location", "characteristics", "frequency",
                     "severity", "color", "volume", "respone_to", "where")

# The bare answer to a yes/no question, per patient status (the value is the doctor's).
SHORT_ANSWERS = {"positive": ("Yes.", "Yeah.", "Yes, I have.", "Mm-hm, yes.", "Yes, I do.",
                              "I have, yes.", "Yeah, a bit."),
                 "negative": ("No.", "Nope.", "No, not really.", "No, none of that.",
                              "Not at all.", "No, I haven't.", "No, I do not.", "Nope, never."),
                 "unknown": ("Maybe.", "Possibly, I'm unsure.", "I'm unsure.",
                             "Hard to say, maybe."),
                 "avail": ("Yes, I have.", "Yes.", "I have, yes."),
                 "unavail": ("No.", "No, never.", "No, I haven't.", "Never have, no.")}

# Doctor questions: {x} the value with its article, {b} without.
DOCTOR_ASKS = {
    "symptom": ("Any {b}?", "Have you had {x}?", "Have you noticed any {b}?",
                "Do you have {x}?", "What about {x}?"),
    "medical_history": ("Have you ever been diagnosed with {x}?", "Any history of {b}?",
                        "Do you have {x}?"),
    "family_history": ("Does anyone in your family have {x}?", "Any family history of {b}?",
                       "Does {b} run in your family?"),
    "habit": ("Do you {x}?", "Do you {x} at all?"),
    "exposure": ("Have you been around {x}?", "Any exposure to {b}?"),
    "medication": ("Are you taking {x}?", "Do you use {x}?", "Any {b}?"),
    "medical_test": ("Have you had {x}?", "Have you ever had {x} done?"),
    "residence": ("Do you live in {x}?", "Is home {x}?"),
    "occupation": ("Are you {x}?", "What do you do for work, are you {x}?"),
    "travel": ("Any recent travel?", "Have you travelled anywhere recently?"),
    "basic_information": ("How old are you?", "Can I confirm your name and age?",
                          "Could you tell me a bit about yourself, your age?"),
}
# Check questions per check type, (plain, with offered values {v}); keyed like SURFACES.
DOCTOR_CHECKS = {
    "onset": (("When did the {b} start?", "How long have you had the {b}?"),
              ("Did the {b} start {v}?",)),
    "ana_factors": (("Does anything make the {b} better or worse?",
                     "Is there anything that brings on the {b}?"),
                    ("Does {v} change the {b}?",)),
    "location": (("Where do you feel the {b}?", "Where exactly is the {b}?"),
                 ("Is the {b} in the {v}?",)),
    "characteristics": (("How would you describe the {b}?", "What is the {b} like?"),
                        ("Is the {b} {v}?",)),
    "progression": (("Is the {b} getting better or worse?", "How has the {b} changed over time?"),
                    ()),
    "duration": (("How long does the {b} last?", "How long does each bout of {b} last?"), ()),
    "frequency": (("How often do you get the {b}?",), ("Do you get the {b} {v}?",)),
    "severity": (("How bad is the {b}, from 1 to 10?", "How severe is the {b} out of 10?"),
                 ("Would you rate the {b} {v} out of 10?",)),
    "color": (("What colour is the {b}?",), ("Is the {b} {v}?",)),
    "volume": (("How much {b} do you bring up?",), ("Is it {v} of {b}?",)),
    ("habit", "frequency"): (("How often do you {x}?",), ("Do you {x} {v}?",)),
    ("habit", "starting"): (("When did you start to {x}?", "How long ago did you start to {x}?"),
                            ()),
    ("medication", "frequency"): (("How often do you take {b}?",), ("Do you take {b} {v}?",)),
    "respone_to": (("What do you take {b} for?",), ("Do you take {b} for {v}?",)),
    "where": (("Where were you around {b}?",), ("Were you around {b} {v}?",)),
    "value": (("What kind of place do you live in, is it {x}?",), ()),
    "status": (("Have you travelled anywhere lately?",), ()),
}
DOCTOR_SAYS = {
    "opening": ("Hi, what brings you in today?", "Hello, how can I help you today?",
                "Good morning, what seems to be the problem?", "Hi there, what's going on?"),
    "nod_prompt_salutations": ("Okay.", "Alright.", "I see.", "Mm-hm, go on.", "Okay, thanks."),
    "chit-chat": ("I'm sorry to hear that.", "That sounds hard.", "Thanks for telling me.",
                  "That must be uncomfortable.", "I understand, that sounds stressful."),
    "other": ("Let me write that down.", "I'll check your chart.", "Give me a second to note that."),
    "diagnosis": ("It sounds like {x}. We'll run a few tests and start treatment today.",
                  "From what you've told me, this is most likely {x}.",
                  "I think this could be {x}, so let's do some tests to confirm."),
}
QUESTION_OPENERS = ("", "", "Okay, ", "Alright, and ", "And ", "Okay, and ")

# Patient head sentences per (slot, status): {x}/{b} as above; {relation} when one is said.
PATIENT_SAYS = {
    ("symptom", "positive"): ("Yes, I've had {x}.", "Yeah, I've been having {x}.", "I have {x}.",
                              "I've had {x} lately.", "I've been dealing with {x}.",
                              "Unfortunately, yes, {b}."),
    ("symptom", "negative"): ("No, no {b}.", "No {b}.", "No, I haven't had {x}.",
                              "Nope, no {b}.", "I haven't noticed any {b}.",
                              "Not that I've noticed, no {b}."),
    ("symptom", "unknown"): ("Maybe a little {b}, I'm unsure.", "I might have {x}, hard to say.",
                             "Unsure, maybe a bit of {b}."),
    ("medical_history", "positive"): ("I have {x}.", "Yes, I was diagnosed with {x}.",
                                      "I've been told I have {x}.",
                                      "Yes, I have a history of {b}."),
    ("medical_history", "negative"): ("No, I've never had {x}.", "No {b}.",
                                      "No, I don't have {x}.", "Nope, no history of {b}."),
    ("medical_history", "unknown"): ("I might have {x}, I'm unsure.",
                                     "Possibly {b}, I'd have to check."),
    ("family_history", "positive"): ("Yes, {b} runs in my family.", "My {relation} has {x}.",
                                     "Yes, my {relation} had {x}.",
                                     "Yes, my {relation} was diagnosed with {x}."),
    ("family_history", "negative"): ("No, nobody in my family has {x}.", "No {b} in the family.",
                                     "Not that I know of, no {b} in the family."),
    ("family_history", "unknown"): ("Maybe, I think my {relation} might have {x}.",
                                    "I'm unsure about {b} in the family."),
    ("habit", "positive"): ("Yes, I {x}.", "Yeah, I {x}.", "I do, yes, I {x}."),
    ("habit", "negative"): ("No, I don't {x}.", "No, I never {x}.", "I don't {x} at all.",
                            "Nope, I don't {x}."),
    ("habit", "unknown"): ("I {x} now and then, hard to say how much.", "Sometimes I {x}, I guess."),
    ("exposure", "positive"): ("Yes, I've been around {x}.", "Yeah, there's been {b} around me."),
    ("exposure", "negative"): ("No, I haven't been around {x}.", "No, no {b}.",
                               "Not that I know of, no {b}."),
    ("exposure", "unknown"): ("Possibly {b}, I'm unsure.", "I might have been around {x}."),
    ("medication", "positive"): ("I take {x}.", "I've been using {x}.", "Yes, I'm on {x}.",
                                 "I'm currently taking {x}."),
    ("medication", "negative"): ("No, I'm not taking {x}.", "No, I don't take {x}.",
                                 "Not at the moment, no {b}."),
    ("medication", "unknown"): ("I might be on {x}, I'd have to check.", "Maybe {b}, I'm unsure."),
    ("medical_test", "avail"): ("Yes, I had {x}.", "I've had {x} done, yes.",
                                "I had {x} recently, yes."),
    ("medical_test", "unavail"): ("No, I've never had {x}.", "No, I haven't had {x} done."),
}
# Detail sentences per attribute (or (slot, attribute)): {v} the value's surface.
PATIENT_DETAILS = {
    "location": ("It's in the {v}.", "I feel it in the {v}.", "Mostly in the {v}."),
    "onset": ("It started {v}.", "It began {v}.", "Roughly {v}.", "It first came on {v}."),
    "initiation": ("It came on {v}.", "It started {v}."),
    "duration": ("It lasts {v}.", "Each time it lasts {v}."),
    "severity": ("I'd rate it {v} out of 10.", "Maybe {v} out of 10.", "About a {v} out of 10.",
                 "It's a {v} out of 10, I'd say."),
    "progression": ("{v}.", "Overall {v}."),
    "frequency": ("{v}, I'd say.", "It happens {v}.", "Mostly {v}.", "I get it {v}."),
    ("habit", "frequency"): ("{v}, I'd say.", "About {v}."),
    ("medication", "frequency"): ("I take it {v}.", "{v}, I'd say."),
    "volume": ("It's {v} each time.", "About {v}."),
    "color": ("It's {v}.", "It's kind of {v}."),
    "positive_characteristics": ("It's {v}.", "It feels {v}."),
    "negative_characteristics": ("It's not {v}.", "It isn't really {v}."),
    "aggravating_factor": ("It gets worse with {v}.", "Things like {v} make it worse.",
                           "It's worse with {v}."),
    "alleviating_factor": ("It gets better with {v}.", "I find it eases with {v}.",
                           "It's better with {v}.", "{v} helps it."),
    "not_aggravating_factor": ("It doesn't get worse with {v}.",),
    "not_alleviating_factor": ("It doesn't get better with {v}.", "{v} doesn't really help."),
    "starting": ("{v}, more or less.", "{v}, I think."),
    "where": ("Mostly {v}.", "That's {v}."),
    "when": ("That was {v}.",),
    "respone_to": ("It's for {v}.", "I take it for {v}.", "I use it for the {v}."),
    "impact": ("{v}.",),
    "start": ("I started it {v}.",),
    "household_size": ("{v} in the household, counting me.", "Household of {v}, counting me."),
    ("occupation", "exposure"): ("I'm around {v} a lot.", "There's a lot of {v}."),
    ("travel", "status"): {"traveled": ("Yes, I travelled recently.", "I did travel, yes."),
                           "not_traveled": ("No, I haven't travelled recently.",
                                            "No travel lately.")},
    "destination": ("I went to {v}.", "I was at {v}."),
    "date": ("That was {v}.",),
    "age": ("I'm {v} years old.", "I'm {v}."),
    "gender": ("I'm {v}.",),
    "name": ("My name is {v}.", "It's {v}."),
}
# Head sentences of the slots without a polarity, per their `status` attribute (None: not said).
PLAIN_SAYS = {
    "residence": {"living": ("I live in {x}.", "I'm living in {x}."),
                  "not_living": ("I don't live in {x} anymore.", "I'm not living in {x} now."),
                  None: ("It's {x}.", "Home is {x}.")},
    "occupation": {"true": ("I work as {x}.", "I'm {x}, working full time."),
                   "false": ("I'm not working at the moment, I used to be {x}.",),
                   None: ("I'm {x}.",)},
}
VOLUNTEER_OPENERS = ("", "", "Also, ", "Oh, and ", "Well, ")
TYPED = 0.25  # the share of patient lines written as typed: `RealisticVoice._typed`
# The chief complaint, the patient's first line: the symptom and how long it has lasted ({d}).
COMPLAINT_SAYS = ("I've had {x} for {d}.", "I have had {x} for {d}.",
                  "I've been having {x} for about {d} now.", "Well, I've had {x} for the past {d}.",
                  "I've got {x}, for {d} or so.")
PATIENT_INTENT_SAYS = {
    "nod_prompt_salutations": ("Okay.", "Sure.", "Alright, doctor.", "Hi doctor.", "Mm-hm."),
    "chit-chat": ("Thank you, doctor.", "It's been a long week, honestly.",
                  "I'm just worried it's something serious.", "I'm glad I came in.",
                  "Work has been busy lately."),
}


def surfaces(key: str, value: str) -> tuple[str, ...]:
    """The phrases that say `value` of slot or attribute `key`."""
    return SURFACES.get((key, value)) or SURFACES.get(value) or (value,)


def bare(phrase: str) -> str:
    """A phrase without its leading article ("a cough" -> "cough")."""
    for article in ("a ", "an "):
        if phrase.startswith(article):
            return phrase[len(article):]
    return phrase


def _allowed(base: str, head: str | None, family: str) -> tuple | None:
    """The values of detail `family` that fit `head`; None: any value."""
    fits = SYMPTOM_DETAILS.get(_FAMILY.get(family, family)) if base == "symptom" else None
    return None if fits is None else fits.get(head, ())


def _sentence(text: str) -> str:
    return text[0].upper() + text[1:]


def _opened(opener: str, sentence: str) -> str:
    """"Okay, " + "Any fever?" -> "Okay, any fever?" ("I" stays capital)."""
    if not opener or sentence.startswith(("I ", "I'")):
        return opener + sentence
    return opener + sentence[0].lower() + sentence[1:]


class RealisticVoice:
    """Says a dialogue's labels in varied natural sentences, and narrows what the generator
    may draw to labels that can be said sensibly (the template voice draws anything)."""

    # The chance that an answer also volunteers a second slot ("No chest pain. I do have a fever
    # though."): about 3x the authors' sample's 9%, so that a model trained on a small corpus learns
    # to read the patient's own words and not only the doctor's question.
    volunteers = 0.25
    # The chance that a patient leaves the question aside and says something else ("Any chest
    # pain?" "no fever"): the labels are what was said, so a model learns to read the answer.
    off_topic = 0.1

    def __init__(self, rng: random.Random):
        self.rng = rng

    # -- what fits ----------------------------------------------------------------------------
    @staticmethod
    def fitting(base: str, head: str | None, family: str, pool) -> tuple:
        """The values of detail `family` (an attribute or check type) that fit `head`."""
        allowed = _allowed(base, head, family)
        return tuple(pool) if allowed is None else tuple(v for v in pool if v in allowed)

    @staticmethod
    def check_kinds(base: str, head: str | None, kinds: tuple) -> tuple:
        """The check types a doctor would ask about `head` (no colour of a fever)."""
        return tuple(kind for kind in kinds if _allowed(base, head, kind) != ())

    def check_values(self, base: str, head: str | None, kind: str, pool) -> tuple:
        values = self.fitting(base, head, kind, pool) if kind in CHECK_VALUE_TYPES else ()
        return values if len(values) >= 2 else ()

    def attribute_values(self, base: str, head: str | None, attribute: str, pool,
                         entry: dict) -> tuple:
        """A value said once in an entry is not said again under another attribute ("dry" and
        "not dry")."""
        said = {v for value in entry.values() for v in (value if isinstance(value, list) else [value])}
        return tuple(v for v in self.fitting(base, head, attribute, pool) if v not in said)

    @staticmethod
    def details(status: str | None, wanted: set[str]) -> set[str]:
        """A denial is said bare ("No fever."): details would contradict it."""
        return set() if status in ("negative", "unavail") else wanted

    # -- doctor -------------------------------------------------------------------------------
    def doctor(self, kind: str, actions: list[dict], opening: bool) -> str:
        if kind == cmas.INQUIRE_ACTION:
            questions = [self._question(base, entry) for act in actions
                         for base, entries in act.items() if base != "action" for entry in entries]
            return _opened(self.rng.choice(QUESTION_OPENERS), " ".join(questions))
        if kind == "diagnosis":
            disease = actions[0]["disease"][0]["value"]
            return self._say(DOCTOR_SAYS[kind], "disease", disease)
        return self.rng.choice(DOCTOR_SAYS["opening" if opening else kind])

    def _question(self, base: str, entry: dict) -> str:
        checks = entry.get("checks")
        if not checks:
            return self._say(DOCTOR_ASKS[base], base, entry["value"])
        asked = []
        for check in checks:
            plain, offered = DOCTOR_CHECKS.get((base, check["type"])) or DOCTOR_CHECKS[check["type"]]
            if "values" in check:
                values = " or ".join(self.rng.choice(surfaces(check["type"], v))
                                     for v in check["values"])
                asked.append(self._say(offered, base, entry["value"], v=values))
            else:
                asked.append(self._say(plain, base, entry["value"]))
        return " ".join(asked)

    # -- patient ------------------------------------------------------------------------------
    def patient(self, items: list[dict], asked: dict[tuple[str, str], bool]) -> str:
        """`asked`: (slot, value) the doctor just asked about -> whether with checks."""
        return self._typed(" ".join(self._item(item, asked, first=i == 0)
                                    for i, item in enumerate(items)))

    def _item(self, item: dict, asked: dict, first: bool) -> str:
        if "slots" not in item:
            return self.rng.choice(PATIENT_INTENT_SAYS[item["intent"]])
        said = [(cmas.split_slot_key(key), entry) for key, entries in item["slots"].items()
                for entry in entries]
        short = self._short_answer(said, asked) if first else None
        if short:
            return short
        sentences = []
        for slot, entry in said:
            was_asked = (slot.base, entry.get("value")) in asked
            opener = "" if was_asked or sentences else self.rng.choice(VOLUNTEER_OPENERS)
            sentences += self._entry(slot.base, slot.status, entry, was_asked and len(said) == 1)
            sentences[0] = _opened(opener, sentences[0])
        return " ".join(sentences)

    def complaint(self, item: dict) -> str:
        """The chief complaint (`synthetic.CHIEF_COMPLAINTS`): one present symptom, its onset
        said as how long it has lasted ("I've had a dry cough for two weeks."), then any other
        detail."""
        ((key, (entry,)),) = item["slots"].items()
        details = [(a, v) for a, v in entry.items() if a not in ("value", "onset")]
        phrase = self._symptom_phrase(entry["value"], details)
        head = _sentence(self.rng.choice(COMPLAINT_SAYS).format(x=phrase, d=entry["onset"]))
        return self._typed(" ".join([head, *(self._detail("symptom", a, v) for a, v in details)]))

    def _symptom_phrase(self, value: str, details: list) -> str:
        """A present symptom's phrase; half the time its one quality goes before the noun ("a dry
        cough"), and leaves `details`, which then say the rest."""
        phrase = self.rng.choice(surfaces("symptom", value))
        described = [(a, v) for a, v in details if a == "positive_characteristics" and len(v) == 1
                     and " " not in (word := self.rng.choice(surfaces(a, v[0])))]
        if described and self.rng.random() < 0.5:
            details.remove(described[0])
            article = "an " if word[0] in "aeiou" else "a "
            phrase = (article if bare(phrase) != phrase else "") + f"{word} {bare(phrase)}"
        return phrase

    def _typed(self, text: str) -> str:
        """A quarter of patient lines as people type them into a chat box ("no fever"): no
        capital, no final full stop; the labels are the same."""
        if self.rng.random() >= TYPED:
            return text
        text = text.removesuffix(".")
        return text if text.startswith(("I ", "I'")) else text[0].lower() + text[1:]

    def _short_answer(self, said: list, asked: dict) -> str | None:
        """"No." to "Any fever?": only when every entry answers a plain yes/no question, says no
        detail, and all share one status."""
        statuses = {slot.status for slot, _ in said}
        if len(statuses) != 1 or None in statuses or self.rng.random() < 0.5:
            return None
        if all(asked.get((slot.base, entry.get("value"))) is False and list(entry) == ["value"]
               for slot, entry in said):
            return self.rng.choice(SHORT_ANSWERS[statuses.pop()])
        return None

    def _entry(self, base: str, status: str | None, entry: dict, answering: bool) -> list[str]:
        head = entry.get("value")
        details = [(a, v) for a, v in entry.items() if a != "value"]
        if base in cmas.POLAR_SLOTS or base == cmas.TEST_SLOT:
            relation = entry.get("relation") if base == "family_history" else None
            if relation:
                details.remove(("relation", relation))
            templates = [t for t in PATIENT_SAYS[base, status] if ("{relation}" in t) == bool(relation)]
            # "It started two days ago." answers "When did the cough start?": the cough is the doctor's
            skip_head = answering and details and status == "positive" and self.rng.random() < 0.5
            phrase = None
            if (base, status) == ("symptom", "positive") and not skip_head:
                phrase = self._symptom_phrase(head, details)
            head_said = [] if skip_head else [self._say(templates, base, head, phrase,
                                                        relation=relation)]
        elif base in PLAIN_SAYS:  # "I don't live in an apartment anymore." says the status too
            status_value = entry.get("status")
            details = [(a, v) for a, v in details if a != "status"]
            head_said = [self._say(PLAIN_SAYS[base][status_value], base, head)]
        else:  # travel, basic information: the details are all there is
            head_said = []
        return head_said + [self._detail(base, a, v) for a, v in details]

    def _detail(self, base: str, attribute: str, value) -> str:
        templates = PATIENT_DETAILS.get((base, attribute)) or PATIENT_DETAILS[attribute]
        if isinstance(templates, dict):  # a status: its sentence says it
            return self.rng.choice(templates[value])
        values = value if isinstance(value, list) else [value]
        said = " and ".join(self.rng.choice(surfaces(attribute, v)) for v in values)
        return _sentence(self.rng.choice(templates).format(v=said))

    # -- shared -------------------------------------------------------------------------------
    def _say(self, templates: tuple, key: str, value: str, phrase: str | None = None,
             **fields) -> str:
        phrase = phrase or self.rng.choice(surfaces(key, value))
        return _sentence(self.rng.choice(templates).format(x=phrase, b=bare(phrase), **fields))

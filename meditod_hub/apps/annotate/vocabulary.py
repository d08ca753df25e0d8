"""The values the questionnaire offers: those a release already holds (`known_values`, what it
autocompletes; `release_canonical`, the medical ones among them), and the canonical vocabulary
loaded into the portal, against which the page flags a medical value as new (`Vocabulary`: the
release folder's `vocabulary.json`, not part of the release, plus `meditod annotate
--vocabulary`'s values for the session), read from a vocabulary file (`parse_vocabulary`).

Apart from the store because it reads vocabulary files in any of their shapes and walks every
label of a release for its values; the store only hands it the dialogues.
"""

from __future__ import annotations

import json
from pathlib import Path

from meditod_hub import strictjson
from meditod_hub.data import cmas
from meditod_hub.data.release import PATIENT_LABELS
from meditod_hub.errors import MeditodError
from meditod_hub.files import atomic_write

VOCABULARY_FILE = "vocabulary.json"  # canonical values loaded in the portal (not part of the release)


class Vocabulary:
    """A release folder's saved vocabulary, written under `write_lock` (the backup's lock), and the
    session's own values (`meditod annotate --vocabulary`), never saved."""

    def __init__(self, folder: Path, session: frozenset[str], write_lock):
        self.path = folder / VOCABULARY_FILE
        self.session = session
        self._write_lock = write_lock

    def values(self) -> list[str]:
        return sorted(self.saved() | self.session)

    def saved(self) -> set[str]:
        path = self.path
        if not path.exists():
            return set()
        try:
            values = strictjson.loads(path.read_text(encoding="utf-8"))["values"]
            if not all(isinstance(v, str) and _is_text(v) for v in values):
                raise ValueError("a value that is not text: a number, NaN or a lone surrogate")
        except (ValueError, OSError, TypeError, KeyError, RecursionError) as exc:
            why = "nested too deeply" if isinstance(exc, RecursionError) else repr(exc)
            raise MeditodError(f"{path}: not a vocabulary this portal wrote ({why}); move it "
                               "away and load the vocabulary again") from None
        return set(values)

    def add(self, new: set[str]) -> int:
        """Merge `new` values into `vocabulary.json`; the count of values new to the page."""
        saved = self.saved()
        added = new - saved - self.session
        if new - saved:
            with self._write_lock:
                atomic_write(self.path, json.dumps(
                    {"about": "canonical values loaded in `meditod annotate` (not part of the "
                              "release; the build ignores this file)",
                     "values": sorted(saved | new)}, indent=1, ensure_ascii=False) + "\n")
        return len(added)


def _is_text(value: str) -> bool:
    """Whether `value` is Unicode text (no lone surrogate, which no page or file can hold)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_vocabulary(text: str, name: str) -> set[str]:
    """Canonical values from a vocabulary file: one value a line (`#` comments), or JSON: a list,
    an object of lists, or entries with `code` / `display_name` / `value` (the authors' ontology
    lists, exported as JSON)."""
    stripped = text.strip()
    if stripped[:1] in ("[", "{"):
        try:
            data = strictjson.loads(stripped)
        except ValueError as exc:
            raise MeditodError(f"{name}: looks like JSON but does not parse ({exc}); give one "
                               "value a line or valid JSON") from None
        except RecursionError:
            raise MeditodError(f"{name}: JSON nested too deeply to read; give one value a line "
                               "or a JSON list") from None
        values: set[str] = set()
        stack = [data]
        while stack:
            node = stack.pop()
            if isinstance(node, str):
                values.add(node.strip())
            elif isinstance(node, list):
                stack.extend(node)
            elif isinstance(node, dict):
                named = [node[k] for k in ("code", "display_name", "value") if k in node]
                stack.extend(named if named else node.values())
    else:
        values = {line.strip() for line in text.splitlines()
                  if line.strip() and not line.lstrip().startswith("#")}
    values.discard("")
    if not all(_is_text(value) for value in values):
        raise MeditodError(f"{name}: holds a lone surrogate (\\ud800-\\udfff), not text: "
                           "remove it and load the file again")
    if not values:
        raise MeditodError(f"{name}: no values found (one value a line, or a JSON list)")
    return values


def known_values(dialogues: dict) -> dict:
    """The values already used in a release, per patient (base slot, attribute) and per doctor
    (action slot, `value` or check type): what the questionnaire autocompletes."""
    patient: dict[str, dict[str, set]] = {}
    doctor: dict[str, dict[str, set]] = {}
    for dialogue in dialogues.values():
        for utt in dialogue.get("utterances", []) if isinstance(dialogue, dict) else []:
            for item in (utt.get(PATIENT_LABELS) or []) if isinstance(utt, dict) else []:
                for key, entries in ((item.get("slots") or {}) if isinstance(item, dict)
                                     else {}).items():
                    parsed = cmas.split_slot_key(key)
                    for entry in entries if parsed and isinstance(entries, list) else []:
                        for attr, value in (entry.items() if isinstance(entry, dict) else ()):
                            _collect(patient, parsed.base, attr, value)
            for act in (utt.get("actions") or []) if isinstance(utt, dict) else []:
                for slot, entries in (act.items() if isinstance(act, dict) else ()):
                    for entry in entries if slot != "action" and isinstance(entries, list) else []:
                        if not isinstance(entry, dict):
                            continue
                        _collect(doctor, slot, "value", entry.get("value"))
                        for check in entry.get("checks") or []:
                            if isinstance(check, dict) and isinstance(check.get("type"), str):
                                _collect(doctor, slot, check["type"], check.get("values"))
    return {side: {slot: {attr: sorted(values) for attr, values in attrs.items()}
                   for slot, attrs in table.items()}
            for side, table in (("patient", patient), ("doctor", doctor))}


def release_canonical(known: dict) -> list[str]:
    """The distinct values of `known_values` in fields the questionnaire marks medical (canonical):
    a patient slot's medical attributes, a doctor's medical slot's `value`."""
    values = {v for base, attrs in known["patient"].items() for attr, vs in attrs.items()
              if cmas.is_medical_attribute(base, attr) for v in vs}
    values |= {v for slot, attrs in known["doctor"].items() if slot in cmas.MEDICAL_ACTION_SLOTS
               for v in attrs.get("value", [])}
    return sorted(values)


def _collect(table: dict, slot: str, attr: str, value) -> None:
    values = value if isinstance(value, list) else [value]
    bucket = table.setdefault(slot, {}).setdefault(attr, set())
    bucket.update(v for v in values if isinstance(v, str) and v)

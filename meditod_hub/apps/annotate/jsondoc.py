"""Rewrite a JSON file so that every value that did not change keeps its bytes.

A release's `dialogs.json` may be `json.dumps(indent=2)` output (the authors' files) or laid out
by hand (the embedded sample keeps each label on one line). Saving a dialogue must leave the rest
of the file as it was, and saving it unchanged must reproduce the file byte for byte, so a save
splices: it walks the old and the new value together and copies the old text of every unchanged
member; only a changed value is serialised afresh, in the layout detected for the file (indent
unit, `": "` or `":"`, escaped or literal non-ASCII) and on one line where the value it replaces
was on one line. The standard library parses; only spans are computed here.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from json.decoder import scanstring
from typing import Any

_DECODER = json.JSONDecoder()
_SPACE = " \t\n\r"


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _SPACE:
        i += 1
    return i


def same(a: Any, b: Any) -> bool:
    """Equal *and* serialised identically (key order, 1 vs 1.0 vs true)."""
    return json.dumps(a, ensure_ascii=False) == json.dumps(b, ensure_ascii=False)


@dataclass
class Member:
    """One member of an object (with its key) or element of an array (key None)."""

    key: str | None
    key_start: int  # == start for array elements
    start: int      # first character of the value
    end: int        # one past its last character
    value: Any


def members(text: str, start: int) -> list[Member]:
    """The members of the object or array that opens at `text[start]`, one level deep."""
    opener = text[start]
    closer = "}" if opener == "{" else "]"
    i = _skip(text, start + 1)
    out: list[Member] = []
    if text[i:i + 1] == closer:
        return out
    while True:
        key, key_start = None, i
        if opener == "{":
            if text[i:i + 1] != '"':
                raise ValueError(f"expected a key at character {i}")
            key, i = scanstring(text, i + 1)
            i = _skip(text, i)
            if text[i:i + 1] != ":":
                raise ValueError(f"expected ':' at character {i}")
            i = _skip(text, i + 1)
        value, end = _DECODER.raw_decode(text, i)
        out.append(Member(key, key_start, i, end, value))
        i = _skip(text, end)
        if text[i:i + 1] == closer:
            return out
        if text[i:i + 1] != ",":
            raise ValueError(f"expected ',' or '{closer}' at character {i}")
        i = _skip(text, i + 1)


@dataclass(frozen=True)
class Layout:
    """How a file lays out what it holds; fresh values are written the same way.

    `standard`: the file is exactly `json.dumps(indent=..)` output, so every fresh value is too;
    otherwise (a hand layout) a value replacing a one-line value stays on one line.
    """

    indent: int | None = 2
    colon: str = ": "
    ensure_ascii: bool = False
    standard: bool = True

    @classmethod
    def detect(cls, text: str, start: int, first: Member | None) -> Layout:
        """From the text before and around the first member (`standard`: that member's value
        is laid out exactly as `json.dumps` would lay it out there)."""
        if first is None:
            return cls()
        gap = text[start + 1:first.key_start]
        indent = len(gap) - gap.rfind("\n") - 1 if "\n" in gap else None
        colon = text[_key_end(text, first):first.start] if first.key is not None else ""
        if not colon or "\n" in colon:
            colon = ": "
        ensure_ascii = text.isascii() and "\\u" in text
        probe = cls(indent, colon, ensure_ascii, standard=True)
        standard = text[first.start:first.end] == probe.dumps(first.value, 1, one_line=False)
        return cls(indent, colon, ensure_ascii, standard)

    def dumps(self, value: Any, depth: int, one_line: bool) -> str:
        """`value` as it would sit at nesting `depth` (the top-level value has depth 0)."""
        if self.indent is None or (one_line and not self.standard):
            comma = ", " if self.colon.endswith(" ") else ","
            return json.dumps(value, ensure_ascii=self.ensure_ascii, separators=(comma, self.colon))
        text = json.dumps(value, indent=self.indent, ensure_ascii=self.ensure_ascii,
                          separators=(",", self.colon))
        return text.replace("\n", "\n" + " " * (self.indent * depth))


def rewrite(text: str, start: int, end: int, old: Any, new: Any, depth: int,
            layout: Layout) -> str:
    """The text of `new`, given that `text[start:end]` holds `old` at nesting `depth`."""
    raw = text[start:end]
    if same(old, new):
        return raw
    container = (isinstance(old, dict) and isinstance(new, dict)) or \
                (isinstance(old, list) and isinstance(new, list))
    if not container or not old:
        return layout.dumps(new, depth, one_line="\n" not in raw)
    parts = members(text, start)
    old_keys = [m.key for m in parts] if isinstance(old, dict) else None
    new_items = list(new.items()) if isinstance(new, dict) else [(None, v) for v in new]
    if old_keys is not None and (len(set(old_keys)) != len(old_keys)
                                 or not _prefix_related(old_keys, [k for k, _ in new_items])):
        return layout.dumps(new, depth, one_line="\n" not in raw)
    kept = min(len(parts), len(new_items))
    if kept == 0:
        return layout.dumps(new, depth, one_line="\n" not in raw)
    out = [text[start:parts[0].start]]
    for i in range(kept):
        member = parts[i]
        out.append(rewrite(text, member.start, member.end, member.value, new_items[i][1],
                           depth + 1, layout))
        if i + 1 < kept:
            out.append(text[member.end:parts[i + 1].start])
    # appended members copy the separator and the one-line-or-not of the members before them
    if len(parts) > 1:
        separator = text[parts[0].end:parts[1].key_start]
    else:
        lead = text[start + 1:parts[0].key_start]
        separator = "," + lead if "\n" in lead else ("," if layout.indent is None else ", ")
    colon = text[_key_end(text, parts[0]):parts[0].start] if old_keys is not None else ""
    last = text[parts[-1].start:parts[-1].end]
    for key, value in new_items[kept:]:
        name = json.dumps(key, ensure_ascii=layout.ensure_ascii) if key is not None else ""
        out.append(separator + name + colon + layout.dumps(value, depth + 1, "\n" not in last))
    out.append(text[parts[len(parts) - 1].end:end])
    return "".join(out)


def _prefix_related(a: list, b: list) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def _key_end(text: str, member: Member) -> int:
    """One past the closing quote of a member's key."""
    _, end = scanstring(text, member.key_start + 1)
    return end


class JsonDocument:
    """A JSON object file held as text; `set` changes one top-level member in place.

    Members are re-laid against the text they had when the file was read, so an edit that is
    later undone gives back the file's own bytes.
    """

    def __init__(self, text: str):
        self.text = text
        self._start = _skip(text, 0)
        if text[self._start:self._start + 1] != "{":
            raise ValueError("expected a JSON object at the top level")
        found = members(text, self._start)  # one parse gives the values and their spans
        close = _skip(text, found[-1].end) if found else text.index("}", self._start)
        if _skip(text, close + 1) != len(text):
            raise ValueError(f"unexpected text after the object at character {close + 1}")
        self.value = {m.key: m.value for m in found}
        self.layout = Layout.detect(text, self._start, found[0] if found else None)
        self._spans = {m.key: (m.start, m.end) for m in found}
        self._origin = {k: text[s:e] for k, (s, e) in self._spans.items()}
        # what goes before an appended member: the file's own separator and colon
        if len(found) > 1:
            self._separator = text[found[0].end:found[1].key_start]
        elif found:
            lead = text[self._start + 1:found[0].key_start]
            self._separator = "," + lead if "\n" in lead else ", "
        self._colon = text[_key_end(text, found[0]):found[0].start] if found else ": "

    def set(self, key: str, value: Any) -> bool:
        """Set member `key` (appended when new) to a copy of `value`; False when nothing changed."""
        if key in self.value and same(self.value[key], value):
            return False
        value = copy.deepcopy(value)
        if key in self._spans:
            start, end = self._spans[key]
            raw = self._origin[key]
            fresh = rewrite(raw, 0, len(raw), json.loads(raw), value, 1, self.layout)
            self.text = self.text[:start] + fresh + self.text[end:]
            shift = len(fresh) - (end - start)
            self._spans = {k: (s + shift, e + shift) if s > start else (s, e)
                           for k, (s, e) in self._spans.items()}
            self._spans[key] = (start, start + len(fresh))
            self.value[key] = value
        elif self._spans:
            last = max(self._spans.values(), key=lambda span: span[1])
            one_line = "\n" not in self.text[last[0]:last[1]]
            name = json.dumps(key, ensure_ascii=self.layout.ensure_ascii)
            head = self._separator + name + self._colon
            fresh = self.layout.dumps(value, 1, one_line)
            self.text = self.text[:last[1]] + head + fresh + self.text[last[1]:]
            self._spans[key] = (last[1] + len(head), last[1] + len(head) + len(fresh))
            self._origin[key] = fresh
            self.value[key] = value
        else:  # the first member of an empty object
            close = self.text.index("}", self._start)
            self.value = {key: value}
            self.text = (self.text[:self._start] + self.layout.dumps(self.value, 0, False)
                         + self.text[close + 1:])
            self.__init__(self.text)
        return True


def replace_value(text: str, new: Any) -> str:
    """`text` (one JSON value, e.g. an id-list file) holding `new`, laid out as before."""
    start = _skip(text, 0)
    if start >= len(text):
        return json.dumps(new, ensure_ascii=False) + "\n"
    old, end = _DECODER.raw_decode(text, start)
    first = members(text, start)[:1] if isinstance(old, (dict, list)) else []
    layout = Layout.detect(text, start, first[0] if first else None)
    return text[:start] + rewrite(text, start, end, old, new, 0, layout) + text[end:]

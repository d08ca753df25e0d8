"""A dialogue state and a turn's actions as people read them: terminal lines or an HTML panel.

Each state entry shows its polarity three ways, so none depends on colour alone: a word
(`yes` / `no` / `unknown`), a sign (+ / − / ?) and, in HTML, a coloured badge (a denied entry's
is red and outlined, never struck through: that read as deleted). Medical-test
availability reads as yes/no; plain slots (residence, occupation, travel, basic information)
have no polarity.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from meditod_hub.data.cmas import split_slot_key

# status prefix -> (word, sign, css class)
POLARITY = {"positive": ("yes", "+", "yes"), "avail": ("yes", "+", "yes"),
            "negative": ("no", "−", "no"), "unavail": ("no", "−", "no"),
            "unknown": ("unknown", "?", "unknown"), None: ("", "·", "plain")}
EMPTY_STATE = "nothing recorded yet"


@dataclass(frozen=True)
class Entry:
    status: str | None   # the slot key's prefix
    slot: str            # base slot, e.g. symptom
    value: str | None    # head value
    attributes: tuple[tuple[str, str], ...]


def entries(state: dict) -> list[Entry]:
    out = []
    for key, items in state.items():
        parsed = split_slot_key(key)
        status, base = (parsed.status, parsed.base) if parsed else (None, key)
        for item in items:
            attrs = tuple((name, ", ".join(v) if isinstance(v, list) else str(v))
                          for name, v in item.items() if name != "value")
            out.append(Entry(status, base, item.get("value"), attrs))
    return out


def _name(slot: str) -> str:
    return slot.replace("_", " ")


def state_lines(state: dict) -> list[str]:
    """One line per entry: `+ symptom: cough (yes) — onset: a week ago; severity: mild`."""
    lines = []
    for e in entries(state):
        word, sign, _ = POLARITY.get(e.status, POLARITY[None])
        head = f"{sign} {_name(e.slot)}: {e.value or '-'}" + (f" ({word})" if word else "")
        details = "; ".join(f"{_name(k)}: {v}" for k, v in e.attributes)
        lines.append(head + (f" — {details}" if details else ""))
    return lines or [EMPTY_STATE]


def actions_line(actions: list) -> str:
    """`inquire symptom: fever; chit-chat` (or `none`)."""
    parts = []
    for action in actions:
        words = [str(action.get("action", "?"))]
        for slot, items in action.items():
            if slot != "action" and isinstance(items, list):
                values = ", ".join(str(i["value"]) for i in items
                                   if isinstance(i, dict) and "value" in i)
                words.append(f"{_name(slot)}: {values or '-'}")
        parts.append(" ".join(words))
    return "; ".join(parts) or "none"


STATE_CSS = """
.meditod-state { font-size: 0.95em; }
.meditod-state ul { list-style: none; padding-left: 0; margin: 0; }
.meditod-state li { margin: 0.25em 0; }
.meditod-state .badge { display: inline-block; min-width: 5.5em; text-align: center;
  border-radius: 0.6em; padding: 0 0.4em; margin-right: 0.4em; font-weight: 600; }
.meditod-state .yes { background: #d7f5dd; color: #14532d; }
.meditod-state .no { background: #fde2e1; color: #7f1d1d; box-shadow: inset 0 0 0 1.5px #b91c1c; }
.meditod-state .unknown { background: #fef3c7; color: #78350f; font-style: italic; }
.meditod-state .plain { background: #e5e7eb; color: #1f2937; }
.meditod-state .attrs { color: #4b5563; margin-left: 6.3em; font-size: 0.9em; }
"""


def state_html(state: dict) -> str:
    """The state panel: a list of entries with a polarity badge (`data-polarity` for tests)."""
    items = []
    for e in entries(state):
        word, sign, css = POLARITY.get(e.status, POLARITY[None])
        badge = f'<span class="badge {css}">{escape(sign)} {escape(word or _name(e.slot))}</span>'
        attrs = "; ".join(f"{escape(_name(k))}: {escape(v)}" for k, v in e.attributes)
        items.append(f'<li data-polarity="{css}">{badge}<b>{escape(_name(e.slot))}</b>: '
                     f"{escape(e.value or '-')}"
                     + (f'<div class="attrs">{attrs}</div>' if attrs else "") + "</li>")
    body = f"<ul>{''.join(items)}</ul>" if items else f"<p><i>{EMPTY_STATE}</i></p>"
    return f'<div class="meditod-state" data-entries="{len(items)}">{body}</div>'

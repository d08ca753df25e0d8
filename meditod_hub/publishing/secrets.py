"""No key leaves the machine: the one scan every upload, every printed card and every written card
goes through (`refuse_secrets`).

The detectors are detect-secrets' (Yelp's maintained scanner: AWS, GitHub, Slack, Stripe, JWT,
private keys, high-entropy strings, ...), plus what only this kit knows: the user's own Hub
token, the values of the key variables set in the environment (and their base64, hex and
url-encodings), and the few key shapes detect-secrets lacks (`KEY_SHAPES`).

A key is looked for as it would be read, not only as it is written: text is normalised (NFKC)
and stripped of invisible characters (a token split by U+200B is still a token), JSON, YAML and
Python escapes and HTML entities are decoded, YAML's folded lines joined, base64 blobs decoded and
looked into again (twice at most); a safetensors file's header (its __metadata__), a PNG's text
chunks (zTXt decompressed), a Parquet file's strings and metadata and any other binary file's
printable runs are read as text. A find names the file and the kind of key (its detector), never
the key.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import html
import io
import json
import os
import re
import struct
import unicodedata
import zlib
from collections.abc import Iterable, Iterator
from fnmatch import fnmatch
from functools import lru_cache
from pathlib import Path
from urllib.parse import quote, unquote

from huggingface_hub import get_token

from meditod_hub.hubclient import HubError

SCAN_BLOCK = 8 << 20  # bytes of a file scanned at a time (weights can be gigabytes)
# Pickles can hold anything, the training arguments' token included (training_args.bin).
NEVER_UPLOADED = ("training_args.bin", "*.pkl", "*.pickle", "*.pt", "*.pth")

HF_TOKEN_KIND = "a Hugging Face token (hf_...)"
# The key shapes detect-secrets (1.5) does not know, and only those: Hugging Face tokens; OpenAI
# keys as they are now (its OpenAI detector wants the legacy T3BlbkFJ marker, which sk-proj-...
# keys lack); GitHub's fine-grained tokens (its GitHub detector knows the gh[pousr]_ ones only);
# Google API keys. An sk- key needs a digit in its body, so a hyphenated word is no key.
KEY_SHAPES = {
    HF_TOKEN_KIND: r"(?<![A-Za-z0-9])hf_[A-Za-z0-9]{30,}",
    "an OpenAI-style API key (sk-...)": r"(?<![A-Za-z0-9])sk-(?=[A-Za-z0-9_-]*[0-9])"
                                        r"[A-Za-z0-9_-]{20,}",
    "a GitHub fine-grained token (github_pat_...)": r"(?<![A-Za-z0-9])github_pat_[A-Za-z0-9_]{30,}",
    "a Google API key (AIza...)": r"(?<![A-Za-z0-9])AIza[0-9A-Za-z_-]{35}",
}
_KEY_PATTERNS = {kind: re.compile(shape) for kind, shape in KEY_SHAPES.items()}

# Environment variables whose values are keys, by name: a part of the name (between _) ending in
# one of these words (HF_TOKEN, OPENAI_API_KEY, APIKEY, GH_PAT, AWS_SECRET_ACCESS_KEY,
# BASIC_AUTH), not TOKENIZERS_PARALLELISM nor GIT_AUTHOR_EMAIL; not one naming a place or another
# variable (..._DIR, ..._URL, API_KEY_ENV). A value shorter than MIN_KEY_LENGTH is no key, nor is
# a path or an address.
KEY_VARIABLE = re.compile(r"(?:^|_)[A-Z0-9]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|"
                          r"CREDENTIAL|CREDENTIALS|PAT|AUTH)S?(?:_|$)", re.IGNORECASE)
NOT_A_KEY = ("_DIR", "_DIRS", "_PATH", "_FILE", "_SOCK", "_URL", "_URI", "_HOST", "_PORT",
             "_ENDPOINT", "_ENV", "_NAME", "_USER", "_USERNAME", "_EMAIL", "_TYPE", "_MODE")
MIN_KEY_LENGTH = 12

# detect-secrets' detectors this kit leaves out: a public IP address is no credential (a version
# number "2.13.0.1" or a served endpoint's address in a run's records is one).
LEFT_OUT = ("IPPublicDetector",)
# detect-secrets' context-free detectors (high entropy, keyword) need these filters, and the
# policy below, to stay quiet on what the kit itself writes; a detector of one key shape does not.
KEYWORD, HEX = ("Secret Keyword",), ("Hex High Entropy String",)
GENERIC = ("Base64 High Entropy String", *HEX, *KEYWORD)
# The high-entropy detectors look only at quoted strings (detect-secrets' default, not its eager
# ad hoc search, which flags any long word). A hex string as long as a SHA-1 or SHA-256 digest
# (a git blob or commit id, an LFS oid, the sha256 digests of the kit's build manifest and upload
# record) is a digest, not a key; a hex key of another length is still refused, and a user's hex
# key set in the environment is found by its value whatever its length.
DIGEST_LENGTHS = (40, 64)
# The generic detectors read texts up to this size (configs, cards, recipes, run records, headers,
# metadata, text chunks); a larger one (a tokenizer's vocabulary, a block of predictions or of a
# Parquet file's strings) is read by the shape detectors, the kit's shapes and the environment's
# values only: there a keyword or a long quoted word is a vocabulary's, and reading it for them
# takes minutes.
GENERIC_LIMIT = 1 << 20
# A quoted string of names, each part (between / - _ .) at most one run of digits between letters
# (HuggingFaceTB/SmolLM2-135M-Instruct, meta-llama/Meta-Llama-3-8B-Instruct, a path, a file
# name) is a repo id, a path or a name, not a base64 key: a key's parts mix letters and digits
# throughout.
NAME = re.compile(r"(?:[A-Za-z]*+[0-9]*+[A-Za-z]*+[/_.-]++)++[A-Za-z]*+[0-9]*+[A-Za-z]*+")
# A keyword's "secret" that is an environment variable's name is a reference to it
# (`api_key_env: OPENAI_API_KEY`), not a key.
VARIABLE_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_SCAN_NAME = "upload"  # the file name detect-secrets is given: no type, so quotes are required

# Invisible characters (`_invisible`) as UTF-8 inside binary files, where text is read as
# printable runs: removed before.
_INVISIBLE_BYTES = re.compile(b"|".join(re.escape(c.encode()) for c in (
    "\u00ad", "\u034f", "\u180e", "\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u2060",
    "\u2061", "\u2062", "\u2063", "\u2064", "\ufeff")))
# \uXXXX (JSON, Python), \UXXXXXXXX (YAML, Python), \xXX; a JSON surrogate pair is one character.
_ESCAPE = re.compile(r"\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})"
                     r"|\\u([0-9a-fA-F]{4})|\\U([0-9a-fA-F]{8})|\\x([0-9a-fA-F]{2})"
                     r"|\\([ \"'/\\nrt])")  # and YAML's, JSON's one-character escapes
_ONE_CHARACTER = {"n": "\n", "r": "\r", "t": "\t"}
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_ENCODED = re.compile(r"[\\%&]")
_ENTITY = re.compile(r"&(?:#[0-9]+|#[xX][0-9A-Fa-f]+|[A-Za-z]+);")
# YAML folds a long double-quoted scalar (as PyYAML writes it) with escaped line breaks: a `\` at
# the end of a line, the next one indented, is nothing once read. Lines are never joined
# otherwise: "A\n PARTICULAR" is no key.
_FOLDED = re.compile(r"\\\r?\n[ \t]*")
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
BASE64_DEPTH = 2  # a blob decoded inside a decoded blob, no deeper
_PRINTABLE_RUN = re.compile(rb"[\t\n\r\x20-\x7e]{12,}")  # of a binary file
_LONG_LINE = 1000  # a longer line is cut at JSON members for detect-secrets' line filters
_MEMBER = re.compile(r'(?<=[,{\[])\s*(?=")')
_CHUNK = 1 << 16  # characters handed to detect-secrets at once (lines only where it finds one)
_PNG = b"\x89PNG\r\n\x1a\n"
_PNG_TEXT = (b"tEXt", b"zTXt", b"iTXt")
MAX_INFLATED = 64 << 20  # bytes a zTXt chunk may inflate to before the rest is left unread
MAX_HEADER = 100 << 20  # a safetensors header's largest size (the format's own limit)


def refuse_secrets(items: dict[str, str | bytes | Path], action: str) -> None:
    """Stop before `items` (repo path or shown name -> text, bytes or local file) are uploaded,
    printed or written for others: no pickle, and no key in any file, binary ones too (a
    safetensors header, a PNG's text chunk, a Parquet file's utterance), however written (escaped,
    split by invisible characters, folded, base64): none that detect-secrets' detectors or the
    kit's own shapes find, not the user's Hub token, not the value of a key variable set in the
    environment. The one scan every upload and every printed card goes through; the message names
    the file and the kind of key, never the key."""
    pickles = sorted(name for name in items
                     if any(fnmatch(Path(name).name, p) for p in NEVER_UPLOADED))
    if pickles:
        raise HubError(f"{action}: refusing to share {', '.join(pickles)} (a pickle can hold the "
                       "token and runs code when loaded)")
    secrets = secrets_to_find()
    leaking = [(name, kinds) for name, item in sorted(items.items())
               if (kinds := keys_in(item, secrets))]
    if leaking:
        shown = ", ".join(f"{name} contains {' and '.join(kinds[:3])}"
                          for name, kinds in leaking[:5])
        raise HubError(f"{action}: refusing: {shown}; remove it (e.g. from the run's recipe.yaml "
                       "or config.json) and rerun")


def secrets_to_find(environ: dict[str, str] | None = None) -> dict[str, tuple[str, ...]]:
    """Kind -> the texts to look for besides the shapes: the user's Hub token and every key
    variable's value in the environment (its kind names the variable, never the value), each as
    it is and base64-, hex- and url-encoded."""
    environ = os.environ if environ is None else environ
    found: dict[str, tuple[str, ...]] = {}
    own = get_token()
    if own and own.strip():
        found[HF_TOKEN_KIND] = _encodings(own.strip())
    for variable, value in sorted(environ.items()):
        value = value.strip()
        if is_key_variable(variable) and len(value) >= MIN_KEY_LENGTH \
                and not value.startswith(("/", "./", "~", "http://", "https://")) \
                and value not in {v for values in found.values() for v in values}:
            found[f"the value of ${variable}"] = _encodings(value)
    return found


def is_key_variable(name: str) -> bool:
    """Whether an environment variable's name says its value is a key."""
    return bool(KEY_VARIABLE.search(name)) and not name.upper().endswith(NOT_A_KEY)


def _encodings(value: str) -> tuple[str, ...]:
    """`value` and its base64 (standard and url-safe, its whole 3-byte groups, so a longer blob
    holding it matches too), hex and url-encoded forms."""
    raw = value.encode("utf-8", "surrogatepass")
    whole = raw[:len(raw) // 3 * 3]
    forms = [value, base64.b64encode(whole).decode(), base64.urlsafe_b64encode(whole).decode(),
             raw.hex(), raw.hex().upper(), quote(value, safe="")]
    return tuple(dict.fromkeys(f for f in forms if len(f) >= MIN_KEY_LENGTH))


def keys_in(item: str | bytes | Path, secrets: dict[str, tuple[str, ...]] | None = None
            ) -> list[str]:
    """The kinds of key text, bytes or a file holds (a detector's, a shape's, one of `secrets`'),
    the most specific first; [] if none. A file is read a block at a time, each block with the end
    of the one before, so a key across two blocks is found too."""
    secrets = secrets_to_find() if secrets is None else secrets
    if isinstance(item, str):
        return _Scan(secrets).texts([item])
    if isinstance(item, Path):
        if not item.is_file():
            return []
        with item.open("rb") as f:
            return _keys_in_file(f, item.name, secrets)
    return _keys_in_file(io.BytesIO(item), "", secrets)


# (the bytes' sha256, the file's name, what was looked for, the block size) -> the kinds found:
# an upload's plan and the upload scan the same files, and a Space's upload holds the kit's own
# files, unchanged from one upload to the next; a file is scanned again only when its bytes or
# the keys to look for change.
_SCANNED: dict[tuple[bytes, str, tuple, int], list[str]] = {}
_SCANNED_MAX = 4096


def _keys_in_file(f, name: str, secrets: dict[str, tuple[str, ...]]) -> list[str]:
    """`_scanned_file`'s kinds, from `_SCANNED` when these bytes were scanned for these keys;
    a result is kept only when the bytes did not change while they were scanned."""
    before = hashlib.file_digest(f, "sha256").digest()
    f.seek(0)
    memo = (before, name, tuple(sorted(secrets.items())), SCAN_BLOCK)
    if memo in _SCANNED:
        return list(_SCANNED[memo])
    scanned = hashlib.sha256()
    kinds = _scanned_file(f, name, secrets, scanned)
    if scanned.digest() == before:
        if len(_SCANNED) >= _SCANNED_MAX:
            _SCANNED.pop(next(iter(_SCANNED)))
        _SCANNED[memo] = list(kinds)
    return kinds


def _scanned_file(f, name: str, secrets: dict[str, tuple[str, ...]], digest) -> list[str]:
    """The kinds of key a file holds (its binary parts read as a reader would, then every
    block), `digest` updated with every byte of the block pass."""
    scan = _Scan(secrets)
    head = f.read(8)
    texts: list[str] = []
    if head == _PNG:
        texts += _png_texts(f)
    elif len(head) == 8:
        texts += _safetensors_header(f, struct.unpack("<Q", head)[0])
    if name.endswith(".parquet") or (head[:4] == b"PAR1"):
        texts += _parquet_texts(f)
    found = scan.texts(texts)
    f.seek(0)
    overlap = max([4096, *(6 * len(v) for values in secrets.values() for v in values)])
    tail = b""
    for block in iter(lambda: f.read(SCAN_BLOCK), b""):
        digest.update(block)
        data = tail + block
        found += [kind for kind in scan.texts([_as_text(data)]) if kind not in found]
        tail = data[-overlap:]
    return _ranked(found)


def _as_text(data: bytes) -> str:
    """A block as text: UTF-8 text as it is (a character cut at the block's end left out), any
    other bytes as their printable runs, one a line (invisible characters between them removed)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        if error.start >= len(data) - 3 and b"\x00" not in data:
            return data[:error.start].decode("utf-8")
    data = _INVISIBLE_BYTES.sub(b"", data)
    return "\n".join(run.decode("ascii") for run in _PRINTABLE_RUN.findall(data))


def _safetensors_header(f, size: int) -> list[str]:
    """A safetensors file's JSON header, and its __metadata__'s values decoded (a string split
    by invisible characters is one again); [] if the file is no safetensors file."""
    if not 2 <= size <= MAX_HEADER:
        return []
    raw = f.read(size)
    if len(raw) != size or not raw.lstrip().startswith(b"{"):
        return []
    try:
        header = json.loads(raw)
    except ValueError:
        return []
    metadata = header.get("__metadata__") if isinstance(header, dict) else None
    texts = [raw.decode("utf-8", "replace")]
    if isinstance(metadata, dict):
        texts += [f"{key}: {value}" for key, value in metadata.items()]
        texts.append(json.dumps(metadata, ensure_ascii=False))
    return texts


def _png_texts(f) -> list[str]:
    """The text of a PNG's tEXt, zTXt (inflated) and iTXt chunks, keyword and text."""
    texts = []
    while len(head := f.read(8)) == 8:
        length, kind = struct.unpack(">I4s", head)
        if kind == b"IEND":
            break
        if kind not in _PNG_TEXT:
            f.seek(length + 4, io.SEEK_CUR)
            continue
        data = f.read(length)
        f.read(4)
        keyword, _, rest = data.partition(b"\x00")
        try:
            if kind == b"tEXt":
                text = rest.decode("latin-1")
            elif kind == b"zTXt":
                text = _inflate(rest[1:]).decode("latin-1")
            else:
                compressed, rest = rest[:1] == b"\x01", rest[2:]
                _language, _, rest = rest.partition(b"\x00")
                translated, _, rest = rest.partition(b"\x00")
                text = translated.decode("utf-8", "replace") + "\n" + (
                    _inflate(rest) if compressed else rest).decode("utf-8", "replace")
        except zlib.error:
            text = rest.decode("latin-1")
        texts.append(keyword.decode("latin-1") + "\n" + text)
    return texts


def _inflate(data: bytes) -> bytes:
    return zlib.decompressobj().decompress(data, MAX_INFLATED)


def _parquet_texts(f) -> list[str]:
    """A Parquet file's strings (its columns' values, nested ones too, decompressed) and its
    metadata; those read before a damage, [] if it is no Parquet file."""
    # deferred: pyarrow is slow to import; only a Parquet file needs it
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    def strings(array) -> Iterator[str]:
        kind = array.type
        if pa.types.is_dictionary(kind):
            yield from strings(array.dictionary)
        elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
            if len(array):  # one text, a value a line, joined by Arrow
                values = array.cast(pa.large_string()).fill_null("")
                one = pa.LargeListArray.from_arrays(pa.array([0, len(values)], pa.int64()), values)
                yield pc.binary_join(one, pa.scalar("\n", pa.large_string()))[0].as_py()
        elif pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
            yield _as_text(b"\n".join(value for value in array.to_pylist() if value))
        elif pa.types.is_struct(kind):
            for i in range(kind.num_fields):
                yield from strings(array.field(i))
        elif pa.types.is_list(kind) or pa.types.is_large_list(kind) \
                or pa.types.is_fixed_size_list(kind):
            yield from strings(array.flatten())
        elif pa.types.is_map(kind):
            yield from strings(array.keys)
            yield from strings(array.items)

    texts: list[str] = []
    try:
        f.seek(0)
        parquet = pq.ParquetFile(f)
        texts += [f"{key.decode('utf-8', 'replace')}: {value.decode('utf-8', 'replace')}"
                  for key, value in (parquet.schema_arrow.metadata or {}).items()]
        for group in range(parquet.num_row_groups):
            for column in parquet.read_row_group(group).columns:
                for chunk in column.chunks:
                    texts += strings(chunk)
    except (pa.ArrowException, OSError, ValueError):
        pass  # no Parquet file, or a damaged one: its bytes are read as any file's
    return texts


def _ranked(kinds: Iterable[str]) -> list[str]:
    """The specific kinds (a key shape, a value) first; the generic ones only without them."""
    kinds = list(dict.fromkeys(kinds))
    specific = [k for k in kinds if k.split(" ", 1)[-1] not in GENERIC]
    return specific or kinds


@lru_cache(maxsize=1)
def detectors() -> tuple:
    """detect-secrets' detectors, every one it ships except `LEFT_OUT`, with their default
    settings; never one that verifies a key over the network."""
    # deferred: detect-secrets loads its plugin modules (0.3 s); only a scan needs them
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.settings import get_plugins, transient_settings

    names = sorted(cls.__name__ for cls in get_mapping_from_secret_type_to_class().values()
                   if cls.__name__ not in LEFT_OUT)
    with transient_settings({"plugins_used": [{"name": name} for name in names],
                             "filters_used": []}):
        plugins = tuple(get_plugins())
    # the detectors of one key shape first, the generic ones (entropy, keyword) last
    return tuple(sorted(plugins, key=lambda p: (p.secret_type in GENERIC, p.secret_type)))


def detector_kinds() -> list[str]:
    """What a find of each detect-secrets detector in use is called in a refusal."""
    return [_article(p.secret_type) for p in detectors()]


def _article(kind: str) -> str:
    """"a Slack Token", "an AWS Access Key"; "NPM tokens", "Cloudant Credentials"."""
    if kind.endswith("s"):
        return kind
    return f"{'an' if kind[0] in 'AEIOU' else 'a'} {kind}"


class _Scan:
    """One file's scan: its texts, each read every way a key can be written in it."""

    def __init__(self, secrets: dict[str, tuple[str, ...]]):
        self.secrets = secrets

    def texts(self, texts: Iterable[str]) -> list[str]:
        views = [view for text in texts if text for view in self._views(text, 0)]
        found = [kind for text in views for kind in self._specific(text)]
        found += [kind for text in views for kind in self._detected(text, False)]
        if not found:
            found = [kind for text in views if len(text) <= GENERIC_LIMIT
                     for kind in self._detected(text, True)]
        return _ranked(found)

    def _views(self, text: str, depth: int) -> list[str]:
        """`text` as a reader sees it: normalised, its folded lines joined, its escapes,
        url-encoding and HTML entities decoded, and what its base64 blobs decode to."""
        seen = _readable(text)
        out = [seen]
        folded = _FOLDED.sub("", seen)
        if folded != seen:
            out.append(folded)
        # the lines an escape, a url-encoding or an entity changes, decoded (the others are read
        # once, as they are)
        decoded = "\n".join(again for line in folded.splitlines() if _ENCODED.search(line)
                            and (again := _decoded(line)) != line)
        if decoded:
            out.append(decoded)
        if depth < BASE64_DEPTH:
            for view in (seen, decoded):
                for blob in _BASE64.findall(view):
                    if (plain := _base64_text(blob)) is not None:
                        out += self._views(plain, depth + 1)
        return out

    def _specific(self, text: str) -> Iterator[str]:
        """The kinds of the user's values and the kit's own shapes found in `text`."""
        for kind, values in self.secrets.items():
            if any(value in text for value in values):
                yield kind
        for kind, pattern in _KEY_PATTERNS.items():
            if pattern.search(text):
                yield kind

    def _detected(self, text: str, generic: bool) -> Iterator[str]:
        """The kinds detect-secrets' detectors find in `text` (the shape detectors', or the
        generic ones', each find of those confirmed line by line after the policy above)."""
        plugins = [p for p in detectors() if (p.secret_type in GENERIC) == generic]
        for chunk in _chunks(text):
            for plugin in plugins:
                if not plugin.analyze_line(filename=_SCAN_NAME, line=chunk):
                    continue
                if not generic or any(
                        _kept(plugin, found.secret_value or "", line) for line in _lines(chunk)
                        for found in plugin.analyze_line(filename=_SCAN_NAME, line=line)):
                    yield _article(plugin.secret_type)


def _chunks(text: str) -> Iterator[str]:
    """`text` in pieces of whole lines, about _CHUNK characters each: detect-secrets reads a
    piece at once, and its lines only where it finds something."""
    start = 0
    while start < len(text):
        end = text.find("\n", start + _CHUNK)
        if end < 0:
            yield text[start:]
            return
        yield text[start:end]
        start = end + 1


def _kept(plugin, secret: str, line: str) -> bool:
    """Whether a generic detector's find stands: detect-secrets' own heuristic filters, then the
    kit's policy (digests, variable names)."""
    # deferred: detect-secrets loads its plugin modules (0.3 s); only a scan needs them
    from detect_secrets.filters import heuristic as h

    if h.is_sequential_string(secret) or h.is_potential_uuid(secret) \
            or h.is_likely_id_string(secret, line, plugin) or h.is_templated_secret(secret) \
            or h.is_prefixed_with_dollar_sign(secret) or h.is_not_alphanumeric_string(secret):
        return False
    kind = plugin.secret_type
    if kind in KEYWORD:
        return not (h.is_indirect_reference(line) or VARIABLE_NAME.fullmatch(secret))
    if kind in HEX:
        return len(secret) not in DIGEST_LENGTHS
    return not NAME.fullmatch(secret)


def _lines(text: str) -> Iterator[str]:
    """`text`'s lines, a long one cut at its JSON members (detect-secrets' filters read the line
    before a find: a whole minified file is no line)."""
    for line in text.splitlines():
        if len(line) > _LONG_LINE:
            yield from _MEMBER.split(line)
        else:
            yield line


@lru_cache(maxsize=1)
def _invisible() -> re.Pattern:
    """Invisible characters: Unicode's format characters (category Cf: U+200B, U+2060, the soft
    hyphen, U+FEFF, ...) and the other zero-width or blank ones (the combining grapheme joiner,
    variation selectors, Hangul fillers), as ranges (a class of single characters is slow)."""
    ranges: list[list[int]] = []
    for c in range(0x80, 0x110000):
        if unicodedata.category(chr(c)) == "Cf" or c in _BLANK \
                or 0xFE00 <= c <= 0xFE0F or 0xE0100 <= c <= 0xE01EF:
            if ranges and ranges[-1][1] == c - 1:
                ranges[-1][1] = c
            else:
                ranges.append([c, c])
    return re.compile("[" + "".join(re.escape(chr(a)) + (f"-{re.escape(chr(b))}" if b > a else "")
                                    for a, b in ranges) + "]+")


_BLANK = (0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x3164, 0xFFA0)


def _readable(text: str) -> str:
    """NFKC-normalised, invisible characters removed."""
    if text.isascii():
        return text
    invisible = _invisible()
    return invisible.sub("", unicodedata.normalize("NFKC", invisible.sub("", text)))


def _decoded(text: str) -> str:
    """`text` with its escapes decoded, and those they hide (json.dumps of an escaped string
    escapes it again): three times at most."""
    for _ in range(3):
        again = _readable(_unescaped(text))
        if again == text:
            break
        text = again
    return text


def _unescaped(text: str) -> str:
    """Escapes (\\u0068, \\U00000068, \\x68), url-encoding (%68) and HTML entities decoded."""
    def char(match: re.Match) -> str:
        if match.group(6):
            return _ONE_CHARACTER.get(match.group(6), match.group(6))
        if match.group(1):
            high, low = int(match.group(1), 16), int(match.group(2), 16)
            return chr(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
        code = int(match.group(3) or match.group(4) or match.group(5), 16)
        return chr(code) if code <= 0x10FFFF else match.group(0)

    if "\\" in text:
        text = _ESCAPE.sub(char, text)
    if "%" in text and _PERCENT.search(text):
        text = unquote(text)
    if "&" in text and _ENTITY.search(text):
        text = html.unescape(text)
    return text


def _base64_text(blob: str) -> str | None:
    """What a base64 blob (standard or url-safe, padded or not) decodes to, if that is text."""
    body = blob.rstrip("=")
    if len(body) % 4 == 1:
        body = body[:-1]
    try:
        data = base64.b64decode(body.replace("-", "+").replace("_", "/") + "=" * (-len(body) % 4),
                                validate=True)
        text = data.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    printable = sum(c.isprintable() or c in "\t\n\r" for c in text)
    return text if len(text) >= 8 and printable >= 0.9 * len(text) else None

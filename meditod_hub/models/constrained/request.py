"""A served model's constraint: the grammar as the structured-output fields its server reads.

Apart from the local processor because nothing here compiles or masks: each server kind takes the
grammar (or the fewshot answer's JSON schema) in a field of its own, and OpenAI's answer comes
back wrapped.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from meditod_hub.data.tasks import Task
from meditod_hub.endpoint import AZURE_SUFFIXES, endpoint_host
from meditod_hub.errors import UsageError
from meditod_hub.models.constrained.grammars import grammar, json_schema
from meditod_hub.models.constrained.vocabulary import Vocabulary

SERVER_KINDS = ("vllm", "sglang", "tgi", "llama.cpp", "openai")
OPENAI_WRAPPER = "answer"  # OpenAI's json_schema needs an object at the root


def server_kind_for(base_url: str, given: str | None) -> str:
    """`--server_kind`, or OpenAI's own hosts recognised; any other server must be named (vLLM,
    SGLang, TGI and llama.cpp all answer at the same OpenAI routes)."""
    if given:
        return given
    host = endpoint_host(base_url).split(":")[0]
    if host == "api.openai.com" or host.endswith(AZURE_SUFFIXES):
        return "openai"
    raise UsageError(f"--constrained at {endpoint_host(base_url)} needs --server_kind (one of "
                     f"{', '.join(SERVER_KINDS)}): each server takes the grammar in its own field")


@dataclass(frozen=True)
class ServedConstraint:
    """The grammar of `fmt`'s answer to `task`, as the request fields `server_kind` enforces:

    * vLLM: `structured_outputs.grammar` (the GBNF); SGLang: `ebnf`; llama.cpp: `grammar`;
    * TGI and OpenAI take a JSON schema only, so only the in-context (`fewshot`) answer, which is
      plain JSON: TGI as `response_format` `json_object`, OpenAI as `json_schema` wrapped in an
      object (`OPENAI_WRAPPER`: OpenAI needs an object at the root), unwrapped by `answer`.
    Anything else is a usage error, raised when the constraint is made (before any request).
    """

    server_kind: str
    fmt: str
    task: Task
    vocabulary: Vocabulary | None = None
    fields: dict | None = field(default=None, init=False, compare=False, hash=False)

    def __post_init__(self):
        object.__setattr__(self, "fields", self._fields())

    def _fields(self) -> dict | None:
        if self.server_kind not in SERVER_KINDS:
            raise UsageError(f"unknown --server_kind {self.server_kind!r}: one of "
                             f"{', '.join(SERVER_KINDS)}")
        text = grammar(self.fmt, self.task, self.vocabulary)
        if text is None:
            return None
        if self.server_kind == "vllm":
            return {"structured_outputs": {"grammar": text}}
        if self.server_kind == "sglang":
            return {"ebnf": text}
        if self.server_kind == "llama.cpp":
            return {"grammar": text}
        schema = json_schema(self.task, self.vocabulary) if self.fmt == "fewshot" else None
        if schema is None:
            raise UsageError(f"a {self.server_kind} server takes a JSON schema, not a grammar, and "
                             f"the {self.fmt} format's {self.task.name} answer is not plain JSON: serve "
                             "the model with vLLM, SGLang or llama.cpp for --constrained, or drop "
                             "--constrained")
        if self.server_kind == "tgi":
            return {"response_format": {"type": "json_object", "value": schema}}
        return {"response_format": {"type": "json_schema", "json_schema": {
            "name": f"meditod_{self.task.name}", "schema": {
                "type": "object", "properties": {OPENAI_WRAPPER: schema},
                "required": [OPENAI_WRAPPER], "additionalProperties": False}}}}

    def extra_body(self) -> str | None:
        """The fields as JSON text (part of the answer cache's key)."""
        return None if self.fields is None else json.dumps(self.fields, sort_keys=True)

    def answer(self, text: str) -> str:
        """The answer in the format's own syntax (OpenAI's unwrapped); text that is not the
        wrapper object is passed on as it is, and fails to parse (counted)."""
        if self.server_kind != "openai" or self.fields is None:
            return text
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            return text
        return json.dumps(value[OPENAI_WRAPPER]) \
            if isinstance(value, dict) and OPENAI_WRAPPER in value else text

    def describe(self) -> dict:
        """For run_info.json: the setting and a hash of what was sent (not the grammar itself)."""
        body = self.extra_body()
        return {"constrained": True, "format": self.fmt, "server_kind": self.server_kind,
                "vocabulary_values": None if self.vocabulary is None else len(self.vocabulary),
                "request_fields_sha256": hashlib.sha256(body.encode()).hexdigest() if body else None}

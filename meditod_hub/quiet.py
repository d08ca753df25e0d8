"""Library output the kit silences, each for a stated reason (and nothing else).

* bitsandbytes, when imported on a CPU with AVX512-BF16, tries to fetch a 4-bit matmul kernel
  from the Hub and warns `Failed to load CPU gemm_4bit_forward from kernels-community ...
  pip install kernels` when the optional `kernels` package is missing. The kit quantizes only on
  CUDA (the 8B recipes); on CPU that kernel is never called, so the warning only misleads.
* transformers' per-tensor bars ("Loading weights", "Loading checkpoint shards", "Writing model
  shards") and datasets' bars ("Map", TRL's "Tokenizing ...", "Generating train split") print
  several bars per stage; the kit's own log line says what each stage did. They are switched off
  where the kit loads a model (`models.families.Family.auto_model`) or a Hub dataset
  (`data.dataset.load_split`), and by every command that imports transformers. The trainer's step
  bar, the kit's own `generating` bar and Hub download bars stay.
* Libraries' DeprecationWarning and FutureWarning (torch, transformers, TRL...) name APIs the
  user never called and cannot change: a `meditod` command drops them (`command_warnings_off`),
  unless the user asked for warnings (`python -W`, PYTHONWARNINGS). Tests still see them.
"""

from __future__ import annotations

import logging
import sys
import warnings

BNB_CPU_LOGGER = "bitsandbytes.backends.cpu.ops"
BNB_KERNEL_WARNING = "Failed to load CPU gemm_4bit_forward"


class _CpuKernelWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith(BNB_KERNEL_WARNING)


_FILTER = _CpuKernelWarning()


def install() -> None:
    """The log filters above (cheap: no library is imported). Idempotent."""
    logger = logging.getLogger(BNB_CPU_LOGGER)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)


def model_bars_off() -> None:
    """transformers' weight loading/saving bars, the Hub's download bars kept (see above)."""
    # deferred: a library loads only when a command that uses it silences it, never for -h
    from huggingface_hub.utils import are_progress_bars_disabled, enable_progress_bars
    from transformers.utils import logging as transformers_logging

    downloads_shown = not are_progress_bars_disabled()
    transformers_logging.disable_progress_bar()  # ...which turns the Hub's download bars off too
    if downloads_shown:
        enable_progress_bars()


def data_bars_off() -> None:
    """datasets' map and split-generation bars (see above)."""
    # deferred: a library loads only when a command that uses it silences it, never for -h
    import datasets

    datasets.disable_progress_bars()


def progress_bars_off() -> None:
    """Both of the above: for commands that load models and map datasets."""
    model_bars_off()
    data_bars_off()


def command_warnings_off() -> None:
    """A command's output without libraries' deprecation and future warnings (see above); the
    user's own -W or PYTHONWARNINGS wins."""
    if sys.warnoptions:
        return
    for category in (DeprecationWarning, PendingDeprecationWarning, FutureWarning):
        warnings.filterwarnings("ignore", category=category)

"""Library output the kit silences, each for a stated reason (and nothing else).

* bitsandbytes, when imported on a CPU with AVX512-BF16, tries to fetch a 4-bit matmul kernel
  from the Hub and warns `Failed to load CPU gemm_4bit_forward from kernels-community ...
  pip install kernels` when the optional `kernels` package is missing. The kit quantizes only on
  CUDA (the 8B recipes); on CPU that kernel is never called, so the warning only misleads.
* transformers' per-tensor bars ("Loading weights", "Writing model shards") and datasets' per-map
  bars (TRL's "Tokenizing ...", "Truncating ...") print several bars per stage; the kit's own
  log line says what each stage did. The trainer's step bar and Hub download bars stay.
"""

from __future__ import annotations

import logging

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


def progress_bars_off() -> None:
    """transformers' weight loading/saving bars and datasets' map bars (see above)."""
    import datasets
    from huggingface_hub.utils import are_progress_bars_disabled, enable_progress_bars
    from transformers.utils import logging as transformers_logging

    downloads_shown = not are_progress_bars_disabled()
    transformers_logging.disable_progress_bar()  # ...which turns the Hub's download bars off too
    if downloads_shown:
        enable_progress_bars()
    datasets.disable_progress_bars()

"""The one patch of TRL's private API: on CPU, its fused LM head scores only the labelled
positions (`labelled_positions_only`), as it does on CUDA.

Apart from the trainers so that the kit's only reach into TRL's internals is one module, to
delete whole once TRL compacts off CUDA too.
"""

from __future__ import annotations

from contextlib import contextmanager

import torch
import trl.trainer.utils as trl_utils


@contextmanager
def labelled_positions_only(device: torch.device):
    """On CPU, TRL's fused LM head scores only the positions that carry a label, as it does on CUDA.

    `trl.trainer.utils.add_fused_lm_head` (TRL 1.16) projects only the labelled positions where its
    Triton kernels run (CUDA, XPU) and every position elsewhere, keeping tile shapes fixed for graph
    compilers (Neuron). Eager CPU training compiles nothing, and an NLU example is mostly prompt,
    which carries no label: scoring the labelled positions alone gives the same loss and gradients
    (tests/test_train.py) for 1.42x faster steps of SmolLM2's NLU recipe (bench/bench_cpu_step.py).
    TRL decides through its module's `_use_triton`, patched here for the forward's duration only;
    drop this once TRL compacts off CUDA too.
    """
    if device.type != "cpu" or not hasattr(trl_utils, "_use_triton"):  # a TRL that decides otherwise
        yield
        return
    decides = trl_utils._use_triton
    trl_utils._use_triton = lambda on: on.type == "cpu" or decides(on)
    try:
        yield
    finally:
        trl_utils._use_triton = decides

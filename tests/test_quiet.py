"""Output that sends users the wrong way is silenced at its source, and only that."""

from __future__ import annotations

import logging
import subprocess
import sys
import warnings
from pathlib import Path

import meditod_hub  # noqa: F401  (installs the log filters, as every command does)
from meditod_hub import quiet


def test_bitsandbytes_cpu_kernel_warning_is_dropped_and_its_other_warnings_kept(caplog):
    """(before: every CPU train and few-shot run printed `Failed to load CPU gemm_4bit_forward
    from kernels-community: No module named 'kernels'...`)"""
    logger = logging.getLogger(quiet.BNB_CPU_LOGGER)
    with caplog.at_level(logging.WARNING, logger=quiet.BNB_CPU_LOGGER):
        logger.warning("Failed to load CPU gemm_4bit_forward from kernels-community: %s. Please "
                       "make sure you already `pip install kernels`", "No module named 'kernels'")
        logger.warning("another bitsandbytes warning")
    assert [r.getMessage() for r in caplog.records] == ["another bitsandbytes warning"]


def test_the_filter_is_installed_once():
    quiet.install()
    quiet.install()
    logger = logging.getLogger(quiet.BNB_CPU_LOGGER)
    assert sum(isinstance(f, quiet._CpuKernelWarning) for f in logger.filters) == 1


def test_unsmoothed_bleu_of_no_overlap_is_zero_without_nltks_warning():
    """(before: NLTK's "0 counts of n-gram overlaps" warning, three times per eval-cascade)"""
    from meditod_hub.data.metrics.nlg import bleu

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scores = bleu(["completely different words"], ["nothing in common here at all"])
    assert scores == {"bleu2": 0, "bleu4": 0}
    assert not [w for w in caught if "n-gram overlaps" in str(w.message)]


def _fresh(code: str) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter: launching Gradio and switching library-wide bars are
    process state that other tests of the session must neither see nor set."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=Path(__file__).resolve().parent.parent)


def test_progress_bars_off_keeps_the_hubs_download_bars():
    done = _fresh("from huggingface_hub.utils import are_progress_bars_disabled\n"
                  "from transformers.utils import logging\n"
                  "from meditod_hub import quiet\n"
                  "shown = not are_progress_bars_disabled()\n"
                  "quiet.progress_bars_off()\n"
                  "assert not logging.is_progress_bar_enabled()\n"
                  "assert (not are_progress_bars_disabled()) == shown\n")
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_app_prints_its_address_and_never_gradios_share_hint():
    """(before: `* To create a public link, set share=True in launch()`)"""
    done = _fresh("import gradio as gr\nfrom meditod_hub.apps import webapp\n"
                  "with gr.Blocks() as demo:\n    gr.Markdown('x')\n"
                  "webapp.launch(demo, server_name='127.0.0.1', prevent_thread_lock=True)\n"
                  "print('URL', demo.local_url, flush=True)\ndemo.close()\n")
    assert done.returncode == 0, done.stderr[-2000:]
    url = done.stdout.split("URL ", 1)[1].split()[0]
    assert "share=True" not in done.stdout + done.stderr
    assert "public link" not in done.stdout + done.stderr
    assert f"the assistant is at {url}" in done.stderr

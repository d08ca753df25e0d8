"""Output that sends users the wrong way is silenced at its source, and only that."""

from __future__ import annotations

import logging
import warnings

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
    from meditod_hub.metrics.nlg import bleu

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scores = bleu(["completely different words"], ["nothing in common here at all"])
    assert scores == {"bleu2": 0, "bleu4": 0}
    assert not [w for w in caught if "n-gram overlaps" in str(w.message)]


def test_progress_bars_off_keeps_the_hubs_download_bars():
    from huggingface_hub.utils import are_progress_bars_disabled
    from transformers.utils import logging as transformers_logging

    shown = not are_progress_bars_disabled()
    quiet.progress_bars_off()
    try:
        assert not transformers_logging.is_progress_bar_enabled()
        assert (not are_progress_bars_disabled()) == shown
    finally:
        transformers_logging.enable_progress_bar()
        if not shown:
            from huggingface_hub.utils import disable_progress_bars

            disable_progress_bars()


def test_the_app_prints_its_address_and_never_gradios_share_hint(capfd):
    """(before: `* To create a public link, set share=True in launch()`)"""
    import gradio as gr

    from meditod_hub import webapp

    with gr.Blocks() as demo:
        gr.Markdown("x")
    webapp.launch(demo, server_name="127.0.0.1", prevent_thread_lock=True)
    try:
        out, err = capfd.readouterr()
        assert "share=True" not in out + err and "public link" not in out + err
        assert f"the assistant is at {demo.local_url}" in err
    finally:
        demo.close()

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


def test_a_command_drops_library_deprecation_warnings_unless_the_user_asks():
    """(before: torch's and transformers' FutureWarning/DeprecationWarning lines in command
    output, naming APIs the user never called)"""
    code = ("import warnings\nfrom meditod_hub import quiet\nquiet.command_warnings_off()\n"
            "warnings.warn('old api', DeprecationWarning)\nwarnings.warn('new default', FutureWarning)\n"
            "warnings.warn('kept', UserWarning)\n")
    done = _fresh(code)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "kept" in done.stderr
    assert "old api" not in done.stderr and "new default" not in done.stderr
    asked = subprocess.run([sys.executable, "-W", "default", "-c", code], capture_output=True,
                           text=True, timeout=300, cwd=Path(__file__).resolve().parent.parent)
    assert "old api" in asked.stderr and "new default" in asked.stderr


def test_loading_a_model_or_a_hub_dataset_turns_their_bars_off():
    """(before: `meditod predict` printed transformers' "Loading weights" bars: only commands
    that imported transformers up front had them off)"""
    done = _fresh("import datasets\nfrom transformers.utils import logging\n"
                  "from meditod_hub.models.families import get_family\n"
                  "logging.enable_progress_bar()\n"
                  "get_family('llama').auto_model()\n"
                  "assert not logging.is_progress_bar_enabled()\n"
                  "from meditod_hub import quiet\n"
                  "datasets.enable_progress_bars()\n"
                  "quiet.data_bars_off()\n"
                  "assert not datasets.is_progress_bar_enabled()\n")
    assert done.returncode == 0, done.stderr[-2000:]


def test_predict_prints_its_own_lines_and_no_library_bars(tiny_runs, embedded_build, tmp_path):
    from helpers import meditod

    done = meditod(None, "predict", "--model_path", str(tiny_runs / "nlu"), "--task", "nlu",
                   "--data", str(embedded_build), "--split", "test", "--out", str(tmp_path))
    assert done.returncode == 0, done.stderr[-2000:]
    output = done.stdout + done.stderr
    assert "predictions" in output
    for noise in ("Loading weights", "Loading checkpoint shards", "Map:", "Generating ",
                  "Warning:"):
        assert noise not in output, noise

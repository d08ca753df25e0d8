"""The leaderboard Space: settings, filters, the upload (private, through `space.upload`) and the
uploaded Space run from its own files in a headless browser against the local Hub server.

Browser: Debian's chromium driven by Playwright, as tests/test_app.py (skips without them outside
CI); every request that would leave 127.0.0.1 is blocked. MEDITOD_LEADERBOARD_SCREENSHOT=<png>
keeps a picture of the sorted POL table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from helpers import (
    CHROMIUM,
    CHROMIUM_ARGS,
    HUB_DATASET,
    RESULTS,
    STRANGER,
    add_foreign_models,
    browser_or_skip,
    card,
    free_port,
    meditod,
    publish_tiny_runs,
    write_run,
)
from hub_server import WRITE_TOKEN, HubServer

from meditod_hub.errors import UsageError
from meditod_hub.evaluation.results_table import Report, Row, paper_rows
from meditod_hub.publishing import leaderboard as L

PROJECT = Path(__file__).resolve().parent.parent


def test_settings_come_from_the_file_then_the_environment(tmp_path):
    (tmp_path / L.SETTINGS_FILE).write_text(json.dumps(
        {"dataset": "org/meditod", "models": ["org/extra"], "refresh_minutes": 10}))
    assert L.settings({}, tmp_path) == L.Settings("org/meditod", ("org/extra",), 10.0)
    env = {"MEDITOD_LEADERBOARD_DATASET": "me/data", "MEDITOD_LEADERBOARD_MODELS": "a/b, c/d",
           "MEDITOD_LEADERBOARD_REFRESH_MINUTES": "0.5"}
    assert L.settings(env, tmp_path) == L.Settings("me/data", ("a/b", "c/d"), 0.5)
    with pytest.raises(UsageError, match="positive"):
        L.settings({"MEDITOD_LEADERBOARD_REFRESH_MINUTES": "never"}, tmp_path)


def test_filters_keep_the_chosen_rows_and_sort_best_first():
    ours = Row("pol", "test", "org/<b>model</b>", "hub", "supervised", True, "chat",
               {"f1": 0.3, "precision_at_k.4": 0.5}, "https://hub/org/model")
    report = Report(paper_rows() + [ours])
    constrained = L.shown_rows(report, "pol", "test", "constrained", L.ANY, "f1")
    assert constrained == [ours]
    in_context = L.shown_rows(report, "pol", "test", "in-context", L.ANY, "f1")
    assert len(in_context) == 7 and in_context[0].system == "GPT-4-Turbo"
    by_pak = L.shown_rows(report, "pol", "test", L.ANY, "chat", "precision_at_k.4")
    assert by_pak[0] is ours and [r.source for r in by_pak[1:]] == ["paper"] * 6
    html = L.table_html("pol", by_pak)
    assert "&lt;b&gt;model&lt;/b&gt;" in html and "<b>model" not in html
    assert html.count("<tr class='paper'>") == 6 and "href='https://hub/org/model'" in html


def test_upload_is_a_private_gradio_space_that_names_the_dataset(hub_server, tmp_path):
    env = hub_server.client_env(tmp_path)
    done = meditod(env, "leaderboard", "--repo", "org/leaderboard", "--dataset", HUB_DATASET,
                   "--refresh_minutes", "15")
    assert done.returncode == 0, done.stderr[-2000:]
    assert WRITE_TOKEN not in done.stdout + done.stderr
    assert hub_server.repo("space", "org/leaderboard").private
    files = hub_server.files("space", "org/leaderboard")
    assert {"app.py", "requirements.txt", "README.md", L.SETTINGS_FILE,
            "meditod_hub/evaluation/results_table.py", "meditod_hub/evaluation/results_hub.py",
            "meditod_hub/publishing/leaderboard.py", "meditod_hub/data/paper_results.py",
            "meditod_hub/data/base_models.py"} <= set(files)
    meta = yaml.safe_load(files["README.md"].decode().split("---\n")[1])
    assert (meta["sdk"], meta["app_file"], meta["datasets"]) == ("gradio", "app.py", [HUB_DATASET])
    assert json.loads(files[L.SETTINGS_FILE]) == {"dataset": HUB_DATASET, "models": [],
                                                  "refresh_minutes": 15.0}
    bad = meditod(env, "leaderboard", "--repo", "org/x", "--dataset", "not a dataset")
    assert bad.returncode == 2 and "not a Hub id" in bad.stderr


LATE_CARD = f"""datasets:
- {HUB_DATASET}
tags: [meditod, llama]
model-index:
- name: late
  results:
  - task: {{type: text-generation, name: MediTOD NLU}}
    dataset: {{type: {HUB_DATASET}, name: MediTOD, config: nlu, split: test}}
    metrics:
    - {{type: f1, name: Overall F1, config: f1, value: 0.9876}}
"""


def _start(deployed: Path, env: dict, log_path: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    env = {**env, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port),
           "GRADIO_TEMP_DIR": str(log_path.parent / "gradio-tmp")}
    log = log_path.open("w")
    process = subprocess.Popen([sys.executable, "app.py"], cwd=deployed, env=env, stdout=log,
                               stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 180  # a loaded machine; not a speed check
    while True:
        try:
            urllib.request.urlopen(url, timeout=5).close()
            return process, url
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail("the leaderboard did not start:\n" + log_path.read_text()[-3000:])
            time.sleep(0.5)


def _choose(page, group: str, label: str) -> None:
    page.locator(f"#{group} [data-testid='{label}-radio-label']").click()


def _column(page, name: str) -> list[str]:
    headers = page.locator("#board th").all_inner_texts()
    at = headers.index(name)
    return [row.locator("td").nth(at).inner_text() for row in page.locator("#board tbody tr").all()]


def test_the_space_in_a_browser_filters_sorts_links_and_refreshes(tmp_path, tiny_base):  # noqa: F811
    browser_or_skip()
    from playwright.sync_api import sync_playwright

    with HubServer(strangers=(STRANGER,)) as hub:
        repos = publish_tiny_runs(hub, tmp_path, tiny_base)
        add_foreign_models(hub)
        env = hub.client_env(tmp_path)
        done = meditod(env, "leaderboard", "--repo", "org/leaderboard", "--dataset", HUB_DATASET,
                       "--models", f"{STRANGER}/hidden")
        assert done.returncode == 0, done.stderr[-2000:]
        deployed = tmp_path / "space"
        for path, content in hub.files("space", "org/leaderboard").items():
            (deployed / path).parent.mkdir(parents=True, exist_ok=True)
            (deployed / path).write_bytes(content)
        env = {k: v for k, v in env.items() if not k.startswith(("MEDITOD_", "GRADIO_"))}
        env["MEDITOD_LEADERBOARD_REFRESH_MINUTES"] = "0.05"  # every 3 s: the refresh is tested
        env.pop("PYTHONPATH", None)  # the Space runs from its own files
        process, url = _start(deployed, env, tmp_path / "app.log")
        blocked = []

        def only_this_machine(route):
            if route.request.url.startswith(("http://127.0.0.1:", "data:", "blob:")):
                route.continue_()
            else:
                blocked.append(route.request.url)
                route.abort()

        try:
            with sync_playwright() as p:
                browser = p.chromium.launch_persistent_context(
                    str(tmp_path / "profile"), executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
                    headless=True, viewport={"width": 1300, "height": 900})
                browser.route("**/*", only_this_machine)
                page = browser.new_page()
                page.goto(url)
                page.wait_for_selector(f"#board a:text('{repos['nlu']}')", timeout=60_000)
                dataset_link = page.locator("#header a", has_text=HUB_DATASET)
                assert dataset_link.get_attribute("href") == f"{hub.url}/datasets/{HUB_DATASET}"
                assert page.locator("#board tr.paper").count() == 12
                status = page.inner_text("#status")
                assert "other/no-index (no model-index in its card)" in status
                assert "other/bad-index (malformed model-index" in status
                assert f"{STRANGER}/hidden (not visible to this token" in status

                _choose(page, "task", "POL")
                page.wait_for_selector(f"#board a:text('{repos['pol']}')", timeout=30_000)
                assert repos["nlu"] not in page.inner_text("#board")
                _choose(page, "setting", "in-context")
                page.wait_for_function("() => !document.querySelector('#board').innerText"
                                       f".includes('{repos['pol']}')", timeout=30_000)
                assert set(_column(page, "setting")) == {"in-context"}
                assert len(_column(page, "setting")) == 7
                _choose(page, "setting", "any")
                _choose(page, "sort", "P@4")
                page.wait_for_function(
                    "() => document.querySelector('#board tbody tr td:nth-child(2)')"
                    ".innerText === 'Llama3 8B'", timeout=30_000)
                pak = [float(v) for v in _column(page, "P@4")]
                assert pak == sorted(pak, reverse=True) and 0.3 in pak  # the tiny run's P@4
                if os.environ.get("MEDITOD_LEADERBOARD_SCREENSHOT"):  # a picture for the docs
                    page.screenshot(path=os.environ["MEDITOD_LEADERBOARD_SCREENSHOT"],
                                    full_page=True)
                _choose(page, "family", "gpt")
                page.wait_for_function("() => document.querySelectorAll('#board tbody tr')"
                                       ".length === 3", timeout=30_000)
                assert set(_column(page, "family")) == {"gpt"}
                _choose(page, "family", "any")
                page.wait_for_selector(f"#board a:text('{repos['pol']}')", timeout=30_000)

                with browser.expect_page() as opened:
                    page.locator(f"#board a:text('{repos['pol']}')").click()
                model_page = opened.value
                model_page.wait_for_load_state()
                assert model_page.url == f"{hub.url}/{repos['pol']}"
                assert "# MediTOD POL: tiny-llama" in model_page.inner_text("body")

                with hub.lock:  # published after the page opened: there at the next refresh
                    late = hub.create_repo("model", "local-tester/late-nlu", private=False)
                    hub.commit(late, "main", "card", "", card(LATE_CARD), {})
                _choose(page, "task", "NLU")
                page.wait_for_selector("#board a:text('local-tester/late-nlu')", timeout=60_000)
                assert _column(page, "system")[0] == "local-tester/late-nlu"  # F1 0.9876 first
                browser.close()
        finally:
            process.terminate()
            process.wait(timeout=30)
    assert blocked == []


def test_a_card_links_to_the_leaderboard_and_declares_constrained_splits(tmp_path):
    from huggingface_hub import ModelCard, constants

    from meditod_hub.models.runs import card_identity, read_run
    from meditod_hub.publishing.model_card import render_model_card

    run = read_run(write_run(tmp_path / "run", splits={
        "test": {**RESULTS["nlu"], "constrained": True}, "test_ood": RESULTS["nlu"]}))
    text = str(render_model_card(run, run_id="0123456789ab", repo_id="org/model",
                                 leaderboard="org/meditod-leaderboard"))
    assert f"[the leaderboard]({constants.ENDPOINT}/spaces/org/meditod-leaderboard)" in text
    assert card_identity(ModelCard(text))["constrained"] == ["test"]
    plain = str(render_model_card(run, run_id="0123456789ab", repo_id="org/model"))
    assert "leaderboard" not in plain

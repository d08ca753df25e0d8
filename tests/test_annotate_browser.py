"""The annotation page in a real headless browser (Debian's chromium driven by Playwright; no
browser is ever downloaded). The app runs on 127.0.0.1 on a free port; every release is a
temporary copy or a new folder. Outside CI the tests skip when no chromium is installed; under
CI (CI=true) a missing browser fails.

`MEDITOD_SCREENSHOT=docs/annotate.png` makes the suggestion test save its screenshot there (how
the README's picture is made); otherwise it goes to the test's temporary folder.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from meditod_hub.apps.annotate.assist import LabelSuggester
from meditod_hub.apps.annotate.serve import listening_socket
from meditod_hub.apps.annotate.server import LOOPBACK_HOSTS, PortalSettings, create_app
from meditod_hub.data.release import read_release
from meditod_hub.models.records import Prediction

PROJECT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TIMEOUT_MS = 30_000


def _no_browser(reason: str):
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}: CI must run the browser tests (.ci/run installs chromium)")
    pytest.skip(f"{reason} (CI installs it; apt-get install chromium)")


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _no_browser("the playwright package is not installed")
    if not Path(CHROMIUM).exists():
        _no_browser(f"no chromium at {CHROMIUM}")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=CHROMIUM,
            headless=True, args=ARGS, viewport={"width": 1280, "height": 800})
        context.set_default_timeout(TIMEOUT_MS)
        yield context
        context.close()


class Server:
    """The app on 127.0.0.1:<free port>, in a thread of this process."""

    def __init__(self, settings: PortalSettings):
        import uvicorn

        self.socket = listening_socket("127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}/"
        self.server = uvicorn.Server(uvicorn.Config(create_app(settings), log_level="warning",
                                                    access_log=False, log_config=None))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.socket]},
                                       daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        while not self.server.started:  # until it listens: a page opened sooner is refused
            if not self.thread.is_alive():
                raise RuntimeError("the annotation server stopped while starting (see its log)")
            self.thread.join(0.05)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.socket.close()


def serve(source: Path, assistant: LabelSuggester | None = None) -> Server:
    return Server(PortalSettings(source=source, assistant=assistant or LabelSuggester(),
                              allowed_hosts=LOOPBACK_HOSTS))


def open_page(browser, url: str):
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    page.wait_for_function("() => typeof S !== 'undefined' && S.ready")
    page.errors = errors
    return page


def settled(page, before: str | None) -> None:
    """Wait until the save that follows an edit has come back."""
    page.wait_for_function("v => !S.saving && !S.again && S.version !== v", arg=before)


def version(page) -> str:
    return page.evaluate("() => S.version")


def saved_dialogue(folder: Path, did: str) -> dict:
    return json.loads((folder / "dialogs.json").read_text(encoding="utf-8"))[did]


def import_transcript(page, path: Path) -> None:
    if not page.evaluate("() => document.querySelector('#import-dialog').open"):
        page.click("#import-open")  # an empty folder opened on it by itself
    page.set_input_files("#import-file", str(path))
    page.click("#import-go")
    page.wait_for_function("() => S.dialogue && S.dialogue.utterances.length > 0 && "
                           "!document.querySelector('#import-dialog').open")


def new_symptom_block(page, uid: int):
    """Open the questionnaire on utterance `uid`, add an `inform` item with a symptom slot."""
    page.click(f'#utterances li[data-uid="{uid}"]')
    page.click("#add-item")
    page.select_option("#f-intent", "inform")
    page.click("#f-add-slot")
    block = page.locator("#f-slots .slot-block").last
    block.locator("select.f-base").select_option("symptom")
    return block


TRANSCRIPT = """D: Good morning, what brings you in today?
P: I've had a dry cough for about two weeks, worse at night.
D: Have you had any fever with it?
P: No, no fever.
D: Alright, let me have a listen to your chest.
"""
COUGH = {"value": "coughing", "onset": "two weeks ago", "positive_characteristics": ["dry"]}


def test_label_a_transcript_save_validate_and_build(browser, tmp_path):
    import meditod

    release = tmp_path / "new-release"
    (tmp_path / "visit.txt").write_text(TRANSCRIPT, encoding="utf-8")
    with serve(release) as server:
        page = open_page(browser, server.url)
        import_transcript(page, tmp_path / "visit.txt")
        did = page.evaluate("() => S.did")

        # the patient: a symptom with two attributes, one of them list-valued
        block = new_symptom_block(page, 1)
        block.locator("select.f-status").select_option("positive")
        block.locator('input.f-attr[data-attr="value"]').fill("coughing")
        block.locator('input.f-attr[data-attr="onset"]').fill("two weeks ago")
        block.locator('.f-list[data-attr="positive_characteristics"] input').first.fill("dry")
        before = version(page)
        page.click("#f-submit")
        settled(page, before)
        assert "coughing" in page.inner_text("#tracking")

        # the doctor, by keyboard: down to the next utterance, Enter opens the questionnaire
        page.evaluate("() => document.activeElement.blur()")
        page.keyboard.press("ArrowDown")
        assert page.evaluate("() => S.selected") == 2
        page.keyboard.press("Enter")
        page.select_option("#f-action", "inquire")
        page.click("#f-add-slot")
        block = page.locator("#f-slots .slot-block").last
        block.locator("select.f-slot").select_option("symptom")
        block.locator("input.f-value").fill("fever")
        before = version(page)
        page.keyboard.press("Control+Enter")
        settled(page, before)

        page.select_option("#split-select", "train")
        page.wait_for_function("() => document.querySelector('#save-status').textContent.startsWith('split')")
        page.click("#save")
        assert page.errors == []

    saved = saved_dialogue(release, did)["utterances"]
    assert saved[1]["nlu"] == [{"intent": "inform", "slots": {"positive_symptom": [COUGH]}}]
    assert saved[2]["actions"] == [{"action": "inquire", "symptom": [{"value": "fever"}]}]
    assert saved[1]["dialog_state"] == saved[3]["dialog_state"] == {"positive_symptom": [COUGH]}
    assert [u.get("nlu", u.get("actions")) for u in saved][3:] == [[], []]
    assert list(saved[1]) == ["speaker", "uttr_id", "text", "keywords", "dialog_state", "nlu"]
    loaded = read_release(release)  # validates: no error
    assert loaded.splits["train"] == [did]
    sizes = meditod.build(meditod.BuildArguments(source=release, out=tmp_path / "built")).sizes
    assert sizes["train"]["nlu"] == 2 and sizes["train"]["pol"] == 2


FITS = """s => { const c = document.createElement('canvas').getContext('2d');
  c.font = getComputedStyle(s).font;
  return c.measureText(s.options[s.selectedIndex].text).width <= s.clientWidth - 24; }"""


def test_a_labelled_release_counts_its_values_and_every_kind_fits_its_box(browser, embedded_release,
                                                                          release_copy):
    """Issue 25: "0 canonical values loaded" on a fully labelled release (only a loaded vocabulary
    was counted); the intent box showed "inform — The patient gives spe" (name and help did not
    fit); a non-empty release does not open the import box."""
    from meditod_hub.apps.annotate.store import ReleaseStore

    release = release_copy(embedded_release)
    count = len(ReleaseStore(release).values()["release_canonical"])
    with serve(release) as server:
        page = open_page(browser, server.url + "?dialogue=9001")
        assert count > 10
        assert page.inner_text("#vocabulary-size") == \
            f"{count} canonical values ({count} in this release, 0 loaded)"
        assert not page.evaluate("() => document.querySelector('#import-dialog').open")
        for uid, kind, names in ((1, "#f-intent", "patient.intents"), (2, "#f-action", "doctor.actions")):
            page.click(f'#utterances li[data-uid="{uid}"]')
            page.click("#add-item")
            for name in page.evaluate(f"() => S.schema.{names}.map((o) => o.name)"):
                page.select_option(kind, name)
                assert page.locator(kind).evaluate(FITS), (kind, name)
                help_ = page.evaluate(f"() => S.schema.{names}.find((o) => o.name === {name!r}).help")
                assert page.inner_text(f"{kind}-help") == help_  # the chosen one's meaning, in full
            page.keyboard.press("Escape")
        assert page.errors == []


def test_undo_and_redo_are_saved(browser, embedded_release, release_copy):
    release = release_copy(embedded_release)
    original = saved_dialogue(release, "9001")["utterances"][3]["nlu"]
    with serve(release) as server:
        page = open_page(browser, server.url + "?dialogue=9001")
        page.click('#utterances li[data-uid="3"]')
        before = version(page)
        page.click('#items li[data-index="0"] .delete')
        settled(page, before)
        assert saved_dialogue(release, "9001")["utterances"][3]["nlu"] == []
        page.evaluate("() => document.activeElement.blur()")
        before = version(page)
        page.keyboard.press("Control+z")
        settled(page, before)
        assert saved_dialogue(release, "9001")["utterances"][3]["nlu"] == original
        before = version(page)
        page.keyboard.press("Control+Shift+z")
        settled(page, before)
        assert saved_dialogue(release, "9001")["utterances"][3]["nlu"] == []
        before = version(page)
        page.click("#undo")
        settled(page, before)
    assert (release / "dialogs.json").read_bytes() == (embedded_release / "dialogs.json").read_bytes()


def test_items_are_reordered_and_the_order_is_saved(browser, embedded_release, release_copy):
    release = release_copy(embedded_release)
    items = saved_dialogue(release, "9004")["utterances"][11]["nlu"]
    assert len(items) == 2
    with serve(release) as server:
        page = open_page(browser, server.url + "?dialogue=9004")
        page.click('#utterances li[data-uid="11"]')
        before = version(page)
        page.click('#items li[data-index="0"] .down')
        settled(page, before)
        assert page.locator("#items .badge").all_inner_texts() == ["release", "release"]
    saved = saved_dialogue(release, "9004")["utterances"][11]
    assert saved["nlu"] == items[::-1]
    assert not read_release(release).problems, "states refolded in the new order (no mismatch)"


def test_two_tabs_on_one_dialogue_never_lose_an_edit_silently(browser, embedded_release, release_copy):
    release = release_copy(embedded_release)
    with serve(release) as server:
        tab1 = open_page(browser, server.url + "?dialogue=9001")
        tab2 = open_page(browser, server.url + "?dialogue=9001")

        tab1.click('#utterances li[data-uid="3"]')
        before = version(tab1)
        tab1.click('#items li[data-index="0"] .delete')
        settled(tab1, before)

        # tab 2 still shows the old utterance 3; it edits utterance 5: merged, and it says so
        tab2.click('#utterances li[data-uid="5"]')
        before = version(tab2)
        tab2.click('#items li[data-index="0"] .delete')
        settled(tab2, before)
        assert "merged with a save made elsewhere" in tab2.inner_text("#banner")
        both = saved_dialogue(release, "9001")["utterances"]
        assert both[3]["nlu"] == [] and both[5]["nlu"] == []
        assert tab2.evaluate("() => S.labels[3]") == [], "tab 2 now shows tab 1's edit"

        # tab 1 edits utterance 5 differently: refused, kept on screen, and said
        tab1.click('#utterances li[data-uid="5"]')
        tab1.click("#json-toggle")
        tab1.fill("#json-text", json.dumps([{"intent": "chit-chat"}]))
        tab1.click("#json-apply")
        tab1.wait_for_function("() => S.conflict")
        assert "NOT saved" in tab1.inner_text("#save-status")
        banner = tab1.inner_text("#banner")
        assert "utterance(s) 5" in banner and "nothing was saved" in banner
        assert saved_dialogue(release, "9001")["utterances"][5]["nlu"] == []
        assert tab1.evaluate("() => S.labels[5]") == [{"intent": "chit-chat"}]
        assert "chit-chat" in tab1.inner_text("#statusbox")

        before = version(tab1)
        tab1.click("#banner-overwrite")  # the annotator's explicit choice
        settled(tab1, before)
        assert saved_dialogue(release, "9001")["utterances"][5]["nlu"] == [{"intent": "chit-chat"}]
        assert tab1.errors == [] and tab2.errors == []


def test_a_20000_character_unicode_and_emoji_utterance(browser, tmp_path):
    long_text = ("Ça me brûle ici 🔥😷, 咳嗽 und Übelkeit — " * 600)[:20_000].strip()
    (tmp_path / "long.txt").write_text(f"D: Bonjour 👋\nP: {long_text}\nD: Merci 🙏\n", encoding="utf-8")
    release = tmp_path / "release"
    with serve(release) as server:
        page = open_page(browser, server.url)
        import_transcript(page, tmp_path / "long.txt")
        did = page.evaluate("() => S.did")
        block = new_symptom_block(page, 1)
        assert page.inner_text("#uttr-text") == f"1. Patient: {long_text}"  # numbered as problems are
        block.locator('input.f-attr[data-attr="value"]').fill("brûlure 🔥")
        block.locator('.f-list[data-attr="location"] input').first.fill("poitrine, côté gauche")
        before = version(page)
        page.click("#f-submit")
        settled(page, before)
        assert page.errors == []
    saved = saved_dialogue(release, did)["utterances"]
    assert saved[1]["text"] == long_text and saved[0]["text"] == "Bonjour 👋"
    assert saved[1]["nlu"] == [{"intent": "inform", "slots": {"positive_symptom": [
        {"value": "brûlure 🔥", "location": ["poitrine, côté gauche"]}]}}]
    assert "brûlure 🔥" in (release / "dialogs.json").read_text(encoding="utf-8")


class FixedNLU:
    """A stand-in NLU model that always suggests the same two items."""

    name = "fixed-nlu"
    ITEMS = [{"intent": "inform", "slots": {"positive_symptom": [{"value": "coughing"}]}},
             {"intent": "chit-chat"}]

    def predict(self, rows):
        return [Prediction(r["id"], json.loads(json.dumps(self.ITEMS)), True, "") for r in rows]


def test_suggestions_are_marked_until_accepted_and_origins_recorded(browser, tmp_path):
    release = tmp_path / "release"
    (tmp_path / "visit.txt").write_text(TRANSCRIPT, encoding="utf-8")
    with serve(release, LabelSuggester(nlu=FixedNLU())) as server:
        page = open_page(browser, server.url)
        import_transcript(page, tmp_path / "visit.txt")
        did = page.evaluate("() => S.did")

        page.click('#utterances li[data-uid="1"]')
        page.wait_for_selector("#suggestions li.suggestion")
        assert page.locator("#suggestions .badge.suggestion").count() == 2
        assert page.locator("#items li").count() == 0, "a suggestion is not a label until accepted"
        page.evaluate("() => document.activeElement.blur()")
        before = version(page)
        page.keyboard.press("a")  # accept all
        settled(page, before)
        assert page.locator("#items .badge.suggested").count() == 2

        page.click('#utterances li[data-uid="3"]')
        page.wait_for_selector("#suggestions li.suggestion")
        page.click('#suggestions li[data-index="0"] .edit')
        page.locator('#f-slots .slot-block select.f-status').first.select_option("negative")
        before = version(page)
        page.click("#f-submit")
        settled(page, before)
        page.click('#suggestions li[data-index="0"] .dismiss')
        page.click("#add-item")
        page.select_option("#f-intent", "nod_prompt_salutations")
        before = version(page)
        page.click("#f-submit")
        settled(page, before)
        badges = page.locator("#items .badge").all_inner_texts()
        assert badges == ["edited", "manual"]
        page.click('#items li[data-index="0"] .edit')
        shot = Path(os.environ.get("MEDITOD_SCREENSHOT") or tmp_path / "annotate.png")
        page.screenshot(path=str(shot))
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert page.errors == []
    saved = saved_dialogue(release, did)["utterances"]
    assert saved[1]["nlu"] == FixedNLU.ITEMS
    assert saved[3]["nlu"] == [{"intent": "inform", "slots": {"negative_symptom": [{"value": "coughing"}]}},
                               {"intent": "nod_prompt_salutations"}]
    provenance = json.loads((release / "provenance.json").read_text())[did]
    assert provenance["1"]["origins"] == ["suggested", "suggested"]
    assert provenance["3"]["origins"] == ["edited", "manual"]
    assert provenance["1"]["models"] == {"nlu": "fixed-nlu"}


def test_a_new_annotator_imports_labels_and_builds_without_touching_the_split(browser, tmp_path):
    """Issue 17: in a new folder the page points at Import; the import puts the dialogue in a
    visible default split, so the first build works; utterances carry the numbers problems use;
    an unlabelled doctor turn is warned; the symptom form asks a symptom's questions (rare ones
    folded, the internal spelling never asked); keys have human names; and a medical value that is
    not canonical is flagged against the loaded vocabulary."""
    import meditod

    release = tmp_path / "new-release"
    (tmp_path / "visit.txt").write_text(TRANSCRIPT, encoding="utf-8")
    (tmp_path / "vocabulary.txt").write_text("# canonical names\ncoughing\nfever\n", encoding="utf-8")
    with serve(release) as server:
        page = open_page(browser, server.url)
        assert "import a transcript" in page.inner_text("#panel-empty").lower()
        # issue 25: the import box opens by itself on an empty folder, as the README says
        assert page.evaluate("() => document.querySelector('#import-dialog').open")
        assert page.inner_text("#vocabulary-size") == "0 canonical values (0 in this release, 0 loaded)"
        assert page.input_value("#import-split") == "train"  # the default, shown before import
        page.set_input_files("#import-file", str(tmp_path / "visit.txt"))
        page.click("#import-go")
        page.wait_for_function("() => S.dialogue && !document.querySelector('#import-dialog').open")
        did = page.evaluate("() => S.did")
        assert page.input_value("#split-select") == "train" and page.inner_text("#split-note") == ""
        page.wait_for_function("() => document.querySelectorAll('#utterances li .num').length")
        numbers = page.locator("#utterances li .num").all_inner_texts()
        assert numbers == ["0", "1", "2", "3", "4"]

        page.click("#vocabulary-open")
        page.set_input_files("#vocabulary-file", str(tmp_path / "vocabulary.txt"))
        page.click("#vocabulary-go")
        page.wait_for_function("() => S.values.vocabulary.length === 2")
        assert page.inner_text("#vocabulary-size") == "2 canonical values (0 in this release, 2 loaded)"

        block = new_symptom_block(page, 1)
        block.locator("select.f-status").select_option("positive")
        value = block.locator('input.f-attr[data-attr="value"]')
        value.fill("cough")
        note = block.locator('input.f-attr[data-attr="value"] + .new-value')
        assert "new value" in note.inner_text()
        value.fill("coughing")
        assert note.inner_text() == ""
        asked = block.locator(".f-attrs > .field").count()
        folded = block.locator(".f-attrs details.section").count()
        assert asked < 15 and folded >= 2, (asked, folded)
        assert block.locator('[data-attr="unknown_ana_factor"]').count() == 0
        assert not block.locator("details.section").first.evaluate("d => d.open")
        assert "metric parser" not in block.inner_text()
        before = version(page)
        page.click("#f-submit")
        settled(page, before)
        tracking = page.inner_text("#tracking")
        assert "symptom: yes" in tracking and "positive_symptom" not in tracking
        assert "positive_symptom" not in page.inner_text("#statusbox")

        page.click('#utterances li[data-uid="2"]')
        page.click("#add-item")
        page.select_option("#f-action", "inquire")
        page.click("#f-add-slot")
        block = page.locator("#f-slots .slot-block").last
        block.locator("select.f-slot").select_option("symptom")
        checks = block.locator(".checks").inner_text()
        assert "what makes it better or worse" in checks and "ana_factors" not in checks
        block.locator("input.f-value").fill("fever")
        before = version(page)
        page.click("#f-submit")
        settled(page, before)
        problems = page.inner_text("#problems")
        assert "utterance 4: empty `actions`" in problems  # the closing doctor turn, unlabelled
        assert page.errors == []

    built = meditod.build(meditod.BuildArguments(source=release, out=tmp_path / "built"))
    assert built.release.splits["train"] == [did]
    assert any("utterance 4" in str(p) and "empty `actions`" in str(p) for p in built.release.problems)

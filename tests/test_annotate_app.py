"""The annotation app's HTTP API (FastAPI TestClient, no port, no browser) and its command.

Space mode is tested without the Hub: the login is the `identify` seam (on a Space,
`parse_huggingface_oauth`), and the OAuth routes are checked to exist, never called.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from helpers import labels_of

from meditod_hub.apps.annotate.serve import AnnotateArguments, build_settings, listening_socket
from meditod_hub.apps.annotate.server import LOOPBACK_HOSTS, PortalSettings, create_app
from meditod_hub.data.state import fold_states
from meditod_hub.errors import MeditodError, UsageError

PROJECT = Path(__file__).resolve().parent.parent


@pytest.fixture
def release(embedded_release, release_copy) -> Path:
    return release_copy(embedded_release)


@pytest.fixture
def client(release) -> TestClient:
    app = create_app(PortalSettings(source=release, allowed_hosts=LOOPBACK_HOSTS))
    return TestClient(app, base_url="http://127.0.0.1")


def test_the_pages_and_every_module_they_import_are_served(client):
    """The page is ES modules without a bundler: every module reachable from the pages' entry
    modules must be served (a renamed module would break the page silently otherwise)."""
    import re

    page, guide = client.get("/"), client.get("/guide")
    assert page.status_code == 200 and "questionnaire" in page.text.lower()
    assert guide.status_code == 200 and "ontology" in guide.text.lower()
    assert client.get("/static/app.css").status_code == 200
    todo = re.findall(r'<script type="module" src="/static/([\w-]+\.js)"', page.text + guide.text)
    assert sorted(todo) == ["guide.js", "main.js"]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        module = client.get(f"/static/{name}")
        assert module.status_code == 200, name
        todo += re.findall(r'from "\./([\w-]+\.js)"', module.text)
    shipped = {p.name for p in (PROJECT / "meditod_hub" / "apps" / "annotate" / "static").glob("*.js")}
    assert seen == shipped, f"modules no page imports: {shipped - seen}"


def test_static_files_and_questions_ship_as_package_data():
    import tomllib

    setuptools = tomllib.loads((PROJECT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "meditod_hub.apps.annotate.static" in setuptools["packages"]  # no setuptools banner
    data = setuptools["package-data"]
    declared = data["meditod_hub.apps.annotate"] + [
        f"static/{pattern}" for pattern in data["meditod_hub.apps.annotate.static"]]
    folder = PROJECT / "meditod_hub" / "apps" / "annotate"
    shipped = {p.relative_to(folder).as_posix() for p in folder.rglob("*")
               if p.is_file() and p.suffix not in (".py", ".pyc")}
    assert shipped, "no data files found"
    for name in shipped:
        assert any(Path(name).match(pattern) for pattern in declared), name


def test_unchanged_saves_through_the_api_keep_the_file_byte_for_byte(client, release):
    before = (release / "dialogs.json").read_bytes()
    for summary in client.get("/api/dialogues").json()["dialogues"]:
        opened = client.get(f"/api/dialogues/{summary['id']}").json()
        r = client.put(f"/api/dialogues/{summary['id']}",
                       json={"version": opened["version"], "labels": labels_of(opened),
                             "origins": opened["origins"]})
        assert r.status_code == 200 and r.json()["message"] == "no change to save"
    assert (release / "dialogs.json").read_bytes() == before


def test_the_state_endpoint_is_the_python_fold_on_every_turn(client, release):
    dialogues = json.loads((release / "dialogs.json").read_text(encoding="utf-8"))
    for did, dialogue in dialogues.items():
        opened = client.get(f"/api/dialogues/{did}").json()
        states = client.post(f"/api/dialogues/{did}/states",
                             json={"labels": labels_of(opened)}).json()["states"]
        patients = [u for u in dialogue["utterances"] if u["speaker"] == "patient"]
        folded = fold_states(u["nlu"] for u in patients)
        got = [s for s, u in zip(states, dialogue["utterances"]) if u["speaker"] == "patient"]
        assert json.dumps(got) == json.dumps(folded) == json.dumps([u["dialog_state"] for u in patients])


def test_a_second_tab_is_merged_or_refused_and_told_so(client):
    tab1 = client.get("/api/dialogues/9001").json()
    tab2 = client.get("/api/dialogues/9001").json()
    a = labels_of(tab1)
    a[1] = [{"intent": "chit-chat"}]
    saved = client.put("/api/dialogues/9001", json={"version": tab1["version"], "labels": a})
    assert saved.json()["message"] == "saved"
    b = labels_of(tab2)
    b[2] = [{"action": "chit-chat"}]
    merged = client.put("/api/dialogues/9001", json={"version": tab2["version"], "labels": b}).json()
    assert merged["merged"] == [1] and "merged with a save made elsewhere" in merged["message"]
    assert merged["merged_labels"]["1"]["label"] == [{"intent": "chit-chat"}]
    c = labels_of(tab2)
    c[1] = [{"intent": "nod_prompt_salutations"}]
    refused = client.put("/api/dialogues/9001", json={"version": tab2["version"], "labels": c})
    assert refused.status_code == 409 and refused.json()["utterances"] == [1]
    assert "nothing was saved" in refused.json()["detail"]


def test_import_split_values_and_errors(client, release):
    bad = client.post("/api/import", json={"text": "D: hi\nthe patient coughs", "name": "v.txt"})
    assert bad.status_code == 400 and bad.json()["detail"].startswith("v.txt, line 2: ")
    did = client.post("/api/import", json={"text": "D: hi\nP: a cough"}).json()["id"]
    assert client.put(f"/api/dialogues/{did}/split", json={"split": "test"}).status_code == 200
    assert did in json.loads((release / "test_ids.json").read_text())
    assert client.get("/api/dialogues/nope").status_code == 404
    values = client.get("/api/values").json()
    assert "coughing" in values["patient"]["symptom"]["value"]
    assert "characteristics" in values["doctor"]["symptom"]
    wrong = client.put(f"/api/dialogues/{did}", json={"version": "x", "labels": [[]]})
    assert wrong.status_code == 400 and "one label list per utterance" in wrong.json()["detail"]


def test_a_lone_surrogate_is_refused_and_the_next_save_works(client, release):
    """`\ud800` is valid JSON but no text: the import and the save that carry one are refused
    with a message, and the portal stays healthy for the next save."""
    before = (release / "dialogs.json").read_bytes()
    as_json = {"Content-Type": "application/json"}
    imported = client.post("/api/import", content=r'{"text": "D: a \ud800\nP: b"}',
                           headers=as_json)
    opened = client.get("/api/dialogues/9001").json()
    labels = labels_of(opened)
    labels[1] = [{"intent": "chit-chat"}]
    body = json.dumps({"version": opened["version"], "labels": labels})
    saved = client.put("/api/dialogues/9001", headers=as_json,
                       content=body.replace('"chit-chat"', r'"chit-chat \ud800"'))
    for refused in (imported, saved):
        assert refused.status_code == 400 and "not valid Unicode" in refused.json()["detail"]
    assert (release / "dialogs.json").read_bytes() == before
    good = client.put("/api/dialogues/9001", json={"version": opened["version"], "labels": labels})
    assert good.status_code == 200 and good.json()["message"] == "saved"
    assert json.loads((release / "dialogs.json").read_text())["9001"]["utterances"][1]["nlu"] \
        == [{"intent": "chit-chat"}]


def test_json_bodies_only_and_loopback_hosts_only(client):
    """A page on another site can neither post a simple form nor reach the app by a DNS name."""
    form = client.post("/api/import", content="text=D: hi", headers={"Content-Type": "text/plain"})
    assert form.status_code == 422
    rebound = client.get("/api/dialogues", headers={"Host": "evil.example"})
    assert rebound.status_code == 400


def test_suggestions_without_a_model_say_so(client):
    opened = client.get("/api/dialogues/9001").json()
    r = client.post("/api/dialogues/9001/suggest", json={"labels": labels_of(opened), "uttr_id": 1})
    assert r.json() == {"suggestion": None, "reason": "no model for this speaker"}


# --- as a Space: login, one folder per annotator ------------------------------------------------------
@pytest.fixture
def space_client(release, tmp_path, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setenv("SPACE_ID", "org/annotate")
    for name, value in (("OAUTH_CLIENT_ID", "id"), ("OAUTH_CLIENT_SECRET", "secret"),
                        ("OAUTH_SCOPES", "openid profile"),
                        ("OPENID_PROVIDER_URL", "http://127.0.0.1:9")):
        monkeypatch.setattr(constants, name, value)
    users = {"alice": "alice", "bob": "bob"}

    def identify(request):
        return users.get(request.headers.get("X-Test-User", ""))

    app = create_app(PortalSettings(source=release, space=True, workdir=tmp_path / "work",
                                 identify=identify))
    return TestClient(app, base_url="https://space.test"), tmp_path / "work"


def test_on_a_space_nothing_is_served_without_a_hub_login(space_client):
    client, _ = space_client
    assert client.get("/api/dialogues").status_code == 401
    config = client.get("/api/config").json()
    assert config["space"] and config["user"] is None
    assert config["login_url"] == "/oauth/huggingface/login"
    routes = {r.path for r in client.app.routes}
    assert {"/oauth/huggingface/login", "/oauth/huggingface/callback",
            "/oauth/huggingface/logout"} <= routes


def test_on_a_space_each_annotator_labels_their_own_copy(space_client, release):
    client, work = space_client
    alice, bob = {"X-Test-User": "alice"}, {"X-Test-User": "bob"}
    opened = client.get("/api/dialogues/9001", headers=alice).json()
    new = labels_of(opened)
    new[1] = [{"intent": "chit-chat"}]
    client.put("/api/dialogues/9001", json={"version": opened["version"], "labels": new,
                                            "origins": [["manual"] * len(x) for x in new]},
               headers=alice)
    assert json.loads((work / "annotators/alice/dialogs.json").read_text())["9001"][
        "utterances"][1]["nlu"] == [{"intent": "chit-chat"}]
    bobs = client.get("/api/dialogues/9001", headers=bob).json()
    assert labels_of(bobs)[1] != [{"intent": "chit-chat"}]
    assert (release / "dialogs.json").read_bytes() == (PROJECT / "data/sample/dialogs.json").read_bytes()
    provenance = json.loads((work / "annotators/alice/provenance.json").read_text())
    assert provenance["9001"]["1"]["annotator"] == "alice"


def test_an_account_name_that_is_not_a_folder_name_is_refused(tmp_path):
    from meditod_hub.apps.annotate.hosted import annotator_folder

    assert annotator_folder(tmp_path, "ann-1.x") == tmp_path / "annotators" / "ann-1.x"
    for name in ("../etc", "", "a/b", ".hidden"):
        with pytest.raises(MeditodError):
            annotator_folder(tmp_path, name)


# --- the command ------------------------------------------------------------------------------------
def test_a_busy_port_is_a_one_line_error():
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    try:
        with pytest.raises(MeditodError, match=r"cannot listen on 127\.0\.0\.1:\d+ .*--port"):
            listening_socket("127.0.0.1", busy.getsockname()[1])
    finally:
        busy.close()
    with pytest.raises(UsageError):
        listening_socket("127.0.0.1", 70000)


def test_space_mode_is_refused_off_a_space_and_without_a_private_backup(monkeypatch, tmp_path):
    monkeypatch.delenv("SPACE_ID", raising=False)
    with pytest.raises(UsageError, match="SPACE_ID"):
        build_settings(AnnotateArguments(source=str(tmp_path), space=True))
    monkeypatch.setenv("SPACE_ID", "org/annotate")
    with pytest.raises(UsageError, match="--backup_repo"):
        build_settings(AnnotateArguments(source=str(tmp_path), space=True))


def test_the_annotate_command_is_registered_and_documents_its_flags():
    from meditod_hub.cli import COMMANDS

    assert COMMANDS["annotate"][0] == "meditod_hub.commands.annotate"
    assert COMMANDS["agreement"][0] == "meditod_hub.commands.agreement"
    out = subprocess.run([sys.executable, "-m", "meditod_hub.cli", "annotate", "-h"], cwd=PROJECT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0
    for flag in ("--source", "--port", "--nlu_model", "--pol_model", "--space", "--backup_repo"):
        assert flag in out.stdout


def test_the_space_template_runs_this_app_with_hub_login_on_its_port():
    import shlex

    from huggingface_hub import metadata_load

    card = metadata_load(PROJECT / "spaces" / "annotate" / "README.md")
    assert card["sdk"] == "docker" and card["hf_oauth"] is True
    docker = (PROJECT / "spaces" / "annotate" / "Dockerfile").read_text()
    command = shlex.split(docker.split("\nCMD ", 1)[1].replace("\\\n", " "))
    assert command[:3] == ["meditod", "annotate", "--space"]
    assert command[command.index("--port") + 1] == str(card["app_port"])
    assert command[command.index("--host") + 1] == "0.0.0.0"
    assert "--backup_repo" in command
    flags = {word[2:] for word in command if word.startswith("--")}
    assert flags <= set(AnnotateArguments.__dataclass_fields__), "every flag is the command's"


# --- on a network address: an access token and a Host check (issue 15) -----------------------------
@pytest.fixture
def network_client(release):
    app = create_app(PortalSettings(source=release, allowed_hosts=["annotate.lan"],
                                    access_token="tok-0123456789"))
    return TestClient(app, base_url="http://annotate.lan")


def test_on_a_network_address_nothing_is_read_or_written_without_the_token(network_client, release):
    before = (release / "dialogs.json").read_bytes()
    for method, path, body in (("GET", "/", None), ("GET", "/api/dialogues", None),
                               ("GET", "/api/dialogues/9001", None), ("GET", "/static/app.js", None),
                               ("POST", "/api/import", {"text": "D: hi\nP: hello"})):
        r = network_client.request(method, path, json=body)
        assert r.status_code == 401 and "access link" in r.json()["detail"], path
    assert network_client.get("/?token=wrong").status_code == 401
    wrong = network_client.get("/api/dialogues", headers={"Authorization": "Bearer wrong"})
    assert wrong.status_code == 401
    assert (release / "dialogs.json").read_bytes() == before


def test_the_access_link_sets_a_cookie_and_an_api_client_may_send_the_token(network_client):
    opened = network_client.get("/?token=tok-0123456789", follow_redirects=False)
    assert opened.status_code == 303 and opened.headers["location"] == "/"
    cookie = opened.headers["set-cookie"]
    assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
    assert network_client.get("/").status_code == 200  # the client kept the cookie
    assert network_client.get("/api/dialogues").status_code == 200
    bare = TestClient(network_client.app, base_url="http://annotate.lan")
    bearer = bare.get("/api/dialogues", headers={"Authorization": "Bearer tok-0123456789"})
    assert bearer.status_code == 200


def test_on_a_network_address_other_host_names_are_refused(network_client):
    r = network_client.get("/api/dialogues", headers={"Host": "evil.example",
                                                     "Authorization": "Bearer tok-0123456789"})
    assert r.status_code == 400


def test_a_non_local_bind_gets_a_fresh_token_and_this_machines_names(tmp_path):
    local = build_settings(AnnotateArguments(source=str(tmp_path)))
    assert local.access_token is None and local.allowed_hosts == LOOPBACK_HOSTS
    every = build_settings(AnnotateArguments(source=str(tmp_path), host="0.0.0.0",
                                             allowed_hosts="annotate.lan, other.lan"))
    again = build_settings(AnnotateArguments(source=str(tmp_path), host="0.0.0.0"))
    assert every.access_token and again.access_token and every.access_token != again.access_token
    assert len(every.access_token) >= 24
    assert every.allowed_hosts[:2] == ["annotate.lan", "other.lan"]
    assert socket.gethostname() in every.allowed_hosts and "127.0.0.1" in every.allowed_hosts
    one = build_settings(AnnotateArguments(source=str(tmp_path), host="192.0.2.7"))
    assert one.allowed_hosts[0] == "192.0.2.7" and "evil.example" not in one.allowed_hosts


def test_the_token_is_printed_once_in_the_link_and_the_warning_says_reading_is_exposed(
        release, monkeypatch, capsys):
    import uvicorn

    from meditod_hub.commands import annotate

    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: None)
    assert annotate.main(["--source", str(release), "--host", "0.0.0.0", "--port", "0",
                          "--allowed_hosts", "annotate.lan"]) == 0
    out, err = capsys.readouterr()
    token = re.search(r"\?token=([\w-]+)", out).group(1)
    assert out.count(token) == 1 and token not in err
    assert "http://annotate.lan:" in out
    assert "whoever has this link can read the dialogues and edit the release" in err


def test_the_printed_link_answers_before_the_server_accepts():
    """The socket listens when the link is printed: a browser (or the docs test) that opens it at
    once waits for the server instead of being refused."""
    sock = listening_socket("127.0.0.1", 0)
    with sock, socket.create_connection(sock.getsockname()[:2], timeout=5):
        pass

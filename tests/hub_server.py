"""A local Hub-compatible HTTP server for offline tests of pushing and pulling repos.

It speaks the subset of the Hub API that `huggingface_hub` 2.x (HTTP + LFS uploads: the client runs
with HF_HUB_DISABLE_XET=1) and `datasets.load_dataset` use: whoami, repo create, settings and info,
preupload, LFS batch + upload, NDJSON commits, branches, tags, refs, commits, tree, paths-info and
`resolve` downloads (HEAD with X-Repo-Commit / ETag, ranged GET). Model, dataset and space repos are
kept in memory as content-addressed commits, so every branch, tag and commit stays downloadable.

Tokens map to roles (`HubServer(tokens=...)`; default `WRITE_TOKEN` "write", `READ_TOKEN` "read"):
only "write" may change anything (others get 403), an unknown bearer token gets 401. Every token
belongs to the one test user, who may read every repo: private repos and gated files answer 401
only to anonymous requests, except private repos under `HubServer(strangers=...)` namespaces
(other users'), which answer 404 to every token as on the Hub. `GET /api/models` lists the model
repos a request may see, filtered by tag (`filter=dataset:ORG/NAME` matches a card's `datasets`,
as the Hub derives such tags); `GET /ORG/NAME` (a model's page) answers its README as text.
Clients must see `HF_ENDPOINT=server.url` before they import
huggingface_hub (it is read at import), so run them as subprocesses with `HubServer.client_env`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import socket
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path, PurePosixPath
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

WRITE_TOKEN = "hf_localtestWRITEtoken0123456789"
READ_TOKEN = "hf_localtestREADtoken01234567890"
USER = "local-tester"
REPO_TYPES = {"models": "model", "datasets": "dataset", "spaces": "space"}
URL_PREFIXES = {"model": "", "dataset": "datasets/", "space": "spaces/"}
LFS_SUFFIXES = (".parquet", ".arrow", ".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".h5",
                ".onnx", ".gguf", ".npy", ".npz", ".pkl", ".zip", ".gz", ".tar", ".zst", ".model")
LFS_MIN_SIZE = 10 * 1024 * 1024
LFS_BATCH = ["info", "lfs", "objects", "batch"]  # after /{prefix}{repo_id}.git/
GITATTRIBUTES = "".join(f"*{s} filter=lfs diff=lfs merge=lfs -text\n" for s in LFS_SUFFIXES)


def within(path: str, entry: str) -> bool:
    """Whether `path` is the file `entry` or lies in the folder `entry`."""
    return path == entry or path.startswith(entry.rstrip("/") + "/")


def git_blob_oid(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@dataclass(frozen=True)
class StoredFile:
    sha256: str
    size: int
    lfs: bool

    def pointer(self) -> bytes:
        """The git-lfs pointer file git stores in place of an LFS file's content."""
        return (f"version https://git-lfs.github.com/spec/v1\n"
                f"oid sha256:{self.sha256}\nsize {self.size}\n").encode()

    def blob_oid(self, content: bytes) -> str:
        """The git oid: of the content for a regular file, of its pointer for an LFS one."""
        return git_blob_oid(self.pointer() if self.lfs else content)


@dataclass
class Commit:
    oid: str
    parent: str | None
    title: str
    message: str
    date: str
    files: dict[str, StoredFile]


@dataclass
class Repo:
    repo_type: str
    repo_id: str
    private: bool
    gated: str | bool = False
    created: str = field(default_factory=now)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    commits: dict[str, Commit] = field(default_factory=dict)

    def resolve(self, revision: str) -> Commit | None:
        oid = self.branches.get(revision) or self.tags.get(revision)
        if oid is None and revision in self.commits:
            oid = revision
        return self.commits.get(oid) if oid else None

    def history(self, commit: Commit) -> list[Commit]:
        chain = [commit]
        while chain[-1].parent:
            chain.append(self.commits[chain[-1].parent])
        return chain


class HubError(Exception):
    """An HTTP error answer, with the Hub's X-Error-Code where the client relies on it."""

    def __init__(self, status: int, message: str, code: str | None = None, **body):
        super().__init__(message)
        self.status, self.message, self.code, self.body = status, message, code, body


class HubServer:
    """Start with `with HubServer() as hub:`; `hub.url` is the endpoint, `hub.repos` the state."""

    def __init__(self, tokens: dict[str, str] | None = None, strangers: tuple[str, ...] = ()):
        self.tokens = tokens or {WRITE_TOKEN: "write", READ_TOKEN: "read"}
        self.strangers = strangers  # namespaces whose private repos no token may see
        self.repos: dict[tuple[str, str], Repo] = {}
        self.blobs: dict[str, bytes] = {}  # sha256 -> content, for all repos (like LFS storage)
        self.pending_uploads: dict[str, tuple[str, int]] = {}  # signed upload id -> (sha256, size)
        self.requests: list[tuple[str, str, int]] = []  # (method, path, status), for debugging
        # A fault for the next commit request: "drop" (the connection closes, nothing is
        # committed) or a number of seconds to hold it before committing.
        self.commit_fault: str | float | None = None
        self.lock = threading.RLock()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._http.daemon_threads = True
        self._http.hub = self
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    def __enter__(self) -> HubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._http.shutdown()
        self._http.server_close()

    def repo(self, repo_type: str, repo_id: str) -> Repo:
        return self.repos[(repo_type, repo_id)]

    def files(self, repo_type: str, repo_id: str, revision: str = "main") -> dict[str, bytes]:
        """Path -> content of every file of a repo at a revision, from the server's own state."""
        commit = self.repo(repo_type, repo_id).resolve(revision)
        return {path: self.blobs[stored.sha256] for path, stored in commit.files.items()}

    def client_env(self, home: Path, token: str | None = WRITE_TOKEN) -> dict[str, str]:
        """Environment for a client subprocess: this endpoint, HTTP uploads, caches under `home`."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
        env.update(HF_ENDPOINT=self.url, HF_HUB_DISABLE_XET="1", HF_HOME=str(home / "hf-home"),
                   HF_DATASETS_CACHE=str(home / "datasets-cache"), HF_HUB_DISABLE_TELEMETRY="1",
                   HF_HUB_DISABLE_PROGRESS_BARS="1", HF_DATASETS_DISABLE_PROGRESS_BARS="1")
        if token:
            env["HF_TOKEN"] = token
        return env

    # --- state changes (called with the lock held) ---

    def create_repo(self, repo_type: str, repo_id: str, private: bool) -> Repo:
        repo = Repo(repo_type, repo_id, private)
        self.repos[(repo_type, repo_id)] = repo
        attributes = {".gitattributes": GITATTRIBUTES.encode()}
        self.commit(repo, "main", "initial commit", "", attributes, {})
        return repo

    def store(self, content: bytes, lfs: bool) -> StoredFile:
        sha256 = hashlib.sha256(content).hexdigest()
        self.blobs[sha256] = content
        return StoredFile(sha256, len(content), lfs)

    def commit(self, repo: Repo, branch: str, title: str, message: str, regular: dict[str, bytes],
               lfs: dict[str, StoredFile], deleted: tuple[str, ...] = ()) -> Commit:
        parent = repo.commits[repo.branches[branch]] if branch in repo.branches else None
        files = dict(parent.files) if parent else {}
        for path in deleted:
            files = {p: f for p, f in files.items() if not within(p, path)}
        files.update({path: self.store(content, lfs=False) for path, content in regular.items()})
        files.update(lfs)
        date = now()
        oid = hashlib.sha1(json.dumps([parent and parent.oid, title, message, date, sorted(
            (p, f.sha256) for p, f in files.items())]).encode()).hexdigest()
        repo.commits[oid] = Commit(oid, parent and parent.oid, title, message, date, files)
        repo.branches[branch] = oid
        return repo.commits[oid]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "LocalHub/1.0"

    @property
    def hub(self) -> HubServer:
        return self.server.hub

    def log_message(self, *args) -> None:  # quiet: tests read `hub.requests` instead
        pass

    def do_GET(self):
        self._dispatch("GET")

    def do_HEAD(self):
        self._dispatch("HEAD")

    def do_POST(self):
        self._dispatch("POST")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_DELETE(self):
        self._dispatch("DELETE")

    # --- plumbing ---

    def _dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        self.query = parse_qs(url.query)
        self.body = self._read_body()
        parts = [unquote(p) for p in url.path.split("/")[1:]]
        if method == "POST" and parts[:1] == ["api"] and "commit" in parts[4:5] \
                and self.hub.commit_fault is not None:
            fault, self.hub.commit_fault = self.hub.commit_fault, None
            if fault == "drop":
                self.hub.requests.append((method, url.path, 0))
                self.close_connection = True
                return
            time.sleep(float(fault))
        try:
            with self.hub.lock:
                status, headers, payload = self._route(method, parts)
        except HubError as err:
            headers = {"X-Error-Message": err.message}
            if err.code:
                headers["X-Error-Code"] = err.code
            status, payload = err.status, {"error": err.message, **err.body}
        self.hub.requests.append((method, url.path, status))
        self._send(method, status, headers, payload)

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while size := int(self.rfile.readline().split(b";")[0], 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            self.rfile.readline()
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _send(self, method: str, status: int, headers: dict, payload) -> None:
        if isinstance(payload, bytes):
            body = payload
        else:
            body = json.dumps(payload).encode()
            headers.setdefault("Content-Type", "application/json")
        length = headers.pop("Content-Length", len(body))  # a HEAD tells the size it would send
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, str(value))
        self.send_header("Content-Length", str(length))
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(body)

    def _json(self):
        try:
            return json.loads(self.body or b"{}")
        except json.JSONDecodeError:
            raise HubError(400, "body is not JSON") from None

    def _role(self) -> str | None:
        """The token's role; None when anonymous; 401 for an unknown token."""
        auth = self.headers.get("Authorization")
        if not auth:
            return None
        role = self.hub.tokens.get(auth.removeprefix("Bearer ").strip())
        if role is None:
            raise HubError(401, "Invalid credentials in Authorization header")
        return role

    def _require_write(self) -> None:
        role = self._role()
        if role is None:
            raise HubError(401, "You must be authenticated to write to the Hub")
        if role != "write":
            raise HubError(403, f"You don't have the rights to write here (token role: {role})")

    def _visible(self, repo: Repo, role: str | None) -> bool:
        return not repo.private or (role is not None
                                    and repo.repo_id.split("/")[0] not in self.hub.strangers)

    def _repo(self, repo_type: str, repo_id: str, write: bool = False) -> Repo:
        role = self._role()
        repo = self.hub.repos.get((repo_type, repo_id))
        if repo is None or not self._visible(repo, role):
            raise HubError(401 if role is None else 404, "Repository not found", "RepoNotFound")
        if write:
            self._require_write()
        return repo

    def _commit(self, repo: Repo, revision: str) -> Commit:
        commit = repo.resolve(revision)
        if commit is None:
            raise HubError(404, f"Invalid rev id: {revision}", "RevisionNotFound")
        return commit

    # --- routes ---

    def _route(self, method: str, parts: list[str]):
        if parts[:1] == ["api"]:
            return self._api(method, parts[1:])
        if parts[:1] == ["lfs-upload"] and method == "PUT":
            return self._lfs_put(parts[1])
        repo_type = REPO_TYPES.get(parts[0], "model") if parts else "model"
        rest = parts[1:] if parts and parts[0] in REPO_TYPES else parts
        if rest[1:2] and rest[1].endswith(".git") and rest[2:] == LFS_BATCH:
            return self._lfs_batch(self._repo(repo_type, f"{rest[0]}/{rest[1][:-4]}", write=True))
        if len(rest) >= 5 and rest[2] == "resolve" and method in ("GET", "HEAD"):
            repo = self._repo(repo_type, "/".join(rest[:2]))
            return self._resolve(repo, rest[3], "/".join(rest[4:]))
        if len(rest) == 2 and method == "GET":  # the repo's page: its card, as text
            readme = self._commit(self._repo(repo_type, "/".join(rest)), "main").files.get("README.md")
            text = self.hub.blobs[readme.sha256] if readme else b"(no card)"
            return 200, {"Content-Type": "text/plain; charset=utf-8"}, text
        raise HubError(404, f"no route for {method} {self.path}")

    def _api(self, method: str, parts: list[str]):
        if parts == ["whoami-v2"] and method == "GET":
            role = self._role()
            if role is None:
                raise HubError(401, "Invalid credentials in Authorization header")
            token = {"displayName": f"{role} token", "role": role}
            return 200, {}, {"type": "user", "name": USER, "fullname": USER, "orgs": [],
                             "auth": {"type": "access_token", "accessToken": token}}
        if parts == ["repos", "create"] and method == "POST":
            return self._create_repo(self._json())
        if parts == ["validate-yaml"] and method == "POST":
            return self._validate_yaml(self._json())
        if parts == ["models"] and method == "GET":
            return self._list_models()
        if len(parts) < 3 or parts[0] not in REPO_TYPES:
            raise HubError(404, f"no route for {method} {self.path}")
        repo_type, repo_id = REPO_TYPES[parts[0]], "/".join(parts[1:3])
        action, args = parts[3:4], parts[4:]
        route = {
            ("GET", ()): lambda repo: self._info(repo, "main"),
            ("GET", ("revision",)): lambda repo: self._info(repo, args[0]),
            ("GET", ("tree",)): lambda repo: self._tree(repo, args[0], "/".join(args[1:])),
            ("POST", ("paths-info",)): lambda repo: self._paths_info(repo, args[0]),
            ("GET", ("refs",)): self._refs,
            ("GET", ("commits",)): lambda repo: self._commits(repo, args[0]),
            ("POST", ("preupload",)): lambda repo: self._preupload(repo, args[0]),
            ("POST", ("commit",)): lambda repo: self._create_commit(repo, args[0]),
            ("PUT", ("settings",)): self._settings,
            ("POST", ("branch",)): lambda repo: self._create_ref(repo, repo.branches, args[0]),
            ("DELETE", ("branch",)): lambda repo: self._delete_ref(repo.branches, args[0]),
            ("POST", ("tag",)): lambda repo: self._create_tag(repo, args[0]),
            ("DELETE", ("tag",)): lambda repo: self._delete_ref(repo.tags, args[0]),
        }.get((method, tuple(action)))
        if route is None:
            raise HubError(404, f"no route for {method} {self.path}")
        writes = method in ("POST", "PUT", "DELETE") and action != ["paths-info"]
        return route(self._repo(repo_type, repo_id, write=writes))

    def _create_repo(self, body: dict):
        self._require_write()
        repo_type = body.get("type") or "model"
        repo_id = f"{body.get('organization') or USER}/{body['name']}"
        url = f"{self.hub.url}/{URL_PREFIXES[repo_type]}{repo_id}"
        if (repo_type, repo_id) in self.hub.repos:
            raise HubError(409, f"You already created this {repo_type} repo", url=url)
        self.hub.create_repo(repo_type, repo_id, private=body.get("visibility") == "private")
        return 200, {}, {"url": url, "name": repo_id}

    def _validate_yaml(self, body: dict):
        match = re.match(r"^---\n(.*?)\n---\n", body.get("content", ""), re.DOTALL)
        try:
            if match and not isinstance(yaml.safe_load(match.group(1)) or {}, dict):
                raise yaml.YAMLError("metadata is not a mapping")
        except yaml.YAMLError as err:
            return 400, {}, {"errors": [{"message": f"invalid YAML: {err}"}], "warnings": []}
        return 200, {}, {"errors": [], "warnings": []}

    def _settings(self, repo: Repo):
        body = self._json()
        if "gated" in body:
            if body["gated"] not in ("auto", "manual", False):
                raise HubError(400, f"invalid gated value {body['gated']!r}")
            repo.gated = body["gated"]
        if "visibility" in body:
            repo.private = body["visibility"] == "private"
        return 200, {}, {}

    def _card_data(self, commit: Commit) -> dict | None:
        readme = commit.files.get("README.md")
        card = self.hub.blobs[readme.sha256].decode() if readme else ""
        match = re.match(r"^---\n(.*?)\n---\n", card, re.DOTALL)
        try:
            data = yaml.safe_load(match.group(1)) if match else None
        except yaml.YAMLError:
            return None
        return data if isinstance(data, dict) else None

    def _list_models(self):
        """Model repos this request may see whose tags (the card's, plus `dataset:<id>` for each
        of its `datasets`) include every `filter` value."""
        role, wanted = self._role(), set(self.query.get("filter", []))
        found = []
        for (repo_type, repo_id), repo in sorted(self.hub.repos.items()):
            if repo_type != "model" or not self._visible(repo, role):
                continue
            commit = repo.resolve("main")
            card_data = self._card_data(commit) or {}
            datasets = card_data.get("datasets") or []
            tags = [*(card_data.get("tags") or []),
                    *(f"dataset:{d}" for d in ([datasets] if isinstance(datasets, str) else datasets))]
            if wanted <= set(tags):
                found.append({"_id": hashlib.sha1(repo_id.encode()).hexdigest()[:24], "id": repo_id,
                              "private": repo.private, "tags": tags, "sha": commit.oid,
                              "lastModified": commit.date, "createdAt": repo.created})
        return 200, {}, found

    def _info(self, repo: Repo, revision: str):
        commit = self._commit(repo, revision)
        card_data = self._card_data(commit)
        return 200, {}, {
            "_id": hashlib.sha1(repo.repo_id.encode()).hexdigest()[:24], "id": repo.repo_id,
            "author": repo.repo_id.split("/")[0], "sha": commit.oid, "lastModified": commit.date,
            "createdAt": repo.created, "private": repo.private, "gated": repo.gated,
            "disabled": False, "downloads": 0, "likes": 0, "cardData": card_data,
            "tags": (card_data or {}).get("tags", []),
            "siblings": [{"rfilename": p} for p in sorted(commit.files)]}

    def _entries(self, repo: Repo, commit: Commit, paths: list[str], expand: bool) -> list[dict]:
        folders = {str(p) for path in commit.files for p in PurePosixPath(path).parents} - {"."}
        entries = []
        for path in paths:
            if path in commit.files:
                stored = commit.files[path]
                entry = {"type": "file", "path": path, "size": stored.size,
                         "oid": stored.blob_oid(self.hub.blobs[stored.sha256])}
                if stored.lfs:
                    entry["lfs"] = {"oid": stored.sha256, "size": stored.size,
                                    "pointerSize": len(stored.pointer())}
            elif path in folders:
                inside = sorted((p, f.sha256) for p, f in commit.files.items() if within(p, path))
                entry = {"type": "directory", "path": path, "size": 0,
                         "oid": hashlib.sha1(json.dumps(inside).encode()).hexdigest()}
            else:
                continue
            if expand:
                last = self._last_commit(repo, commit, path)
                entry["lastCommit"] = {"id": last.oid, "title": last.title, "date": last.date}
            entries.append(entry)
        return entries

    def _last_commit(self, repo: Repo, commit: Commit, path: str) -> Commit:
        def state(c: Commit):
            return sorted((p, f.sha256) for p, f in c.files.items() if within(p, path))
        history = repo.history(commit)
        for newer, older in zip(history, history[1:]):
            if state(newer) != state(older):
                return newer
        return history[-1]

    def _tree(self, repo: Repo, revision: str, path: str):
        commit = self._commit(repo, revision)
        recursive = self.query.get("recursive", ["false"])[0].lower() in ("true", "1")
        expand = self.query.get("expand", ["false"])[0].lower() in ("true", "1")
        prefix = f"{path}/" if path else ""
        below = {str(p) for f in commit.files if f.startswith(prefix)
                 for p in [PurePosixPath(f), *PurePosixPath(f).parents]
                 if str(p).startswith(prefix)}
        if path and not below:
            raise HubError(404, f"{path} does not exist at {revision}", "EntryNotFound")
        if not recursive:
            below = {p for p in below if "/" not in p[len(prefix):]}
        return 200, {}, self._entries(repo, commit, sorted(below), expand)

    def _paths_info(self, repo: Repo, revision: str):
        commit = self._commit(repo, revision)
        if self.headers.get("Content-Type", "").startswith("application/json"):
            body = self._json()
            paths, expand = body.get("paths", []), bool(body.get("expand"))
        else:
            form = parse_qs(self.body.decode())
            paths = form.get("paths", [])
            expand = form.get("expand", ["false"])[0].lower() == "true"
        return 200, {}, self._entries(repo, commit, [p.strip("/") for p in paths], expand)

    def _refs(self, repo: Repo):
        def refs(names: dict[str, str], kind: str) -> list[dict]:
            return [{"name": name, "ref": f"refs/{kind}/{name}", "targetCommit": oid}
                    for name, oid in names.items()]
        return 200, {}, {"branches": refs(repo.branches, "heads"), "tags": refs(repo.tags, "tags"),
                         "converts": [], "pullRequests": []}

    def _commits(self, repo: Repo, revision: str):
        history = repo.history(self._commit(repo, revision))
        return 200, {}, [{"id": c.oid, "title": c.title, "message": c.message, "date": c.date,
                          "authors": [{"user": USER}]} for c in history]

    def _create_ref(self, repo: Repo, refs: dict[str, str], name: str, start: str | None = None):
        if name in repo.branches or name in repo.tags:
            raise HubError(409, f"Reference {name} already exists")
        refs[name] = self._commit(repo, start or self._json().get("startingPoint") or "main").oid
        return 200, {}, {}

    def _create_tag(self, repo: Repo, revision: str):
        return self._create_ref(repo, repo.tags, self._json()["tag"], start=revision)

    def _delete_ref(self, refs: dict[str, str], name: str):
        if name == "main":
            raise HubError(403, "the main branch cannot be deleted")
        if refs.pop(name, None) is None:
            raise HubError(404, f"no reference {name}", "RevisionNotFound")
        return 200, {}, {}

    def _preupload(self, repo: Repo, revision: str):
        commit = repo.resolve(revision)
        files = []
        for item in self._json().get("files", []):
            sample = base64.b64decode(item["sample"])
            lfs = (item["path"].endswith(LFS_SUFFIXES) or item["size"] > LFS_MIN_SIZE
                   or b"\0" in sample)
            remote = commit.files.get(item["path"]) if commit else None
            oid = None  # what the client compares to skip unchanged files: sha256 for LFS, else git
            if remote is not None:
                content = self.hub.blobs[remote.sha256]
                oid = remote.sha256 if remote.lfs else remote.blob_oid(content)
            files.append({"path": item["path"], "uploadMode": "lfs" if lfs else "regular",
                          "shouldIgnore": False, "oid": oid})
        return 200, {}, {"files": files, "commitOid": commit and commit.oid}

    def _lfs_batch(self, repo: Repo):
        objects = []
        for obj in self._json().get("objects", []):
            answer = {"oid": obj["oid"], "size": obj["size"], "authenticated": True}
            if obj["oid"] not in self.hub.blobs:
                upload_id = os.urandom(16).hex()  # stands in for a presigned storage URL
                self.hub.pending_uploads[upload_id] = (obj["oid"], obj["size"])
                answer["actions"] = {"upload": {"href": f"{self.hub.url}/lfs-upload/{upload_id}"}}
            objects.append(answer)
        lfs_json = {"Content-Type": "application/vnd.git-lfs+json"}
        return 200, lfs_json, {"transfer": "basic", "objects": objects}

    def _lfs_put(self, upload_id: str):
        if upload_id not in self.hub.pending_uploads:
            raise HubError(403, "unknown or used upload URL")
        sha256, size = self.hub.pending_uploads.pop(upload_id)
        if hashlib.sha256(self.body).hexdigest() != sha256 or len(self.body) != size:
            raise HubError(400, "uploaded content does not match the announced oid/size")
        self.hub.blobs[sha256] = self.body
        return 200, {"ETag": f'"{sha256}"'}, b""

    def _create_commit(self, repo: Repo, revision: str):
        if self.query.get("create_pr"):
            raise HubError(501, "pull requests are not supported by the local test Hub")
        if revision not in repo.branches:
            raise HubError(404, f"Invalid rev id: {revision} (commit to a branch)",
                           "RevisionNotFound")
        lines = [json.loads(line) for line in self.body.decode().splitlines() if line.strip()]
        header = next((item["value"] for item in lines if item["key"] == "header"), None)
        if header is None:
            raise HubError(400, "commit has no header line")
        if header.get("parentCommit") and header["parentCommit"] != repo.branches[revision]:
            raise HubError(412, "A commit has happened since. Please refresh and try again.")
        regular, lfs, deleted = {}, {}, []
        for item in lines:
            key, value = item["key"], item["value"]
            if key == "file":
                regular[value["path"]] = base64.b64decode(value["content"])
            elif key == "lfsFile":
                if value["oid"] not in self.hub.blobs:
                    raise HubError(400, f"LFS object for {value['path']} was never uploaded")
                lfs[value["path"]] = StoredFile(value["oid"], value["size"], lfs=True)
            elif key in ("deletedFile", "deletedFolder"):
                deleted.append(value["path"])
        commit = self.hub.commit(repo, revision, header["summary"], header.get("description", ""),
                                 regular, lfs, tuple(deleted))
        prefix = URL_PREFIXES[repo.repo_type]
        return 200, {}, {"success": True, "commitOid": commit.oid, "pullRequestUrl": None,
                         "commitUrl": f"{self.hub.url}/{prefix}{repo.repo_id}/commit/{commit.oid}"}

    def _resolve(self, repo: Repo, revision: str, path: str):
        commit = self._commit(repo, revision)
        if repo.gated and self._role() is None:
            raise HubError(401, "Access to this gated repo needs an approved token", "GatedRepo")
        stored = commit.files.get(path)
        if stored is None:
            raise HubError(404, f"{path} does not exist at {revision}", "EntryNotFound")
        content = self.hub.blobs[stored.sha256]
        etag = stored.sha256 if stored.lfs else stored.blob_oid(content)
        headers = {"X-Repo-Commit": commit.oid, "ETag": f'"{etag}"', "Accept-Ranges": "bytes",
                   "Content-Type": "application/octet-stream", "Content-Length": len(content)}
        if stored.lfs:
            headers.update({"X-Linked-Etag": f'"{stored.sha256}"', "X-Linked-Size": stored.size})
        byte_range = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", ""))
        if not byte_range or len(content) == 0:
            return 200, headers, content
        start, end = byte_range.groups()
        first = int(start) if start else max(len(content) - int(end), 0)
        last = min(int(end), len(content) - 1) if start and end else len(content) - 1
        if first >= len(content):
            return 416, {"Content-Range": f"bytes */{len(content)}"}, b""
        part = content[first:last + 1]
        headers.update({"Content-Range": f"bytes {first}-{last}/{len(content)}",
                        "Content-Length": len(part)})
        return 206, headers, part


@contextmanager
def unused_endpoint():
    """An endpoint where nothing listens: connections are refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    yield f"http://127.0.0.1:{port}"


@contextmanager
def silent_endpoint():
    """An endpoint that accepts connections (kernel backlog) and never answers a byte."""
    with socket.create_server(("127.0.0.1", 0), backlog=64) as listener:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


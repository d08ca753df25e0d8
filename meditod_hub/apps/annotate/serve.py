"""`meditod annotate`: label dialogues in the browser, saving straight into a release folder.

    meditod annotate --source my-release                 # http://127.0.0.1:7861, no login
    meditod annotate --source new-folder --port 8000     # a new folder becomes an empty release
    meditod annotate --source my-release --nlu_model runs/tiny-llama/nlu --pol_model runs/tiny-llama/pol
    meditod annotate --source my-release --vocabulary canonical-values.txt   # flag new values
    # on a Hugging Face Docker Space (hf_oauth: true; HF_TOKEN secret with write access):
    meditod annotate --space --source seed-release --workdir /data/annotate \\
        --backup_repo my-org/meditod-annotations --host 0.0.0.0 --port 7860

Locally the app listens on 127.0.0.1 only and edits SOURCE in place (every committed edit is
saved at once). On another address (`--host 0.0.0.0`: annotators on the same network) every
request needs an access token, a new one at every start, printed once in the link to open and
never logged or written anywhere; and only this machine's names are accepted in the Host header
(`--allowed_hosts` adds others). On a Space, annotators log in with their Hub account, each
labels a copy of SOURCE, and the copies are committed to a private dataset repo every
`--backup_every` minutes.
"""

from __future__ import annotations

import ipaddress
import os
import secrets
import socket
from dataclasses import dataclass, field
from pathlib import Path

from meditod_hub.apps.annotate.assist import LabelSuggester
from meditod_hub.apps.annotate.vocabulary import parse_vocabulary
from meditod_hub.data.tasks import LABELLING_TASKS
from meditod_hub.endpoint import is_local_host
from meditod_hub.errors import MeditodError, UsageError
from meditod_hub.models.predictor import DecodeOptions, ModelSpec, load_predictor


@dataclass
class AnnotateArguments:
    source: str = field(default="annotation", metadata={
        "help": "release folder to label (dialogs.json + *_ids.json), or a new folder"})
    host: str = field(default="127.0.0.1", metadata={
        "help": "address to listen on; any other than 127.0.0.1 requires the access token the "
                "command prints"})
    allowed_hosts: str | None = field(default=None, metadata={
        "help": "comma-separated Host names the server answers to on a non-local --host "
                "(default: this machine's names and addresses)"})
    port: int = field(default=7861, metadata={"min": 0, "max": 65535,
                                              "help": "port to listen on (0: any free port)"})
    nlu_model: str | None = field(default=None, metadata={
        "help": "NLU run folder or Hub id: pre-fills patient utterances with its prediction"})
    nlu_family: str | None = field(default=None, metadata={
        "help": "family of --nlu_model when it has no run_info.json"})
    nlu_revision: str | None = field(default=None, metadata={
        "help": "--nlu_model's Hub revision (branch, tag, commit)"})
    pol_model: str | None = field(default=None, metadata={
        "help": "POL run folder or Hub id: pre-fills doctor utterances with its prediction"})
    pol_family: str | None = field(default=None, metadata={
        "help": "family of --pol_model when it has no run_info.json"})
    pol_revision: str | None = field(default=None, metadata={
        "help": "--pol_model's Hub revision (branch, tag, commit)"})
    vocabulary: str | None = field(default=None, metadata={
        "help": "canonical values to check medical fields against: one a line, or JSON (the "
                "release's own values always count; the page can load more)"})
    space: bool = field(default=False, metadata={
        "help": "run as a Hugging Face Space: Hub login, one folder per annotator, backups"})
    workdir: str = field(default="annotate-work", metadata={
        "help": "--space: where the annotators' folders live"})
    backup_repo: str | None = field(default=None, metadata={
        "help": "--space: PRIVATE dataset repo the annotators' folders are committed to"})
    backup_every: float = field(default=5.0, metadata={"above": 0,
        "help": "--space: minutes between backup commits"})
    timeout: float = field(default=30.0, metadata={"above": 0, "help": "HTTP timeout of Hub calls (seconds)"})


def listening_socket(host: str, port: int) -> socket.socket:
    """Bound and listening before the server starts, so a busy port is a one-line error, not a
    log, and the printed link answers at once (connections wait until the server accepts)."""
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port}: use 1-65535 (or 0 for any free port)")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise MeditodError(f"cannot listen on {host}:{port} ({exc.strerror}): pass another "
                           "PORT=... (make) or --port") from None
    sock.listen(128)
    return sock


def machine_hosts(host: str) -> list[str]:
    """The Host header values that name this machine: the bound address (every address: the
    machine's name, its fully qualified name and their addresses), and the loopback names."""
    # deferred: apps.annotate.server imports fastapi, starlette
    from meditod_hub.apps.annotate.server import LOOPBACK_HOSTS

    try:
        every = ipaddress.ip_address(host).is_unspecified
    except ValueError:  # a name
        every = False
    names = [] if every else [host]
    if every:
        names = [socket.gethostname(), socket.getfqdn()]
        try:
            names += [info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None)]
        except OSError:
            pass
    bracketed = [f"[{n}]" if ":" in n else n for n in names]
    return list(dict.fromkeys(bracketed + LOOPBACK_HOSTS))


def build_settings(args: AnnotateArguments):
    # deferred: apps.annotate.server imports fastapi, starlette
    from meditod_hub.apps.annotate.server import LOOPBACK_HOSTS, PortalSettings

    # suggestions decode under the CMAS grammar, as the assistant's turns do: each one parses
    assistant = LabelSuggester(*(
        load_predictor(ModelSpec(source, getattr(args, f"{task}_family"),
                                 getattr(args, f"{task}_revision"),
                                 decode=DecodeOptions(constrained=True)), task)
        if source else None
        for task, source in ((LABELLING_TASKS["patient"].name, args.nlu_model),
                             (LABELLING_TASKS["doctor"].name, args.pol_model))))
    source = Path(args.source)
    vocabulary = read_vocabulary(args.vocabulary) if args.vocabulary else frozenset()
    if not args.space:
        if is_local_host(args.host):
            return PortalSettings(source=source, assistant=assistant, vocabulary=vocabulary,
                                  allowed_hosts=LOOPBACK_HOSTS)
        named = [h.strip() for h in (args.allowed_hosts or "").split(",") if h.strip()]
        return PortalSettings(source=source, assistant=assistant, vocabulary=vocabulary,
                              allowed_hosts=named + machine_hosts(args.host),
                              access_token=secrets.token_urlsafe(24))
    if not os.environ.get("SPACE_ID"):
        raise UsageError("--space runs on a Hugging Face Space only (SPACE_ID is not set); "
                         "run without --space to annotate locally")
    if not args.backup_repo:
        raise UsageError("--space needs --backup_repo ORG/NAME (a private dataset repo): "
                         "without it annotations die with the Space")
    # deferred: apps.annotate.hosted imports huggingface_hub, httpx2
    from meditod_hub.apps.annotate.hosted import Backup

    workdir = Path(args.workdir)
    backup = Backup(args.backup_repo, workdir, args.backup_every, args.timeout)
    return PortalSettings(source=source if source.is_dir() else None, space=True,
                          workdir=workdir, assistant=assistant, backup=backup,
                          vocabulary=vocabulary)


def read_vocabulary(path: str) -> frozenset[str]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--vocabulary {path}: cannot read it ({exc}); give a text or JSON "
                         "file of canonical values") from None
    return frozenset(parse_vocabulary(text, path))

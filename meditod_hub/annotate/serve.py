"""`meditod annotate`: label dialogues in the browser, saving straight into a release folder.

    meditod annotate --source my-release                 # http://127.0.0.1:7861, no login
    meditod annotate --source new-folder --port 8000     # a new folder becomes an empty release
    meditod annotate --source my-release --nlu_model runs/tiny-llama/nlu --pol_model runs/tiny-llama/pol
    # on a Hugging Face Docker Space (hf_oauth: true; HF_TOKEN secret with write access):
    meditod annotate --space --source seed-release --workdir /data/annotate \\
        --backup_repo my-org/meditod-annotations --host 0.0.0.0 --port 7860

Locally the app listens on 127.0.0.1 only and edits SOURCE in place (every committed edit is
saved at once). On a Space, annotators log in with their Hub account, each labels a copy of
SOURCE, and the copies are committed to a private dataset repo every `--backup_every` minutes.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ..cli import parse_args
from ..errors import MeditodError, UsageError, run_main


@dataclass
class AnnotateArguments:
    source: str = field(default="annotation", metadata={
        "help": "release folder to label (dialogs.json + *_ids.json), or a new folder"})
    host: str = field(default="127.0.0.1", metadata={"help": "address to listen on"})
    port: int = field(default=7861, metadata={"help": "port to listen on (0: any free port)"})
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
    space: bool = field(default=False, metadata={
        "help": "run as a Hugging Face Space: Hub login, one folder per annotator, backups"})
    workdir: str = field(default="annotate-work", metadata={
        "help": "--space: where the annotators' folders live"})
    backup_repo: str | None = field(default=None, metadata={
        "help": "--space: PRIVATE dataset repo the annotators' folders are committed to"})
    backup_every: float = field(default=5.0, metadata={
        "help": "--space: minutes between backup commits"})
    timeout: float = field(default=30.0, metadata={"help": "HTTP timeout of Hub calls (seconds)"})


def listening_socket(host: str, port: int) -> socket.socket:
    """Bound before the server starts, so a busy port is a one-line error, not a log."""
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
    return sock


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def build_settings(args: AnnotateArguments):
    from ..predictor import ModelSpec, load_predictor
    from .app import LOOPBACK_HOSTS, AppSettings
    from .assist import Assistant

    assistant = Assistant(*(
        load_predictor(ModelSpec(source, getattr(args, f"{task}_family"),
                                 getattr(args, f"{task}_revision")), task) if source else None
        for task, source in (("nlu", args.nlu_model), ("pol", args.pol_model))))
    source = Path(args.source)
    if not args.space:
        return AppSettings(source=source, assistant=assistant,
                           allowed_hosts=LOOPBACK_HOSTS if is_loopback(args.host) else None)
    if not os.environ.get("SPACE_ID"):
        raise UsageError("--space runs on a Hugging Face Space only (SPACE_ID is not set); "
                         "run without --space to annotate locally")
    if not args.backup_repo:
        raise UsageError("--space needs --backup_repo ORG/NAME (a private dataset repo): "
                         "without it annotations die with the Space")
    from .space import Backup

    workdir = Path(args.workdir)
    backup = Backup(args.backup_repo, workdir, args.backup_every, args.timeout)
    return AppSettings(source=source if source.is_dir() else None, space=True, workdir=workdir,
                       assistant=assistant, backup=backup)


def main(argv: list[str]) -> int:
    import uvicorn

    from .app import create_app

    (args,) = parse_args([AnnotateArguments], argv, "meditod annotate", __doc__.split("\n\n")[0])
    sock = listening_socket(args.host, args.port)
    settings = build_settings(args)
    app = create_app(settings)
    host, port = sock.getsockname()[:2]
    where = f"[{host}]" if ":" in host else host
    if not args.space and not is_loopback(args.host):
        print(f"warning: no login locally and listening on {args.host}: anyone who reaches "
              "this port can edit the release", file=sys.stderr)
    print(f"annotating {settings.source or settings.workdir}: open http://{where}:{port}/ "
          "(every committed edit is saved at once; Ctrl+C stops)", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    try:
        server.run(sockets=[sock])
    finally:
        if settings.backup is not None:
            settings.backup.push_now()
            settings.backup.stop()
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main))

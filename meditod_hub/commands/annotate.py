"""`meditod annotate`: the flags of `AnnotateArguments` -> the portal's settings
(`apps.annotate.serve`), served by uvicorn until Ctrl+C."""

from __future__ import annotations

import ipaddress
import sys

from meditod_hub.apps.annotate import serve
from meditod_hub.apps.annotate.serve import AnnotateArguments
from meditod_hub.arguments import parse_args
from meditod_hub.errors import run_main


def main(argv: list[str]) -> int:
    # uvicorn and the portal (FastAPI) load only to serve, not for -h
    import uvicorn

    from meditod_hub.apps.annotate.server import create_app

    (args,) = parse_args([AnnotateArguments], argv, "meditod annotate",
                         serve.__doc__.split("\n\n")[0])
    sock = serve.listening_socket(args.host, args.port)
    settings = serve.build_settings(args)
    app = create_app(settings)
    host, port = sock.getsockname()[:2]
    where = f"[{host}]" if ":" in host else host
    link = f"http://{where}:{port}/"
    if settings.access_token:
        names = settings.allowed_hosts[0] if ipaddress.ip_address(host).is_unspecified else where
        link = f"http://{names}:{port}/?token={settings.access_token}"
        print(f"warning: listening on {args.host}: whoever has this link can read the dialogues "
              "and edit the release; share it with your annotators only, over a trusted network "
              "(plain http). Host names answered: " + ", ".join(settings.allowed_hosts)
              + " (--allowed_hosts adds others)", file=sys.stderr)
    print(f"annotating {settings.source or settings.workdir}: open {link} "
          "(every committed edit is saved at once; Ctrl+C stops)", flush=True)
    # log_config=None: uvicorn's own dictConfig would close every logging handler already
    # installed in the process (absl's, from rouge_score, closes the stream it writes to).
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False,
                                           log_config=None))
    try:
        server.run(sockets=[sock])
    finally:
        if settings.backup is not None:
            settings.backup.push_now()
            settings.backup.stop()
    return 0


if __name__ == "__main__":
    sys.exit(run_main(main, sys.argv[1:]))

"""The annotation app: a FastAPI server for one static page (`static/`), local or on a Space.

Why FastAPI and a static page rather than Gradio: the questionnaire is a variable tree (items ->
slots -> entries -> one question per attribute) with keyboard navigation, autocompletion and
suggestion badges, which plain DOM code states directly and a browser test can drive; saving
needs HTTP semantics Gradio hides (a version check answered 409, an atomic write per request);
and `huggingface_hub.attach_huggingface_oauth` gives FastAPI the same Hub login a Gradio Space has.
The same app runs locally (127.0.0.1, no login), on a network address (every request needs the
access token `meditod annotate` prints once at start: opening `/?token=...` sets it as a cookie,
or an API client sends it as `Authorization: Bearer ...`; and the Host header must name this
machine), and as a Docker Space (Hub login, one folder per annotator, private backups:
`hosted.py`).

Every label passes through the server: the state fold, validation and suggestions are the
dataset layer's own code, never a port of it to JavaScript.
"""

from __future__ import annotations

import secrets
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel
from starlette.middleware.trustedhost import TrustedHostMiddleware

from meditod_hub import strictjson
from meditod_hub.apps.annotate.assist import LabelSuggester
from meditod_hub.apps.annotate.labels import problem_dict, states_after
from meditod_hub.apps.annotate.schema import schema
from meditod_hub.apps.annotate.store import ReleaseStore, UnknownDialogue
from meditod_hub.apps.annotate.versions import SaveConflict
from meditod_hub.data.release import SPLITS
from meditod_hub.errors import MeditodError

STATIC = Path(__file__).resolve().parent / "static"
LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "[::1]"]
TOKEN_COOKIE = "meditod_annotate_token"


class LabelsBody(BaseModel):
    labels: list[Any]


class SaveBody(LabelsBody):
    version: str
    origins: list[Any] | None = None
    overwrite: bool = False


class SuggestBody(LabelsBody):
    uttr_id: int


class ImportBody(BaseModel):
    text: str
    name: str = "transcript"
    dialogue_id: str | None = None
    split: str | None = None


class VocabularyBody(BaseModel):
    text: str
    name: str = "vocabulary"


class SplitBody(BaseModel):
    split: str | None = None


def hub_username(request: Request) -> str | None:
    """The logged-in Hub account (Space OAuth session), or None."""
    # deferred: huggingface_hub is slow to import
    from huggingface_hub import parse_huggingface_oauth

    info = parse_huggingface_oauth(request)
    return info.user_info.preferred_username if info else None


@dataclass
class PortalSettings:
    source: Path | None                   # local: the folder edited; Space: each annotator's start
    space: bool = False
    workdir: Path | None = None           # Space: where annotators' folders live
    assistant: LabelSuggester = field(default_factory=LabelSuggester)
    backup: Any = None                    # space.Backup, or None
    identify: Callable[[Request], str | None] = hub_username
    allowed_hosts: list[str] | None = None  # None: any (a Space sits behind the Hub's proxy)
    access_token: str | None = None       # required of every request (a non-local bind)
    vocabulary: frozenset[str] = frozenset()  # canonical values given at start (--vocabulary)


def token_guard(app: FastAPI, token: str) -> None:
    """Every request must carry `token`: a cookie set by opening `/?token=...` (the link the
    command prints), or `Authorization: Bearer ...`. Reading is guarded as much as writing."""

    def carries(request: Request) -> bool:
        bearer = request.headers.get("authorization", "")
        offered = [request.cookies.get(TOKEN_COOKIE, ""),
                   bearer[7:] if bearer.lower().startswith("bearer ") else ""]
        return any(secrets.compare_digest(o.encode(), token.encode()) for o in offered if o)

    @app.middleware("http")
    async def require_token(request: Request, call_next):
        link = request.query_params.get("token")
        if request.url.path == "/" and link and secrets.compare_digest(link.encode(),
                                                                          token.encode()):
            response = RedirectResponse("/", status_code=303)  # the token leaves the address bar
            response.set_cookie(TOKEN_COOKIE, token, httponly=True, samesite="strict")
            return response
        if not carries(request):
            return JSONResponse({"detail": "this annotation server needs its access link: open "
                                           "the address with ?token=... that `meditod annotate` "
                                           "printed when it started"}, status_code=401)
        return await call_next(request)


def _holds_non_text(value) -> bool:
    """Whether a JSON value holds a string that is not Unicode text: a lone surrogate (valid
    JSON, `"\\ud800"`) that no file, and no JSON answer quoting it, can be written with."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_holds_non_text(k) or _holds_non_text(v) for k, v in value.items())
    return isinstance(value, list) and any(_holds_non_text(v) for v in value)


def text_guard(app: FastAPI) -> None:
    """Refuse (400) a request body holding a lone surrogate, NaN or Infinity, or JSON nested
    past what Python reads, before any route reads it: written into a dialogue, the first would
    fail every later save until a restart; the others failed as 500s."""

    @app.middleware("http")
    async def require_text(request: Request, call_next):
        if request.method in ("POST", "PUT"):
            try:
                body = strictjson.loads(await request.body())
                non_text = _holds_non_text(body)
            except RecursionError:
                return JSONResponse({"detail": "the request's JSON is nested too deeply: nothing "
                                               "was saved"}, status_code=400)
            except strictjson.NotJsonNumber as exc:
                return JSONResponse({"detail": f"the request holds {exc}: nothing was saved"},
                                    status_code=400)
            except ValueError:
                non_text = False  # not JSON: the route's own validation answers
            if non_text:
                return JSONResponse({"detail": "the request holds text that is not valid Unicode "
                                               "(a lone surrogate, \\ud800-\\udfff): nothing was "
                                               "saved; remove that character and try again"},
                                    status_code=400)
        return await call_next(request)


def create_app(settings: PortalSettings) -> FastAPI:
    app = FastAPI(title="MediTOD annotation", docs_url=None, redoc_url=None, openapi_url=None)
    text_guard(app)  # added first: runs after the token and Host checks below
    if settings.access_token:  # added first, so the Host check below runs before it
        token_guard(app, settings.access_token)
    if settings.allowed_hosts:  # a page on another site cannot reach the local app by DNS tricks
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=settings.allowed_hosts)
    write_lock = settings.backup.lock if settings.backup else None
    stores: dict[str, ReleaseStore] = {}
    if not settings.space:
        stores[""] = ReleaseStore(settings.source, write_lock, settings.vocabulary)
    else:
        # deferred: huggingface_hub is slow to import
        from huggingface_hub import attach_huggingface_oauth

        # deferred: apps.annotate.hosted imports huggingface_hub, httpx2
        from meditod_hub.apps.annotate.hosted import annotator_folder, seed_annotator

        with warnings.catch_warnings():  # "experimental": known, and pinned by the tests
            warnings.simplefilter("ignore", UserWarning)
            attach_huggingface_oauth(app)

    def session(request: Request) -> tuple[ReleaseStore, str | None]:
        if not settings.space:
            return stores[""], None
        user = settings.identify(request)
        if user is None:
            raise HTTPException(401, "log in with your Hugging Face account first")
        if user not in stores:
            folder = annotator_folder(settings.workdir, user)
            seed_annotator(settings.source, folder)
            stores[user] = ReleaseStore(folder, write_lock, settings.vocabulary)
        return stores[user], user

    @app.exception_handler(SaveConflict)
    async def conflict(request: Request, exc: SaveConflict):
        return JSONResponse({"detail": str(exc), "utterances": exc.utterances}, status_code=409)

    @app.exception_handler(MeditodError)
    async def refused(request: Request, exc: MeditodError):
        return JSONResponse({"detail": str(exc)}, status_code=400)

    @app.exception_handler(UnknownDialogue)
    async def missing(request: Request, exc: UnknownDialogue):
        return JSONResponse({"detail": str(exc)}, status_code=404)

    @app.get("/", include_in_schema=False)
    def index():
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    @app.get("/guide", include_in_schema=False)
    def guide():
        return FileResponse(STATIC / "guide.html", headers={"Cache-Control": "no-store"})

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/api/config")
    def config(request: Request):
        user = settings.identify(request) if settings.space else None
        return {"space": settings.space, "user": user,
                "login_url": "/oauth/huggingface/login" if settings.space else None,
                "logout_url": "/oauth/huggingface/logout" if settings.space else None,
                "models": settings.assistant.describe(),
                "source": (settings.source.name if settings.source else None),
                "splits": list(SPLITS)}

    @app.get("/api/schema")
    def get_schema():
        return schema()

    @app.get("/api/dialogues")
    def dialogues(request: Request):
        store, _ = session(request)
        return {"dialogues": store.summaries()}

    @app.get("/api/values")
    def values(request: Request):
        store, _ = session(request)
        return store.values()

    @app.get("/api/dialogues/{dialogue_id}")
    def open_dialogue(dialogue_id: str, request: Request):
        store, _ = session(request)
        return store.open(dialogue_id)

    @app.post("/api/dialogues/{dialogue_id}/states")
    def states(dialogue_id: str, body: LabelsBody, request: Request):
        store, _ = session(request)
        dialogue, problems = store.preview(dialogue_id, body.labels)
        errors = any(p.error for p in problems)
        return {"states": None if errors else states_after(dialogue),
                "problems": [problem_dict(p) for p in problems]}

    @app.put("/api/dialogues/{dialogue_id}")
    def save(dialogue_id: str, body: SaveBody, request: Request):
        store, user = session(request)
        result = store.save(dialogue_id, body.labels, body.version, body.origins,
                            body.overwrite, annotator=user, models=settings.assistant.describe())
        errors = sum(p.error for p in result.problems)
        if result.draft:
            message = f"saved as a draft: {errors} error(s) to fix before the release builds"
        elif result.written:
            message = "saved"
        else:
            message = "no change to save"
        if result.merged:
            message += (" (merged with a save made elsewhere since you opened it: utterance(s) "
                        + ", ".join(map(str, result.merged)) + " come from it)")
        return {"version": result.version, "written": result.written, "draft": result.draft,
                "merged": result.merged, "message": message,
                "merged_labels": {str(u): {"label": result.labels[u], "origins": result.origins[u]}
                                  for u in result.merged},
                "problems": [problem_dict(p) for p in result.problems]}

    @app.post("/api/dialogues/{dialogue_id}/suggest")
    def suggest(dialogue_id: str, body: SuggestBody, request: Request):
        store, _ = session(request)
        dialogue, problems = store.preview(dialogue_id, body.labels)
        if not 0 <= body.uttr_id < len(dialogue["utterances"]):
            raise HTTPException(404, f"no utterance {body.uttr_id} in dialogue {dialogue_id}")
        if any(p.error for p in problems):
            return {"suggestion": None, "reason": "the labels have errors: fix them first"}
        found = settings.assistant.suggest(dialogue_id, dialogue, body.uttr_id)
        if found is None:
            return {"suggestion": None, "reason": "no model for this speaker"}
        return {"suggestion": found.label, "parse_ok": found.parse_ok, "reason": found.reason,
                "model": found.model}

    @app.post("/api/import")
    def import_transcript(body: ImportBody, request: Request):
        store, _ = session(request)
        return {"id": store.import_transcript(body.text, body.name, body.dialogue_id or None,
                                              body.split or None)}

    @app.post("/api/vocabulary")
    def load_vocabulary(body: VocabularyBody, request: Request):
        store, _ = session(request)
        added = store.add_vocabulary(body.text, body.name)
        return {"added": added, "size": len(store.vocabulary())}

    @app.put("/api/dialogues/{dialogue_id}/split")
    def split(dialogue_id: str, body: SplitBody, request: Request):
        store, _ = session(request)
        store.assign_split(dialogue_id, body.split)
        return {"split": body.split}

    return app

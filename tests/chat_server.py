"""A small OpenAI-compatible chat server on 127.0.0.1 that misbehaves on demand.

A real server (tests use `transformers serve`) will not answer 429 or hang when asked to; this
one does, so the client's retries, timeouts, deadline and cache can be tested. It answers
`POST /v1/chat/completions` and `/v1/completions` with a deterministic echo (`answer_for`), and
`GET /v1/models`. Faults are scripted per request, in arrival order:

    with ChatServer(faults=["429", "500", "hang", "truncated", "nonjson"], delay=0.0) as server:
        server.url  # http://127.0.0.1:<port>/v1

`429` (with `Retry-After: 1` unless `retry_after` says otherwise), `500`, `401`, `404`, `hang`
(reads the request and never answers until the server stops), `truncated` (a 200 whose body is
cut short of its Content-Length), `nonjson` (a 200 with an HTML body), `ok`. After the script
every request is `ok`. `delay` seconds pass before each ok answer (the bench's fixed latency);
`max_in_flight` is the most ok answers ever being prepared at once. `reply` starts every answer
(two servers that serve the same model name answer differently); `port` 0 takes any free port,
a given one lets a restarted server stand at the same URL; `max_model_len`, when given, is
listed with every model, as vLLM reports its context window.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def answer_for(body: dict, reply: str = "echo") -> str:
    """The deterministic reply to a request: a hash of its last message or prompt."""
    last = body["messages"][-1]["content"] if "messages" in body else body["prompt"]
    return f"{reply} " + hashlib.sha256(last.encode()).hexdigest()[:12]


class _QuietServer(ThreadingHTTPServer):
    """A client that gives up on a request (a cancelled batch) is not a server error."""

    daemon_threads = True

    def handle_error(self, request, client_address):
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class ChatServer:
    def __init__(self, faults: Iterable[str] = (), delay: float = 0.0, retry_after: str = "1",
                 models: Iterable[str] = ("stub-model",), reply: str = "echo", port: int = 0,
                 max_model_len: int | None = None):
        self.reply = reply
        self.max_model_len = max_model_len
        self.faults = list(faults)
        self.delay = delay
        self.retry_after = retry_after
        self.models = list(models)
        self.received: list[dict] = []   # every request body, faults included
        self.headers: list[dict] = []    # their headers
        self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._server = _QuietServer(("127.0.0.1", port), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def _next_fault(self, body: dict, headers: dict) -> str:
        with self._lock:
            self.received.append(body)
            self.headers.append(headers)
            return self.faults.pop(0) if self.faults else "ok"

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body leave at once, as real servers do

            def log_message(self, *args):  # keep test output clean
                pass

            def _send(self, status: int, payload: bytes, content_type="application/json",
                      headers: dict | None = None, length: int | None = None):
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload) if length is None else length))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
                self.wfile.flush()

            def _error(self, status: int, message: str, headers: dict | None = None):
                body = json.dumps({"error": {"message": message, "type": "test", "code": status}})
                self._send(status, body.encode(), headers=headers)

            def do_GET(self):
                if self.path.rstrip("/") == "/v1/models":
                    length = ({"max_model_len": server.max_model_len}
                              if server.max_model_len else {})
                    data = [{"id": m, "object": "model", "created": 0, "owned_by": "test",
                             **length} for m in server.models]
                    self._send(200, json.dumps({"object": "list", "data": data}).encode())
                else:
                    self._error(404, "not found")

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fault = server._next_fault(body, dict(self.headers))
                if fault == "hang":
                    server._stop.wait()
                    self.close_connection = True
                    return
                if fault == "429":
                    self._error(429, "rate limited", {"Retry-After": server.retry_after})
                elif fault in ("500", "401"):
                    self._error(int(fault), "scripted failure")
                elif fault == "404" or body.get("model") not in server.models:
                    self._error(404, f"The model `{body.get('model')}` does not exist.")
                elif fault == "nonjson":
                    self._send(200, b"<html>upstream proxy error</html>", "text/html")
                else:
                    self._answer(body, truncated=fault == "truncated")

            def _answer(self, body: dict, truncated: bool):
                with server._lock:
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                if server.delay:
                    time.sleep(server.delay)
                with server._lock:
                    server.in_flight -= 1
                text = answer_for(body, server.reply)
                usage = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
                if "messages" in body:
                    choice = {"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": text}}
                    kind = "chat.completion"
                else:
                    choice = {"index": 0, "finish_reason": "stop", "text": text, "logprobs": None}
                    kind = "text_completion"
                payload = json.dumps({"id": "x", "object": kind, "created": 0,
                                      "model": body["model"], "choices": [choice],
                                      "usage": usage}).encode()
                if truncated:
                    self._send(200, payload[:len(payload) // 2], length=len(payload))
                    self.close_connection = True
                else:
                    self._send(200, payload)

        return Handler

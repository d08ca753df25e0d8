"""A slow HTTP peer on 127.0.0.1: it answers every request, but as slowly as asked.

    with SlowPeer(Shape(drip_s=0.2, endless=True)) as peer:
        peer.url  # http://127.0.0.1:<port>

`Shape`: `first_byte_s` before anything is sent; then the whole answer (status line, headers
and body; the body alone with `fast_head`) leaves `chunk` bytes at a time, `drip_s` seconds
apart (0: at once); the body is
`length` bytes of `body` (padded with spaces: a JSON body stays valid), with a Content-Length
when `declare_length`, else chunked; `endless`: a chunked body that never ends. Every answer
ends when the server stops, the client leaves, or after `MAX_S` seconds: each loop is bounded
in count and time. `requests` holds each request's (method, path).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass

MAX_S = 60.0          # no answer is served longer than this
MAX_PIECES = 1 << 20  # nor in more pieces than this
COMPLETION = {"id": "x", "object": "chat.completion", "created": 0, "model": "stub-model",
              "choices": [{"index": 0, "finish_reason": "stop",
                           "message": {"role": "assistant", "content": "ok"}}],
              "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


@dataclass(frozen=True)
class Shape:
    first_byte_s: float = 0.0
    drip_s: float = 0.0
    chunk: int = 1
    length: int = 0            # body bytes (at least the body's own length)
    endless: bool = False
    declare_length: bool = True
    fast_head: bool = False
    body: bytes = json.dumps(COMPLETION).encode()
    content_type: bytes = b"application/json"

    def pieces(self):
        """The answer's bytes, `chunk` at a time: finite, or endless (bounded by MAX_PIECES)."""
        body = self.body + b" " * max(0, self.length - len(self.body))
        head = b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nConnection: close\r\n" % self.content_type
        if self.endless or not self.declare_length:
            head += b"Transfer-Encoding: chunked\r\n\r\n"
            framed = b"%x\r\n%s\r\n" % (len(body), body)
            data = framed if self.endless else framed + b"0\r\n\r\n"
        else:
            head += b"Content-Length: %d\r\n\r\n" % len(body)
            data = body
        if self.fast_head:
            yield head
        else:
            data = head + data
        for start in range(0, len(data), self.chunk):
            yield data[start:start + self.chunk]
        if self.endless:
            filler = b"%x\r\n%s\r\n" % (self.chunk, b" " * self.chunk)
            for _ in range(MAX_PIECES):
                yield filler


class SlowPeer:
    def __init__(self, shape: Shape, paths: dict[str, Shape] | None = None):
        self.shape, self.paths = shape, paths or {}  # path prefix -> its own shape
        self.requests: list[tuple[str, str]] = []
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=64)
        self._listener.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> SlowPeer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._listener.close()
        self._thread.join(5)

    def _serve(self) -> None:
        for _ in range(int(MAX_S * 20) * 10):  # bounded: at most ten minutes of accepting
            if self._stop.is_set():
                return
            try:
                conn, _ = self._listener.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _read_request(self, conn: socket.socket) -> tuple[str, str] | None:
        data = b""
        conn.settimeout(5)
        while b"\r\n\r\n" not in data and len(data) < 1 << 16:
            piece = conn.recv(4096)
            if not piece:
                return None
            data += piece
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path = lines[0].split(" ")[:2]
        length = next((int(line.split(":", 1)[1]) for line in lines[1:]
                       if line.lower().startswith("content-length:")), 0)
        while len(rest) < length:
            piece = conn.recv(min(65536, length - len(rest)))
            if not piece:
                break
            rest += piece
        return method, path

    def _answer(self, conn: socket.socket) -> None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # each piece leaves at once
        with conn:
            try:
                request = self._read_request(conn)
            except OSError:
                return
            if request is None:
                return
            self.requests.append(request)
            shape = next((s for prefix, s in self.paths.items() if request[1].startswith(prefix)),
                         self.shape)
            ends = time.monotonic() + MAX_S
            if self._stop.wait(shape.first_byte_s):
                return
            try:
                for n, piece in enumerate(shape.pieces()):
                    if time.monotonic() > ends or (shape.drip_s and (n or not shape.fast_head)
                                                   and self._stop.wait(shape.drip_s)):
                        return
                    if self._stop.is_set():
                        return
                    conn.sendall(piece)
                    if shape.endless and not shape.drip_s:
                        time.sleep(0.0005)  # an endless body, fast, without taking a whole core
            except OSError:  # the client gave up
                return

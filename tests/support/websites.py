"""A local web site for web_fetch's tests: ``http.server`` on 127.0.0.1, port 0, in its own threads,
answering the routes a test gives it and recording every request it gets (path and headers).

Usage::

    with Site() as site:
        site.route("/page", body=b"<html>…", content_type="text/html")
        site.route("/moved", status=302, headers={"Location": "/page"})
        ... site.url("/page") ...
        assert site.paths() == ["/page"]

A route may ``stream`` without end (chunks until the client goes away: only a bound on the reader
ends the fetch) or wait on a ``hold`` event before answering (released by the test; the server's
wait has its own deadline, so a test that fails never leaves it hanging). Nothing sleeps.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self

__all__ = ["Route", "Seen", "Site"]

HOLD_DEADLINE = 60.0


@dataclass
class Route:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    stream: bool = False  # send ``body`` over and over until the client closes the connection
    hold: threading.Event | None = None  # answer only once this is set


@dataclass(frozen=True)
class Seen:
    path: str
    headers: dict[str, str]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        site = self.server.site
        site.record(Seen(self.path, {k.lower(): v for k, v in self.headers.items()}))
        route = site.routes.get(self.path.split("?", 1)[0])
        if route is None:
            route = Route(status=404, body=b"no such page", headers={"Content-Type": "text/plain"})
        if route.hold is not None:
            route.hold.wait(HOLD_DEADLINE)
        self.send_response(route.status)
        for key, value in route.headers.items():
            self.send_header(key, value)
        try:
            if route.stream:
                self.send_header("Connection", "close")
                self.end_headers()
                while True:
                    self.wfile.write(route.body)
            self.send_header("Content-Length", str(len(route.body)))
            self.end_headers()
            self.wfile.write(route.body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    site: Site


class Site:
    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self._seen: list[Seen] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.site = self
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="site", daemon=True
        )

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        for route in self.routes.values():
            if route.hold is not None:
                route.hold.set()
        self._server.shutdown()
        self._server.server_close()

    def route(
        self,
        path: str,
        body: bytes | str = b"",
        *,
        status: int = 200,
        content_type: str | None = "text/html; charset=utf-8",
        headers: dict[str, str] | None = None,
        stream: bool = False,
        hold: threading.Event | None = None,
    ) -> None:
        data = body.encode() if isinstance(body, str) else body
        all_headers = {"Content-Type": content_type} if content_type else {}
        all_headers.update(headers or {})
        self.routes[path] = Route(status, data, all_headers, stream, hold)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def record(self, seen: Seen) -> None:
        with self._lock:
            self._seen.append(seen)

    @property
    def seen(self) -> list[Seen]:
        with self._lock:
            return list(self._seen)

    def paths(self) -> list[str]:
        return [s.path for s in self.seen]

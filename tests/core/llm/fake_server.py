"""A tiny OpenAI-compatible chat server on 127.0.0.1 (ephemeral port), in a thread.

Replies ``"echo: <last user message>"`` (or ``reply_fn(messages)``) with usage ``prompt_tokens`` = characters of all
messages and ``completion_tokens`` = characters of the reply. Special user messages:
``"slow:<seconds>"`` sleeps before answering; ``"bad-request"`` answers 400. ``failures`` is a
queue of statuses answered (in order) before any normal reply, e.g. ``[429, 500]``;
``retry_after`` is the Retry-After header sent with a 429. ``raw_body`` (bytes), when set, is
answered with status 200 to every chat request instead of a completion (a broken proxy, an HTML
error page). The server counts requests and the largest number in flight at once.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeServer:
    def __init__(self, models: tuple[str, ...] = ("fake-model",), delay_s: float = 0.0,
                 reply_fn=None) -> None:
        self.models = models
        self.reply_fn = reply_fn  # messages -> reply text (default: the echo)
        self.delay_s = delay_s
        self.failures: deque[int] = deque()
        self.retry_after: str | None = None
        self.raw_body: bytes | None = None
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @property
    def n_chat_requests(self) -> int:
        with self.lock:
            return sum(1 for r in self.requests if r.get("path", "").endswith("/chat/completions"))

    def __enter__(self) -> FakeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out
                    pass

            def do_GET(self) -> None:
                with server.lock:
                    server.requests.append({"path": self.path})
                if self.path.endswith("/models"):
                    self._send(200, {"object": "list",
                                     "data": [{"id": m, "object": "model"} for m in server.models]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    body["path"] = self.path
                    server.requests.append(body)
                    server.headers.append(dict(self.headers))
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    status = server.failures.popleft() if server.failures else 200
                try:
                    last = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
                    if server.delay_s:
                        time.sleep(server.delay_s)
                    if last.startswith("slow:"):
                        time.sleep(float(last[5:]))
                    if status != 200:
                        headers = {"Retry-After": server.retry_after} if (
                            status == 429 and server.retry_after is not None) else {}
                        self._send(status, {"error": {"message": f"scripted {status}"}}, headers)
                        return
                    if server.raw_body is not None:
                        self.send_response(200)
                        self.send_header("Content-Type", "text/html")
                        self.send_header("Content-Length", str(len(server.raw_body)))
                        self.end_headers()
                        self.wfile.write(server.raw_body)
                        return
                    if last == "bad-request":
                        self._send(400, {"error": {"message": "model 'x' does not exist"}})
                        return
                    reply = server.reply_fn(body["messages"]) if server.reply_fn else f"echo: {last}"
                    for s in body.get("stop") or []:
                        if s in reply:
                            reply = reply[: reply.index(s)]
                    choice = {"index": 0, "finish_reason": "stop",
                              "message": {"role": "assistant", "content": reply}}
                    if body.get("logprobs"):
                        choice["logprobs"] = {"content": [
                            {"token": ch, "logprob": -0.5 * (i + 1), "top_logprobs": []}
                            for i, ch in enumerate(reply[:3])]}
                    prompt = sum(len(m["content"]) for m in body["messages"])
                    self._send(200, {"id": "x", "object": "chat.completion", "model": body["model"],
                                     "choices": [choice],
                                     "usage": {"prompt_tokens": prompt,
                                               "completion_tokens": len(reply),
                                               "total_tokens": prompt + len(reply)}})
                finally:
                    with server.lock:
                        server.in_flight -= 1

        return Handler

"""A scripted stand-in for llama-server (stdlib HTTP in a thread), for the pool and retry logic.

It speaks the endpoints ServerClient uses: /props, /slots, /health, /tokenize (with pieces: one
token per character, special tokens split out first as llama.cpp does), /detokenize and a
streaming /completion whose reply text and failure mode each test chooses.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@dataclass
class Behaviour:
    reply: list[str] = field(default_factory=lambda: ["Hello", " there"])
    status: int = 200
    """Status of /completion (500: the pool must go elsewhere)."""
    break_after: int | None = None
    """Close the connection after this many pieces, without the closing event."""
    busy_slots: int = 0
    """How many slots /slots reports as processing."""
    probs: bool = False
    """Send ``completion_probabilities`` with each piece."""
    raw: list[bytes] | None = None
    """Pieces sent as raw bytes inside the event's JSON string (invalid UTF-8 included)."""
    slots_answer: bytes | None = None
    """A body /slots answers with instead of the slot list (garbage)."""
    continuation: list[str] | None = None
    """The reply to a request whose prompt ends in token ids (a switched reply's second one)."""
    refuse: Callable[[dict[str, Any]], bool] | None = None
    """Requests this returns True for are answered 400 (a grammar the server rejects)."""


class FakeServer:
    def __init__(
        self,
        *,
        slots: int = 2,
        model: str = "/models/fake.gguf",
        template: str = TEMPLATE,
        bos: str = "",
        adds_bos: bool = False,
        special: dict[str, bool] | None = None,
        known_chars: str | None = None,
    ) -> None:
        self.behaviour = Behaviour()
        self.requests: list[dict[str, Any]] = []
        self.slots = slots
        self.model = model
        self.template = template
        self.bos = bos
        self.adds_bos = adds_bos
        """/tokenize with ``add_special`` answers one token more, as a BOS-adding tokenizer."""
        self.special = dict(special or {})
        """Special token text -> whether it is a control token (split out only with
        ``parse_special``; user-defined ones always are)."""
        self.known_chars = known_chars
        """The characters plain tokens hold (``None``: byte-level, every character)."""
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, obj: Any, status: int = 200) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/props":
                    self._json(
                        {
                            "total_slots": outer.slots,
                            "model_path": outer.model,
                            "chat_template": outer.template,
                            "bos_token": outer.bos,
                            "eos_token": "<|im_end|>",
                        }
                    )
                elif self.path == "/slots":
                    b = outer.behaviour
                    if b.slots_answer is not None:
                        self.send_response(200)
                        self.send_header("Content-Length", str(len(b.slots_answer)))
                        self.end_headers()
                        self.wfile.write(b.slots_answer)
                        return
                    self._json(
                        [{"id": i, "is_processing": i < b.busy_slots} for i in range(outer.slots)]
                    )
                else:
                    self._json({"status": "ok"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if self.path in ("/tokenize", "/detokenize"):
                    self._json(outer.tokenizer_answer(self.path, body))
                    return
                outer.requests.append(body)
                b = outer.behaviour
                if b.refuse is not None and b.refuse(body):
                    self._json({"error": {"code": 400, "message": "bad grammar"}}, 400)
                    return
                if b.status != 200:
                    self._json({"error": {"code": b.status, "message": "boom"}}, b.status)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                slot = body.get("id_slot", -1)
                slot = slot if slot >= 0 else 0
                for i, data in enumerate(b.raw or []):
                    head = f'data: {{"stop": false, "tokens_predicted": {i + 1}, "content": "'
                    self.wfile.write(head.encode() + data + b'"}\n\n')
                    self.wfile.flush()
                limit = int(body.get("n_predict", -1))
                script = b.continuation if isinstance(body["prompt"], list) else b.reply
                script = b.reply if script is None else script
                cut = 0 <= limit <= len(script)  # n_predict reached: stop_type "limit"
                reply = script[:limit] if cut else script
                for i, piece in enumerate(reply):
                    if b.break_after is not None and i >= b.break_after:
                        self.wfile.flush()
                        self.close_connection = True
                        return
                    event: dict[str, Any] = {
                        "content": piece,
                        "stop": False,
                        "tokens_predicted": i + 1,
                        "tokens": [1000 + i],
                    }
                    if b.probs:
                        alt = {"token": piece, "logprob": -0.5, "bytes": list(piece.encode())}
                        event["completion_probabilities"] = [{**alt, "top_logprobs": [alt, alt]}]
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                    self.wfile.flush()
                final = {
                    "content": "",
                    "stop": True,
                    "id_slot": slot,
                    "tokens_predicted": len(reply) + len(b.raw or []),
                    "tokens_evaluated": 7,
                    "stop_type": "limit" if cut else "eos",
                    "stopping_word": "",
                    "timings": {"prompt_n": 3},
                }
                self.wfile.write(f"data: {json.dumps(final)}\n\n".encode())
                self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def tokenizer_answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if path == "/detokenize":
            return {"content": "".join(self.piece(t) for t in body["tokens"])}
        if body.get("with_pieces"):
            return {"tokens": self.tokenize(body["content"], bool(body.get("parse_special", 1)))}
        extra = [0] if self.adds_bos and body.get("add_special") else []
        return {"tokens": [*extra, 1]}

    def piece(self, token: int) -> str:
        specials = sorted(self.special)
        if token >= 2_000_000:
            return specials[token - 2_000_000]
        return "<unk>" if token == 0 else chr(token)

    def tokenize(self, text: str, parse_special: bool) -> list[dict[str, Any]]:
        specials = sorted(self.special)
        usable = [s for s in specials if parse_special or not self.special[s]]
        out: list[dict[str, Any]] = []
        at = 0
        while at < len(text):
            hit = max((s for s in usable if text.startswith(s, at)), key=len, default="")
            if hit:
                out.append({"id": 2_000_000 + specials.index(hit), "piece": hit})
                at += len(hit)
                continue
            char = text[at]
            known = self.known_chars is None or char in self.known_chars
            out.append({"id": ord(char), "piece": char} if known else {"id": 0, "piece": "<unk>"})
            at += 1
        return out

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> FakeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

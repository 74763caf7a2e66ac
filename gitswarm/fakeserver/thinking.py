"""Signed thinking blocks: the fake signs its thinking text and checks what clients send back."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets


class Signer:
    """Signs thinking text with an HMAC under a per-server secret, as Anthropic's opaque
    `signature` lets the API tell its own thinking blocks from edited or invented ones."""

    def __init__(self, secret: bytes | None = None) -> None:
        self.secret = secret or secrets.token_bytes(32)

    def sign(self, text: str) -> str:
        """The signature of this thinking text."""
        mac = hmac.new(self.secret, text.encode(), hashlib.sha256).digest()
        return base64.b64encode(mac).decode()

    def verify(self, text: object, signature: object) -> bool:
        """Whether `signature` is this server's signature of `text`."""
        if not isinstance(text, str) or not isinstance(signature, str):
            return False
        return hmac.compare_digest(self.sign(text), signature)

    def redact(self, text: str) -> str:
        """The `data` of a redacted_thinking block holding this text (opaque to the client)."""
        return base64.b64encode(text.encode()).decode() + "." + self.sign(text)

    def verify_redacted(self, data: object) -> bool:
        """Whether a redacted_thinking block's `data` came from this server."""
        if not isinstance(data, str) or "." not in data:
            return False
        payload, _, signature = data.rpartition(".")
        try:
            text = base64.b64decode(payload, validate=True).decode()
        except ValueError:
            return False
        return self.verify(text, signature)


def thinking_text(thinking: str | None, messages: int) -> str:
    """The thinking of a reply: the responder's text, or a short deterministic default."""
    return thinking if thinking is not None else f"Reading the {messages} messages so far and choosing a step."

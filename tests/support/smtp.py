"""A real SMTP server on 127.0.0.1 for the mail tests (alerts, scheduled reports): aiosmtpd in a thread, keeping
each message it accepted. `stall` makes it hold the answer to DATA (the moment a message is accepted) until
released, so a test can kill a worker while it is sending, and `wait_for_hangup` tells the test when the server
has seen that client go (a killed process's socket closes a moment after the process is reaped)."""

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage

from aiosmtpd.controller import Controller

from tests.support.web import free_port

STALL_POLL_S = 0.02


@dataclass
class Received:
    """One message the server accepted: its envelope and the parsed message."""

    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage

    @property
    def subject(self) -> str:
        return str(self.message["Subject"] or "")

    def text(self) -> str:
        """The plain-text body (the text/plain part of a multipart message)."""
        part = self.message.get_body(preferencelist=("plain",))
        return part.get_content() if part is not None else ""

    def attachments(self) -> list[tuple[str, bytes]]:
        return [(p.get_filename() or "", p.get_content()) for p in self.message.iter_attachments()]


@dataclass
class _Handler:
    received: list[Received] = field(default_factory=list)
    data_seen: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    hangup: threading.Event = field(default_factory=threading.Event)
    stall: bool = False

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's hook name)
        self.data_seen.set()
        if self.stall:
            # Hold the answer without blocking the event loop; aiosmtpd cancels this coroutine when the client
            # goes, which is how a hang-up is seen.
            try:
                while not self.release.is_set():
                    await asyncio.sleep(STALL_POLL_S)
            except asyncio.CancelledError:
                self.hangup.set()
                raise
            if server.transport is None or server.transport.is_closing():
                # The client went away before we answered: it never learnt the message was accepted, so (as
                # RFC 5321 lets a server do) it is dropped rather than delivered behind the sender's back.
                return "451 Connection lost before the message was accepted"
        self.received.append(
            Received(
                mail_from=envelope.mail_from,
                rcpt_tos=list(envelope.rcpt_tos),
                message=message_from_bytes(envelope.original_content or envelope.content, policy=policy.default),
            )
        )
        return "250 Message accepted for delivery"


class SmtpServer:
    """What a test holds: the port, the messages accepted so far, the stall switch."""

    def __init__(self, handler: _Handler, port: int):
        self._handler = handler
        self.host = "127.0.0.1"
        self.port = port

    @property
    def messages(self) -> list[Received]:
        return list(self._handler.received)

    def stall(self) -> None:
        """Hold every DATA answer from now until `release()`."""
        self._handler.release.clear()
        self._handler.data_seen.clear()
        self._handler.hangup.clear()
        self._handler.stall = True

    def release(self) -> None:
        self._handler.stall = False
        self._handler.release.set()

    def wait_for_data(self, timeout_s: float) -> bool:
        """True once a client has sent a message's data (with `stall`, it is now waiting for our answer)."""
        return self._handler.data_seen.wait(timeout_s)

    def wait_for_hangup(self, timeout_s: float) -> bool:
        """True once a client held at DATA by `stall` has closed its connection without an answer."""
        return self._handler.hangup.wait(timeout_s)

    def settings(self) -> dict:
        """The Django settings that send through this server (for `settings` fixtures or a worker's environment)."""
        return {
            "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "EMAIL_HOST": self.host,
            "EMAIL_PORT": self.port,
            "EMAIL_USE_TLS": False,
            "EMAIL_USE_SSL": False,
        }

    def environment(self) -> dict[str, str]:
        """The same as environment variables, for a worker process (config/settings/base.py reads them)."""
        return {
            "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "EMAIL_HOST": self.host,
            "EMAIL_PORT": str(self.port),
        }


@contextmanager
def smtp_server() -> Iterator[SmtpServer]:
    """An SMTP server on a free loopback port for the block's duration."""
    handler = _Handler()
    port = free_port()
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    server = SmtpServer(handler, port)
    try:
        yield server
    finally:
        handler.release.set()
        controller.stop()

"""The bot's admin endpoint: ``python -m memory.admin`` commands forwarded to the running bot.

It listens on 127.0.0.1 only, on a port the system picks, and writes ``<data_dir>/control.json``
(mode 0600) with that address and a random token (``memory.ops.control``). A connection that does
not give the token is refused. A forwarded command is parsed by the admin command's own parser and
run by its own handler (``memory.ops.admin.execute``) against the bot's open stores and its
``Operations``: the caches and working history the bot reads are the ones the operation
invalidates. Its writes go back to the admin command as they happen; its confirmation question is
answered from the admin command's terminal.

Why arguments, not operations, cross the socket: the handler is where the output, ``--json``,
``--dry-run``, confirmations and exit codes are made, so running it here gives the same output with
no second encoding of any command.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import os
import socket
from typing import TYPE_CHECKING, cast

from memory import stopping
from memory.ops import admin, admin_io, control

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Sequence
    from typing import TextIO

logger = logging.getLogger(__name__)

#: seconds a client has to send its request line
REQUEST_SECONDS = 10.0
#: seconds the commands still running at shutdown get before they are cancelled
SHUTDOWN_SECONDS = 10.0


class _Frames(io.TextIOBase):
    """A text stream whose writes go to the admin command as ``{key: text}`` messages."""

    def __init__(self, writer: asyncio.StreamWriter, key: str) -> None:
        self._writer = writer
        self._key = key

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if text and not self._writer.is_closing():
            control.send(self._writer, **{self._key: text})
        return len(text)


class RemoteIo(admin_io.Io):
    """The ``Io`` of a forwarded command: output to the admin command, answers from it."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, as_json: bool
    ) -> None:
        out = cast("TextIO", _Frames(writer, "out"))
        err = cast("TextIO", _Frames(writer, "err"))
        super().__init__(cast("TextIO", io.StringIO()), out, err, as_json=as_json)
        self._reader = reader
        self._writer = writer

    async def answer(self) -> str:
        control.send(self._writer, ask=True)
        await self._writer.drain()
        message = await control.receive(self._reader)
        return str(message.get("answer", "")) if message else ""  # gone: not a yes


async def run_forwarded(
    services: admin_io.AdminServices,
    argv: Sequence[str],
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    *,
    sign_in_link: Callable[[], str] | None = None,
) -> int:
    """Parse and run one forwarded admin command; its exit code. ``sign_in_link`` makes a new
    one-time link of the dashboard's local sign-in (None: the bot has none)."""
    errors_out = _Frames(writer, "err")
    try:
        # argparse writes usage errors to sys.stderr: here they go to the admin command (parsing
        # does not await, so no other task writes in between)
        with contextlib.redirect_stderr(errors_out), contextlib.redirect_stdout(errors_out):
            args = admin.build_parser().parse_args(list(argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    remote = RemoteIo(reader, writer, as_json=args.json)
    if admin.command_name(args) in admin.OWN_QDRANT:
        remote.err(
            f"error: {args.command} rebuilds the collections this running bot holds open: stop "
            "the bot, then run it again"
        )
        return admin_io.REFUSED
    if args.command == "sign-in-link":
        if sign_in_link is None:
            remote.err(
                "error: this bot has no local sign-in: it serves no dashboard (start it with "
                "--web), or its dashboard signs in with Twitch"
            )
            return admin_io.REFUSED
        link = sign_in_link()
        remote.result({"link": link}, link)
        return admin_io.OK
    return await admin.execute(services, args, remote)


class Endpoint:
    """The admin endpoint's connections, each one forwarded command."""

    def __init__(
        self,
        services: admin_io.AdminServices,
        token: str,
        sign_in_link: Callable[[], str] | None = None,
    ) -> None:
        self.services = services
        self.token = token
        self.sign_in_link = sign_in_link
        self.running: set[asyncio.Task[object]] = set()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.running.add(task)
        try:
            async with asyncio.timeout(REQUEST_SECONDS):
                request = await control.receive(reader)
            if request is None:  # a probe (is a bot there?) that closed at once
                return
            if not control.same_token(request.get("token"), self.token):
                logger.warning("admin endpoint: a request without the right token was refused")
                control.send(writer, refused="wrong or missing token")
                return
            argv = request.get("argv")
            if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
                control.send(writer, refused="malformed request (argv is a list of strings)")
                return
            code = await self._run(argv, reader, writer)
            control.send(writer, exit=code)
            await writer.drain()
        except (ConnectionError, TimeoutError, ValueError) as exc:
            logger.warning("admin endpoint: a connection failed (%s)", exc or type(exc).__name__)
        finally:
            self.running.discard(task)
            writer.close()

    async def _run(
        self, argv: list[str], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> int:
        """The command's exit code; a bug in it is logged here and one line there (exit 1)."""
        try:
            return await run_forwarded(
                self.services, argv, reader, writer, sign_in_link=self.sign_in_link
            )
        except ConnectionError:
            raise
        except Exception as exc:
            logger.exception("admin endpoint: %s failed", " ".join(argv[:2]))
            control.send(
                writer, err=f"error: the command failed in the bot ({exc!r}): see its log\n"
            )
            return admin_io.REFUSED

    async def settle(self) -> None:
        """Let the running commands finish (bounded), then cancel what is left."""
        if not self.running:
            return
        _, pending = await asyncio.wait(set(self.running), timeout=SHUTDOWN_SECONDS)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


@contextlib.asynccontextmanager
async def hosting(
    services: admin_io.AdminServices,
    *,
    dashboard: str | None = None,
    sign_in_link: Callable[[], str] | None = None,
) -> AsyncIterator[control.Control]:
    """Serve the admin endpoint and keep the control file while the block runs."""
    data_dir = services.settings.data_dir
    endpoint = Endpoint(services, control.new_token(), sign_in_link)
    server = await asyncio.start_server(
        endpoint.handle, control.LOOPBACK, 0, limit=control.LINE_LIMIT
    )
    port = int(server.sockets[0].getsockname()[1])
    held = control.Control(
        pid=os.getpid(),
        host=control.LOOPBACK,
        port=port,
        token=endpoint.token,
        dashboard=dashboard,
        machine=socket.gethostname(),
    )
    written = control.write(data_dir, held)
    logger.info(
        "admin endpoint on %s:%d (%s): python -m memory.admin runs its commands in this bot",
        control.LOOPBACK,
        port,
        written,
        extra={"action": "admin_endpoint"},
    )
    try:
        # a second signal exits at once (``memory.stopping``): the file goes all the same
        with stopping.last_words(lambda: control.remove(data_dir, endpoint.token)):
            yield held
    finally:
        control.remove(data_dir, endpoint.token)
        server.close()
        await endpoint.settle()
        await server.wait_closed()

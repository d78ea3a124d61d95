"""Extension points (zmtp/extension.py, docs/extensions.md): a small recording extension proves
every hook, over tcp, ipc (path and abstract) and inproc."""

from __future__ import annotations

import gc
from collections.abc import Mapping

import anyio
import pytest

import zmtp
from tests import test_engine_helpers as helpers
from tests.test_engine_helpers import (
    TIMEOUT,
    linked,
    unique_name,
    wait_event,
)
from zmtp.engine.pipe import Pipe, PipeClosed

pytestmark = pytest.mark.anyio

endpoint = helpers.endpoint  # fixture
transport = helpers.transport  # fixture


class Recorder(zmtp.SocketExtension):
    """Records every hook call; behaviour is switched by attributes."""

    def __init__(self, properties: Mapping[str, bytes] | None = None) -> None:
        self.properties = dict(properties or {})
        self.reject: str | None = None  #: validate_peer's answer
        self.gate_open = True  #: can_send's answer
        self.hooks: list[str] = []  #: lifecycle hooks, in call order
        self.pipes: list[Pipe] = []  #: pipes seen in pipe_connected
        self.commands: list[tuple[bytes, bytes]] = []
        self.sent: list[list[bytes]] = []  #: before_send
        self.received: list[list[bytes]] = []  #: on_receive (consumed ones included)
        self.linger_release: anyio.Event | None = None
        self.changed = anyio.Event()

    def _record(self, hook: str) -> None:
        self.hooks.append(hook)
        self.changed.set()
        self.changed = anyio.Event()

    async def wait_hooks(self, n: int) -> list[str]:
        """The lifecycle hooks once at least ``n`` were called."""
        with anyio.fail_after(TIMEOUT):
            while len(self.hooks) < n:
                await self.changed.wait()
        return self.hooks

    def handshake_properties(self) -> Mapping[str, bytes]:
        return self.properties

    def validate_peer(self, pipe: Pipe, peer: zmtp.PeerInfo) -> str | None:
        self._record("validate")
        return self.reject

    def pipe_connected(self, pipe: Pipe) -> None:
        self.pipes.append(pipe)
        self._record("connected")

    def pipe_disconnected(self, pipe: Pipe, reason: str) -> None:
        self._record("disconnected")

    def pipe_removed(self, pipe: Pipe) -> None:
        self._record("removed")

    def on_command(self, pipe: Pipe, name: bytes, data: bytes) -> None:
        self.commands.append((name, data))
        self._record("command")

    def before_send(self, pipe: Pipe, message: list[bytes]) -> None:
        self.sent.append(list(message))

    def on_receive(self, pipe: Pipe, message: list[bytes]) -> bool:
        self.received.append(list(message))
        return not message[0].startswith(b"drop")

    def can_send(self, pipe: Pipe) -> bool:
        return self.gate_open

    async def linger(self) -> None:
        if self.linger_release is not None:
            await self.linger_release.wait()


async def recv_n(sock: zmtp.Socket, n: int) -> list[list[bytes]]:
    with anyio.fail_after(TIMEOUT):
        return [await sock.recv_multipart() for _ in range(n)]


# --------------------------------------------------------------------------- 1. properties


async def test_handshake_properties_reach_the_peer(endpoint: str) -> None:
    binder_ext = Recorder({"X-Test": b"from-binder"})
    connector_ext = Recorder({"X-Test": b"from-connector", "X-Other": b""})
    async with linked(
        zmtp.PAIR,
        zmtp.PAIR,
        endpoint,
        binder_extension=binder_ext,
        connector_extension=connector_ext,
    ) as link:
        (peer_of_binder,) = link.binder.peers
        (peer_of_connector,) = link.connector.peers
        assert peer_of_binder.properties["X-Test"] == b"from-connector"
        assert peer_of_binder.properties["x-other"] == b""  # names are case-insensitive
        assert peer_of_connector.properties["X-Test"] == b"from-binder"
        assert peer_of_connector.properties["Socket-Type"] == b"PAIR"
        assert binder_ext.pipes[0].properties == peer_of_binder.properties


# --------------------------------------------------------------------------- 2. validate_peer


@pytest.mark.parametrize("rejecting_side", ["binder", "connector"])
async def test_validate_peer_rejects_with_its_reason_and_nothing_is_delivered(
    endpoint: str, rejecting_side: str
) -> None:
    ext = Recorder()
    ext.reject = "not on the guest list"
    async with (
        zmtp.Socket(zmtp.PULL, linger=0) as pull,
        zmtp.Socket(zmtp.PUSH, linger=0, reconnect_ivl=None) as push,
    ):
        rejecting = pull if rejecting_side == "binder" else push
        rejecting.install_extension(ext)
        monitor = rejecting.monitor()
        await push.connect(await pull.bind(endpoint))
        await push.send(b"must not arrive")  # queued or pipelined behind the handshake
        event = await wait_event(monitor, zmtp.HandshakeFailed)
        assert event.kind == "rejected"
        assert event.reason == "not on the guest list"
        assert ext.hooks == ["validate"]  # never connected
        await push.send(b"nor this, sent after the refusal")
        pull.options.recv_timeout = 0.05  # the refused connection is already gone
        with pytest.raises(TimeoutError):
            await pull.recv()
        assert pull.peers == []


def live_pipes(endpoint: str) -> int:
    """Pipe objects for ``endpoint`` still alive anywhere in the process."""
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is Pipe and o.endpoint == endpoint)


@pytest.mark.parametrize("refused_by", ["validator", "pair-second-peer"])
@pytest.mark.parametrize("transport", ["tcp", "inproc"])
async def test_refused_connections_leave_no_pipe_behind(refused_by: str, transport: str) -> None:
    """A refused accepted connection must not leave its pipe in the socket (a peer that keeps
    reconnecting would otherwise grow memory without bound)."""
    endpoint = "tcp://127.0.0.1:*" if transport == "tcp" else f"inproc://{unique_name()}"
    ext = Recorder()
    ext.reject = "no" if refused_by == "validator" else None
    async with zmtp.Socket(zmtp.PAIR, linger=0) as binder:
        binder.install_extension(ext)
        monitor = binder.monitor()
        resolved = await binder.bind(endpoint)
        async with zmtp.Socket(zmtp.PAIR, linger=0) as first:
            if refused_by == "pair-second-peer":
                await first.connect(resolved)
                await wait_event(monitor, zmtp.HandshakeSucceeded)
            before = live_pipes(resolved)
            for _ in range(4):
                async with zmtp.Socket(zmtp.PAIR, linger=0, reconnect_ivl=None) as refused:
                    await refused.connect(resolved)
                    event = await wait_event(monitor, zmtp.HandshakeFailed)
                    assert event.reason in ("no", "PAIR socket already has a peer")
                await anyio.wait_all_tasks_blocked()  # let the refused connections finish
            # The accept loop's local variable may still hold the latest connection (and so
            # its pipe) until the next accept; a leak would hold all four.
            assert live_pipes(resolved) <= before + 1


# --------------------------------------------------------------------------- 3 + 5. commands


async def test_on_command_receives_a_custom_command_in_both_directions(endpoint: str) -> None:
    binder_ext, connector_ext = Recorder(), Recorder()
    async with linked(
        zmtp.PULL,
        zmtp.PUSH,
        endpoint,
        binder_extension=binder_ext,
        connector_extension=connector_ext,
    ):
        connector_ext.pipes[0].send_command(b"X-TEST", b"data")
        await binder_ext.wait_hooks(3)  # validate, connected, command
        assert binder_ext.commands == [(b"X-TEST", b"data")]
        binder_ext.pipes[0].send_command(b"X-BACK", b"")
        await connector_ext.wait_hooks(3)
        assert connector_ext.commands == [(b"X-BACK", b"")]


async def test_send_command_without_a_live_connection_raises_pipe_closed(endpoint: str) -> None:
    ext = Recorder()
    async with linked(zmtp.PULL, zmtp.PUSH, endpoint, connector_extension=ext) as link:
        pipe = ext.pipes[0]
        await link.binder.unbind(link.endpoint)
        await wait_event(link.connector_monitor, zmtp.Disconnected)
        with pytest.raises(PipeClosed):
            pipe.send_command(b"X-TEST", b"too late")


# --------------------------------------------------------------------------- 4. routing hooks


async def test_before_send_sees_the_wire_parts(endpoint: str) -> None:
    ext = Recorder()
    async with linked(zmtp.PULL, zmtp.PUSH, endpoint, connector_extension=ext) as link:
        await link.connector.send_multipart([b"a", b"", b"c"])
        await link.connector.send("text")
        assert await recv_n(link.binder, 2) == [[b"a", b"", b"c"], [b"text"]]
        assert ext.sent == [[b"a", b"", b"c"], [b"text"]]


async def test_inproc_messages_queued_before_the_bind_go_through_the_hooks() -> None:
    name = f"inproc://{unique_name()}"
    push_ext, pull_ext = Recorder(), Recorder()
    async with zmtp.Socket(zmtp.PUSH, linger=0) as push, zmtp.Socket(zmtp.PULL, linger=0) as pull:
        push.install_extension(push_ext)
        pull.install_extension(pull_ext)
        await push.connect(name)
        await push.send(b"drop: consumed by the receiver's hook")
        await push.send(b"early")
        assert push_ext.sent == []  # not handed over yet: there is no peer
        await pull.bind(name)
        assert await recv_n(pull, 1) == [[b"early"]]
        assert (
            push_ext.sent
            == pull_ext.received
            == [
                [b"drop: consumed by the receiver's hook"],
                [b"early"],
            ]
        )


async def test_on_receive_returning_false_consumes_the_message(endpoint: str) -> None:
    ext = Recorder()
    async with linked(zmtp.PULL, zmtp.PUSH, endpoint, binder_extension=ext) as link:
        for body in (b"drop-1", b"keep-1", b"drop-2", b"keep-2"):
            await link.connector.send_multipart([body, b"tail"])
        assert await recv_n(link.binder, 2) == [[b"keep-1", b"tail"], [b"keep-2", b"tail"]]
        assert [m[0] for m in ext.received] == [b"drop-1", b"keep-1", b"drop-2", b"keep-2"]


async def test_pipe_hooks_on_the_binding_side(endpoint: str) -> None:
    ext = Recorder()
    async with zmtp.Socket(zmtp.PULL, linger=0) as pull:
        pull.install_extension(ext)
        resolved = await pull.bind(endpoint)
        async with zmtp.Socket(zmtp.PUSH, linger=0) as push:
            await push.connect(resolved)
            assert await ext.wait_hooks(2) == ["validate", "connected"]
        # an accepted connection's pipe ends with its connection
        assert await ext.wait_hooks(4) == ["validate", "connected", "disconnected", "removed"]


async def test_pipe_hooks_on_the_connecting_side(endpoint: str) -> None:
    """A connect() pipe survives its connections: disconnected without removed when the peer
    goes, connected again (same pipe) when it comes back, removed only on disconnect()."""
    ext = Recorder()
    async with (
        zmtp.Socket(zmtp.PULL, linger=0) as pull,
        zmtp.Socket(zmtp.PUSH, linger=0, reconnect_ivl=0.02) as push,
    ):
        push.install_extension(ext)
        resolved = await pull.bind(endpoint)
        await push.connect(resolved)
        assert await ext.wait_hooks(2) == ["validate", "connected"]
        await pull.unbind(resolved)
        assert await ext.wait_hooks(3) == ["validate", "connected", "disconnected"]
        await pull.bind(resolved)
        assert await ext.wait_hooks(5) == [
            "validate",
            "connected",
            "disconnected",
            "validate",
            "connected",
        ]
        assert ext.pipes[0] is ext.pipes[1]
        await push.disconnect(resolved)
        assert (await ext.wait_hooks(7))[5:] == ["disconnected", "removed"]


async def test_can_send_gates_sending_until_wake_senders(endpoint: str) -> None:
    ext = Recorder()
    async with linked(
        zmtp.PULL,
        zmtp.PUSH,
        endpoint,
        connector_extension=ext,
        connector_options={"send_timeout": 0.1},
    ) as link:
        ext.gate_open = False
        with pytest.raises(TimeoutError):
            await link.connector.send(b"gated")  # nothing queued: it timed out
        link.connector.options.send_timeout = None
        done = anyio.Event()

        async def send_when_allowed() -> None:
            await link.connector.send(b"let through")
            done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(send_when_allowed)
            await anyio.wait_all_tasks_blocked()
            assert not done.is_set()
            ext.gate_open = True
            link.connector.wake_senders()
            with anyio.fail_after(TIMEOUT):
                await done.wait()
        assert await recv_n(link.binder, 1) == [[b"let through"]]
        assert ext.sent == [[b"let through"]]


async def test_close_waits_for_the_extension_linger(endpoint: str) -> None:
    ext = Recorder()
    ext.linger_release = anyio.Event()
    async with linked(zmtp.PULL, zmtp.PUSH, endpoint, connector_extension=ext) as link:
        async with anyio.create_task_group() as tg:
            tg.start_soon(link.connector.close, TIMEOUT)
            await anyio.wait_all_tasks_blocked()
            assert not link.connector.closed  # held by the extension
            ext.linger_release.set()
        assert link.connector.closed


async def test_extension_linger_is_bounded_by_the_socket_linger() -> None:
    ext = Recorder()
    ext.linger_release = anyio.Event()  # never set
    async with zmtp.Socket(zmtp.PUSH, linger=0.2) as push:
        push.install_extension(ext)
        start = anyio.current_time()
        with anyio.fail_after(TIMEOUT):
            await push.close()
        assert 0.2 - 0.02 <= anyio.current_time() - start < 2.0


async def test_install_extension_rules() -> None:
    async with zmtp.Socket(zmtp.PUSH, linger=0) as push:
        push.install_extension(Recorder())
        with pytest.raises(RuntimeError, match="already installed"):
            push.install_extension(Recorder())
    async with zmtp.Socket(zmtp.PUSH, linger=0) as push:
        await push.bind(f"inproc://{unique_name()}")
        with pytest.raises(RuntimeError, match="before bind/connect"):
            push.install_extension(Recorder())

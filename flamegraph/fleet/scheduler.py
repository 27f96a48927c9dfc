"""`--scheduler`: parse it, and make sure a Dask scheduler answers there before Dask is handed it.

Dask's client trusts the address: an HTTP server there kept it waiting for minutes, and an SSH
banner read as a frame length asked numpy for 2.8 EiB (MemoryError). So we connect first, with a
timeout, and read the greeting a Dask scheduler sends unasked on every new connection (TCP: the
frames of its handshake, which is a small msgpack map). Anything else is one line, exit 11.

    local                      a LocalCluster with one worker per usable core
    local:4                    ... with 4 workers
    tcp://10.0.0.5:8786        a scheduler (`tcp://` may be left out; the port defaults to 8786)
    tls://[fd00::5]:8786       TLS: the TCP connection is checked, the handshake is Dask's (certificates)

What a scheduler sends first (little-endian u64s): the frames' total size, the number of frames,
each frame's size, then the frames; the first frame is msgpack:
    3a00000000000000 0100000000000000 2a00000000000000 83 ab"compression" c0 a6"python" ...
"""

from __future__ import annotations

import os
import socket
import struct
import time
from dataclasses import dataclass
from typing import Any

from ..io.diagnostics import BadOption, ClusterUnavailable

DEFAULT_PORT = 8786  # Dask's
PROBE_TIMEOUT = 5.0  # seconds to connect and to be greeted
MAX_GREETING = 64 * 1024  # a scheduler's handshake is ~60 bytes
SCHEMES = ("tcp", "tls")  # what we can check; Dask's others (ucx, ws, inproc) are not offered
USAGE = "expected local, local:N or a Dask scheduler address (tcp://HOST:PORT, tls://HOST:PORT)"


@dataclass(frozen=True)
class Scheduler:
    """`local`, `local:N` or a Dask scheduler's address (`scheme://host:port`, normalised)."""

    address: str | None  # None: start a LocalCluster
    workers: int | None = None  # LocalCluster workers (None: one per usable core)

    @classmethod
    def parse(cls, text: str) -> Scheduler:
        name, sep, count = text.strip().partition(":")
        if name != "local":
            scheme, host, port = parse_address(text)
            return cls(f"{scheme}://{_bracket(host)}:{port}")
        if not sep:
            return cls(None)
        if not count.isdigit() or not 1 <= int(count) <= 256:
            raise BadOption(f"--scheduler {text!r}: local:N needs N from 1 to 256 workers")
        return cls(None, int(count))

    def describe(self) -> str:
        return self.address or f"a local cluster of {self.workers or cores()} workers"


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def parse_address(text: str) -> tuple[str, str, int]:
    """(scheme, host, port) of `tcp://host:port`, `tls://[v6]:port`, `host:port` or `host`."""
    given = text.strip()
    scheme, sep, rest = given.partition("://")
    if not sep:
        scheme, rest = "tcp", given
    if scheme not in SCHEMES:
        raise BadOption(f"--scheduler {text!r}: {USAGE}")
    if rest.startswith("["):  # [IPv6]:port
        host, bracket, after = rest[1:].partition("]")
        if not bracket or (after and not after.startswith(":")):
            raise BadOption(f"--scheduler {text!r}: expected [IPv6 address]:PORT after the brackets")
        port_text = after[1:] if after else None
    elif rest.count(":") > 1:
        raise BadOption(f"--scheduler {text!r}: put an IPv6 address in brackets, as in tcp://[::1]:8786")
    else:
        host, colon, port_text = rest.partition(":")
        port_text = port_text if colon else None
    if not host or not _is_host(host):
        raise BadOption(f"--scheduler {text!r}: no host name in it; {USAGE}")
    if port_text is None:
        return scheme, host, DEFAULT_PORT
    if not (port_text.isascii() and port_text.isdigit()) or not 1 <= int(port_text) <= 65535:
        raise BadOption(f"--scheduler {text!r}: the port must be a number from 1 to 65535")
    return scheme, host, int(port_text)


def _is_host(host: str) -> bool:
    """A host name or an IP address: printable ASCII without separators (no path, no blank, no '@')."""
    return host.isascii() and host.isprintable() and not any(c in host for c in " /@?#[]\\")


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def check_scheduler(address: str, timeout: float = PROBE_TIMEOUT) -> None:
    """Raise ClusterUnavailable unless a Dask scheduler answers at `address` within `timeout` seconds
    (for tls://, unless something accepts TCP connections there: the TLS handshake is Dask's)."""
    scheme, host, port = parse_address(address)
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection((host, port), timeout=timeout) as conn:
            if scheme == "tcp":
                parse_greeting(read_greeting(conn, deadline))
    except ClusterUnavailable as err:
        raise ClusterUnavailable(f"{address} is not a Dask scheduler: {err}") from None
    except TimeoutError:
        raise ClusterUnavailable(
            f"no Dask scheduler answered at {address} within {timeout:g} s"
            + (" (something accepted the connection but sent no Dask greeting)" if scheme == "tcp" else "")
        ) from None
    except OSError as err:
        why = err.strerror or str(err) or type(err).__name__
        raise ClusterUnavailable(f"cannot reach the Dask scheduler at {address}: {why}") from None


def read_greeting(conn: socket.socket, deadline: float) -> bytes:
    """The scheduler's first message: its size (8 bytes), then that many bytes, within the deadline."""
    head = _read(conn, 8, deadline)
    (size,) = struct.unpack("<Q", head)
    if size > MAX_GREETING:  # a banner or a reply of some other protocol: show what it said
        conn.settimeout(0.2)
        try:
            head += conn.recv(64)
        except OSError:
            pass
        raise ClusterUnavailable(f"it sent {_shown(head)}")
    return head + _read(conn, size, deadline)


def _read(conn: socket.socket, size: int, deadline: float) -> bytes:
    data = b""
    while len(data) < size:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        conn.settimeout(left)
        chunk = conn.recv(size - len(data))
        if not chunk:
            said = f"it sent {_shown(data)} and closed the connection" if data else "it closed the connection"
            raise ClusterUnavailable(said)
        data += chunk
    return data


def _shown(data: bytes) -> str:
    return repr(data[:40]) + ("..." if len(data) > 40 else "")


def parse_greeting(data: bytes) -> dict[str, Any]:
    """The handshake map in a scheduler's first message (`data`: the whole message, size included);
    ClusterUnavailable when it is not one (a truncated, oversized or foreign message)."""
    bad = ClusterUnavailable(f"it sent {_shown(data)}")
    if len(data) < 16:
        raise bad
    (size,) = struct.unpack_from("<Q", data)
    (frames,) = struct.unpack_from("<Q", data, 8)
    if size != len(data) - 8 or not 1 <= frames <= 8 or len(data) < 16 + 8 * frames:
        raise bad
    sizes = struct.unpack_from(f"<{frames}Q", data, 16)
    start = 16 + 8 * frames
    if sum(sizes) != len(data) - start:
        raise bad
    import msgpack  # a dependency of Dask's; imported here so the fuzz target needs Dask only for this

    try:
        greeting = msgpack.unpackb(data[start : start + sizes[0]], raw=False, strict_map_key=True)
    except (ValueError, TypeError, msgpack.UnpackException):  # ExtraData, FormatError, StackError...
        raise bad from None
    if not isinstance(greeting, dict) or "pickle-protocol" not in greeting or "compression" not in greeting:
        raise bad
    return greeting

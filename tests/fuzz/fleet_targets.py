"""Fuzz targets of the fleet's client: the --scheduler address, and what an endpoint sends back
first (a Dask scheduler's greeting, or anything else that listens there)."""

from __future__ import annotations

import socket
import time

from flamegraph.fleet.scheduler import SCHEMES, Scheduler, parse_address, parse_greeting, read_greeting
from flamegraph.io.diagnostics import BadOption, ClusterUnavailable


def scheduler_address(data: bytes) -> None:
    """`--scheduler TEXT`: a usage error (BadOption), or a normalised address that parses to itself."""
    text = data.decode("utf-8", "surrogateescape")
    try:
        where = Scheduler.parse(text)
    except BadOption as err:
        assert str(err).startswith("--scheduler") and "\n" not in str(err).rstrip(), err
        return
    assert where.describe()
    if where.address is None:
        assert where.workers is None or 1 <= where.workers <= 256
        return
    scheme, host, port = parse_address(where.address)
    assert scheme in SCHEMES and 1 <= port <= 65535 and host, where
    assert Scheduler.parse(where.address) == where  # normalised: the same address again


def scheduler_greeting(data: bytes) -> None:
    """The first bytes an endpoint sends, read from a socket as check_scheduler reads them: the
    handshake map, or ClusterUnavailable; never another exception, a hang or a large allocation."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(data[:100_000])
        theirs.shutdown(socket.SHUT_WR)
        started = time.monotonic()
        try:
            greeting = parse_greeting(read_greeting(ours, started + 5))
        except ClusterUnavailable as err:
            assert "\n" not in str(err), err
        else:
            assert isinstance(greeting, dict) and "pickle-protocol" in greeting
        assert time.monotonic() - started < 2

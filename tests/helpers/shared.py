"""The peer-test corpus beside the checkout ($FLAMEGRAPH_SHARED, else ../shared): flamegraph.pl's
peer-test inputs and expected outputs, its perl scripts, the bench recipes.

A user's fresh clone has none: the tests that need it skip, with one reason. CI (.ci/run) sets
$FLAMEGRAPH_REQUIRE_SHARED=1, which turns that skip into a failure, so no peer comparison goes
unrun there. A path that does not exist counts as no corpus (the Makefile always sets one).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
REQUIRE = "FLAMEGRAPH_REQUIRE_SHARED"
MARKER = Path("peer-tests") / "flamegraph-pl"  # what every test of the corpus reads


def shared_dir() -> Path:
    """The corpus's place: $FLAMEGRAPH_SHARED, else ../shared next to the checkout (it may be absent)."""
    env = os.environ.get("FLAMEGRAPH_SHARED")
    return Path(env) if env else REPO.parent / "shared"


def missing_reason() -> str | None:
    """Why the corpus cannot be used, or None when it is there."""
    path = shared_dir()
    if (path / MARKER).is_dir():
        return None
    return f"needs the peer-test corpus (FLAMEGRAPH_SHARED, default ../shared): no {MARKER} in {path}"


def required() -> bool:
    return os.environ.get(REQUIRE, "") not in ("", "0")


def need_shared() -> Path:
    """The corpus; else skip the calling test, or fail it when $FLAMEGRAPH_REQUIRE_SHARED=1."""
    reason = missing_reason()
    if reason is None:
        return shared_dir()
    if required():
        pytest.fail(f"{reason} ({REQUIRE}=1: it must be there)", pytrace=False)
    pytest.skip(reason)

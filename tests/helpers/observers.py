"""The fold-time frame hook as a fold builds it, for tests that fold text themselves."""

from __future__ import annotations

from flamegraph.naming.observer import FrameObserver
from flamegraph.naming.symbols import FunctionNamer


def observer_for(group_unknown: bool) -> FrameObserver:
    """Grouping [unknown] frames by function when asked (unverified: text holds no build-ids), observing always."""
    return FrameObserver(FunctionNamer() if group_unknown else None)

"""--event, --unit and --meta KEY=VALUE onto a profile read from folded text, which carries none of them
(`render`, `diff`, `convert`)."""

from __future__ import annotations

from ..io.diagnostics import BadOption
from ..model import FoldedProfile


def describe_profile(profile: FoldedProfile, event: str | None, unit: str | None, meta: list[str] | None) -> None:
    if event is not None:
        profile.event = event
    if unit is not None:
        profile.unit = unit
    for item in meta or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise BadOption(f"--meta {item!r}: expected KEY=VALUE")
        profile.metadata[key.strip()] = value

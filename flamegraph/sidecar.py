"""Capture facts beside a folded file (`X.folded` + `X.folded.json`), so `render X.folded` draws what
`record` drew: the same title, event, unit, window and header.

Folded text has no room for them (a comment line ending in a number is a stack to flamegraph.pl),
so they go in a small JSON file whose name is the folded file's plus `.json`:
    {"flamegraph-perf": "capture facts of a folded file", "version": 1, "unit": "microseconds",
     "event": "sched:sched_switch", "window_us": 3643000, "title": "Off-CPU: python", ...,
     "metadata": {"command": "python train.py", "perf": "6.1.187", ...}}
Only a file that says it is one of ours is read or replaced: a user's own X.folded.json is left alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from .model import FoldedProfile

MARKER_KEY = "flamegraph-perf"
MARKER = "capture facts of a folded file"
VERSION = 1
SUFFIX = ".json"


@dataclass
class Context:
    """What a folded file does not say: its unit and event, its capture facts, how it was drawn."""

    unit: str = "samples"
    event: str | None = None
    window_us: float | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    title: str | None = None
    subtitle: str | None = None
    preset: str | None = None
    highlights: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, profile: FoldedProfile, **drawing: object) -> Context:
        return cls(profile.unit, profile.event, profile.window_us, dict(profile.metadata), **drawing)  # type: ignore[arg-type]

    def apply(self, profile: FoldedProfile) -> None:
        """Give `profile` (read from the folded text) these facts; what it already has wins."""
        profile.unit = self.unit
        profile.event = profile.event or self.event
        profile.window_us = profile.window_us or self.window_us
        profile.metadata = {**self.metadata, **profile.metadata}


def sidecar_path(folded: Path | str) -> Path:
    path = Path(folded)
    return path.with_name(path.name + SUFFIX)


def render_sidecar(context: Context) -> bytes:
    import json  # only when a folded file is written: `fold --help` stays lean

    data: dict[str, object] = {MARKER_KEY: MARKER, "version": VERSION, "unit": context.unit, "event": context.event}
    if context.window_us is not None:
        data["window_us"] = context.window_us
    for key in ("title", "subtitle", "preset"):
        if getattr(context, key) is not None:
            data[key] = getattr(context, key)
    if context.highlights:
        data["highlights"] = list(context.highlights)
    data["metadata"] = context.metadata
    return (json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode("utf-8", "surrogateescape")


class NotASidecar(ValueError):
    """The file is not one of ours, or not one this version reads."""


def parse_sidecar(data: bytes) -> Context:
    import json

    try:
        raw = json.loads(data.decode("utf-8", "surrogateescape"))
    except (UnicodeDecodeError, ValueError) as err:
        raise NotASidecar(f"not JSON ({err})") from None
    if not isinstance(raw, dict) or raw.get(MARKER_KEY) != MARKER:
        raise NotASidecar(f'no "{MARKER_KEY}": "{MARKER}" in it')
    if raw.get("version") != VERSION:
        raise NotASidecar(f"version {raw.get('version')!r}, this flamegraph reads {VERSION}")
    context = Context()
    context.unit = _text(raw, "unit") or "samples"
    context.event = _text(raw, "event")
    window = raw.get("window_us")
    if isinstance(window, (int, float)) and not isinstance(window, bool) and math.isfinite(window) and window > 0:
        context.window_us = float(window)
    context.title, context.subtitle, context.preset = (_text(raw, k) for k in ("title", "subtitle", "preset"))
    highlights = raw.get("highlights")
    if isinstance(highlights, list):
        context.highlights = [item for item in highlights if isinstance(item, str)]
    metadata = raw.get("metadata")
    if isinstance(metadata, dict):
        context.metadata = {str(k): str(v) for k, v in metadata.items()}
    return context


def _text(raw: dict[str, object], key: str) -> str | None:
    value = raw.get(key)
    return value if isinstance(value, str) else None


def is_ours(path: Path) -> bool:
    """Whether `path` is missing or a sidecar of ours (so it may be replaced)."""
    try:
        parse_sidecar(path.read_bytes())
    except FileNotFoundError:
        return True
    except (OSError, NotASidecar):
        return False
    return True


def read_sidecar(folded: str) -> tuple[Context | None, str | None]:
    """The context beside `folded` (None if there is none), and a note when one is there but unreadable."""
    path = sidecar_path(folded)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, None
    except OSError as err:
        return None, f"{path}: cannot read: {err.strerror}: its capture facts are not used"
    try:
        return parse_sidecar(data), None
    except NotASidecar as err:
        return None, f"{path}: {err}: not used"

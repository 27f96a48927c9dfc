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
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from ..model import FoldedProfile

if TYPE_CHECKING:
    from ..color import HighlightRule

MARKER_KEY = "flamegraph-perf"
MARKER = "capture facts of a folded file"
VERSION = 1
SUFFIX = ".json"
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class Context:
    """What a folded file does not say: its unit and event, its capture facts, how it was drawn."""

    def __init__(
        self,
        unit: str = "samples",
        event: str | None = None,
        window_us: float | None = None,
        metadata: dict[str, str] | None = None,
        title: str | None = None,
        subtitle: str | None = None,
        preset: str | None = None,
        highlights: list[str] | None = None,
    ) -> None:
        self.unit = unit
        self.event = event
        self.window_us = window_us
        self.metadata: dict[str, str] = {} if metadata is None else metadata
        self.title = title
        self.subtitle = subtitle
        self.preset = preset
        self.highlights: list[str] = [] if highlights is None else highlights

    @classmethod
    def of(cls, profile: FoldedProfile, **drawing: object) -> Context:
        return cls(profile.unit, profile.event, profile.window_us, dict(profile.metadata), **drawing)  # type: ignore[arg-type]

    def highlight_rules(self) -> list[HighlightRule]:
        """The highlight classes read from the file, held to a file's bounds (color.parse_file_highlight)."""
        from ..color import parse_file_highlight

        return [parse_file_highlight(spec) for spec in self.highlights]

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
    # A byte that is not UTF-8 (a surrogate escape here) as JSON's own escape `\\udcff`: the file stays
    # UTF-8 for any JSON reader, and ours (parse_json) reads the same string back.
    text = json.dumps(data, indent=1, ensure_ascii=False)
    return (LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n").encode("utf-8")


class NotASidecar(ValueError):
    """The file is not one of ours, or not one this version reads."""


# A sidecar travels with bug reports: it is input like any other. Ours is two levels deep and a few
# kilobytes; anything far past that is refused before the JSON parser sees it.
MAX_BYTES = 1 << 20
MAX_DEPTH = 8
MAX_TEXT = 4096  # characters of a title, unit, event or preset
KNOWN = ("unit", "event", "window_us", "title", "subtitle", "preset", "highlights", "metadata")


def parse_sidecar(data: bytes) -> tuple[Context, list[str]]:
    """The context in a sidecar, and what was wrong with its fields (those are not used).

    NotASidecar when the file as a whole cannot be used: too large, too deep, not JSON, not ours."""
    raw = _ours(data)
    problems: list[str] = []
    context = Context()
    context.unit = _text(raw, "unit", problems) or "samples"
    context.event = _text(raw, "event", problems)
    context.title, context.subtitle = _text(raw, "title", problems), _text(raw, "subtitle", problems)
    context.window_us = _window(raw.get("window_us"), problems)
    context.preset = _preset(_text(raw, "preset", problems), problems)
    context.highlights = _highlights(raw.get("highlights"), problems)
    context.metadata = _metadata(raw.get("metadata"), problems)
    return context, problems


def _ours(data: bytes) -> dict[str, object]:
    """The sidecar's JSON object, or NotASidecar: too large, too deep, not JSON, not ours, another version.
    Its fields are not looked at (is_ours needs no more, and the fields' checks import the colours)."""
    from .inputs import TooDeep, parse_json

    if len(data) > MAX_BYTES:
        raise NotASidecar(f"larger than {MAX_BYTES >> 20} MiB")
    try:
        raw = parse_json(data, MAX_DEPTH)
    except TooDeep as err:
        raise NotASidecar(str(err)) from None
    except (UnicodeDecodeError, ValueError) as err:
        raise NotASidecar(f"not JSON ({err})") from None
    if not isinstance(raw, dict) or raw.get(MARKER_KEY) != MARKER:
        raise NotASidecar(f'no "{MARKER_KEY}": "{MARKER}" in it')
    if raw.get("version") != VERSION:
        raise NotASidecar(f"version {_shown(raw.get('version'))}, this flamegraph reads {VERSION}")
    return raw


def _shown(value: object) -> str:
    from .diagnostics import shorten

    return shorten(repr(value), 40)


def _text(raw: dict[str, object], key: str, problems: list[str]) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if isinstance(value, str) and len(value) <= MAX_TEXT:
        return value
    problems.append(f'"{key}" is {_shown(value)}, expected a string of at most {MAX_TEXT:,} characters')
    return None


def _window(value: object, problems: list[str]) -> float | None:
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0:
        return float(value)
    problems.append(f'"window_us" is {_shown(value)}, expected microseconds (a positive number)')
    return None


def _preset(name: str | None, problems: list[str]) -> str | None:
    from ..color import PRESETS

    if name is None or name in PRESETS:
        return name
    problems.append(f'"preset" {_shown(name)} is not one of {", ".join(PRESETS)}')
    return None


def _highlights(value: object, problems: list[str]) -> list[str]:
    """The highlight specs whose patterns are safe to run (color.parse_file_highlight); the rest are named."""
    from ..color import parse_file_highlight
    from .diagnostics import BadOption

    if value is None:
        return []
    if not isinstance(value, list):
        problems.append(f'"highlights" is {_shown(value)}, expected a list of REGEX[=COLOUR][:LABEL] strings')
        return []
    kept = []
    for item in value:
        if not isinstance(item, str):
            problems.append(f'"highlights" holds {_shown(item)}, not a string')
            continue
        try:
            parse_file_highlight(item)
        except BadOption as err:
            problems.append(f'"highlights": {err}')
            continue
        kept.append(item)
    return kept


def _metadata(value: object, problems: list[str]) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append(f'"metadata" is {_shown(value)}, expected an object of facts')
        return {}
    facts = {}
    for key, fact in value.items():
        if isinstance(fact, (str, int, float)) and len(str(fact)) <= MAX_TEXT:
            facts[key] = str(fact)
        else:
            problems.append(f'"metadata": {_shown(key)} is {_shown(fact)}, expected a short string')
    return facts


def is_ours(path: Path) -> bool:
    """Whether `path` is missing or a sidecar of ours (so it may be replaced): a link is never ours (someone
    may have planted it where we would write), nor anything but a regular file."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
        _ours(_read_bounded(path))
    except FileNotFoundError:
        return True
    except (OSError, NotASidecar):
        return False
    return True


def _read_bounded(path: Path) -> bytes:
    """At most MAX_BYTES + 1 bytes of `path` (enough to tell it is too large)."""
    with open(path, "rb") as file:
        return file.read(MAX_BYTES + 1)


def read_sidecar(folded: str) -> tuple[Context | None, str | None]:
    """The context beside `folded` (None if there is none or it is unusable), and one warning line
    when one is there but unreadable, unusable or with fields that are not used."""
    path = sidecar_path(folded)
    try:
        data = _read_bounded(path)
    except FileNotFoundError:
        return None, None
    except OSError as err:
        return None, f"{path}: cannot read: {err.strerror}: its capture facts are not used"
    try:
        context, problems = parse_sidecar(data)
    except NotASidecar as err:
        return None, f"{path}: {err}: its capture facts are not used"
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        return context, f"{path}: {problems[0]}{more}: {'that field is' if not more else 'those fields are'} not used"
    return context, None

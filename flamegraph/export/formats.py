"""The formats we export and the file names they are known by, and the facts every export carries,
so that `flamegraph convert`, `render --format` and each format's module agree.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from ..io.diagnostics import FlamegraphError
from ..model import FoldedProfile

EXPORTER = "flamegraph-perf"

# format -> the file name endings it is inferred from (longest match wins)
FORMATS: dict[str, tuple[str, ...]] = {
    "svg": (".svg",),
    "folded": (".folded", ".folded.txt", ".collapsed"),
    "speedscope": (".speedscope.json", ".speedscope"),
    "pprof": (".pb.gz", ".pprof", ".pprof.gz", ".pb"),
    "chrome-trace": (".trace.json", ".json"),
}
ONE_COUNT_FORMATS = ("speedscope", "pprof")  # one weight per stack: no room for a differential's BEFORE
TIMED_FORMATS = ("chrome-trace",)  # need each sample's time: made from `perf script` text
# A thread root as the folders write it: comm-PID/TID (--tid), comm-TID (off-CPU), comm-PID (--pid).
THREAD_ROOT = re.compile(r"^.+-\d+(?:/\d+)?$")


FREQUENCY = re.compile(r"^(\d+) Hz$")  # the `frequency` capture fact of a recording ("499 Hz")


class ExportRequest(NamedTuple):
    """The exports `record` / `offcpu` write beside the SVG: (format, path) pairs and the title. (Not a
    dataclass: `dataclasses` imports `inspect`, ~10 ms before `convert` can start folding.)"""

    files: tuple[tuple[str, Path], ...] = ()
    title: str | None = None

    @classmethod
    def of(cls, title: str | None, **paths: Path | None) -> ExportRequest:
        """ExportRequest.of(title, speedscope=p, pprof=None, chrome_trace=q): the formats given a path."""
        files = tuple((fmt.replace("_", "-"), path) for fmt, path in paths.items() if path is not None)
        return cls(files, title)

    def __bool__(self) -> bool:
        return bool(self.files)


class ExportError(FlamegraphError):
    """A profile this format cannot hold as it is (exit 3), e.g. fractional counts in pprof."""


def format_of(path: str) -> str | None:
    """The format a file name asks for, from its ending; None when no format claims it."""
    name = path.lower()
    best: tuple[int, str] | None = None
    for fmt, endings in FORMATS.items():
        for ending in endings:
            if name.endswith(ending) and (best is None or len(ending) > best[0]):
                best = (len(ending), fmt)
    return best[1] if best else None


def known_endings() -> str:
    return ", ".join(f"{ending} ({fmt})" for fmt, endings in FORMATS.items() for ending in endings)


def describe(profile: FoldedProfile, title: str | None = None) -> str:
    """One line naming the profile: title, what was sampled, in which unit, and the command."""
    parts = [title or profile.metadata.get("command") or "flame graph"]
    what = ", ".join(x for x in (profile.event, profile.unit) if x)
    if what:
        parts.append(what)
    if title and "command" in profile.metadata:
        parts.append(profile.metadata["command"])
    return " - ".join(parts)


def capture_facts(profile: FoldedProfile) -> dict[str, str]:
    """The facts every export carries: unit, event, then the capture metadata in their order."""
    facts = {"unit": profile.unit}
    if profile.event:
        facts["event"] = profile.event
    facts.update(profile.metadata)
    return facts


def sampling_interval_ns(metadata: dict[str, str]) -> int | None:
    """1e9 / the sampling frequency, where the capture facts give one ("499 Hz"); None otherwise."""
    match = FREQUENCY.match(metadata.get("frequency", ""))
    return round(1e9 / int(match.group(1))) if match and int(match.group(1)) else None


def threaded(profile: FoldedProfile) -> bool:
    """Every stack is rooted at a thread (or process): exports then keep one view per thread."""
    roots = {stack.split(";", 1)[0] for stack in profile.counts}
    return bool(roots) and all(THREAD_ROOT.match(root) for root in roots)


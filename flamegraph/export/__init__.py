"""Exports for other profilers' viewers: speedscope, pprof and Chrome's Trace Event Format.

One module per format, each a pure function from our types to bytes:

    speedscope.render_speedscope(profile, title) -> bytes     # FoldedProfile -> speedscope JSON
    pprof.render_pprof(profile, title) -> bytes               # FoldedProfile -> gzip'd profile.proto
    chrome_trace.render_chrome_trace(timeline, title) -> bytes  # time-ordered samples -> Trace Event JSON
    timeline.read_timeline(lines, ...) -> Timeline            # `perf script` text -> samples in time order

Frame names go through `names.export_name` (bytes that are not UTF-8 as `\\xNN`, reversibly).
The formats and the file names they are known by live here, so `flamegraph convert` and
`render --format` agree; `write(profile, format, path)` (export/files.py) writes any of them.
Nothing here imports json or protobuf at module level: the CLI pays for a format only when it
writes one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

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


@dataclass(frozen=True)
class ExportRequest:
    """The exports `record` / `offcpu` write beside the SVG: (format, path) pairs and the title."""

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


from .files import write as write  # noqa: E402  (after the tables it reads: `export.write(profile, format, path)`)

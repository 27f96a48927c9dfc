"""Exports for other profilers' viewers: speedscope, pprof and Chrome's Trace Event Format.

One module per format, each a pure function from our types to bytes:

    speedscope.render_speedscope(profile, title) -> bytes     # FoldedProfile -> speedscope JSON
    pprof.render_pprof(profile, title) -> bytes               # FoldedProfile -> gzip'd profile.proto
    chrome_trace.render_chrome_trace(timeline, title) -> bytes  # time-ordered samples -> Trace Event JSON
    timeline.read_timeline(lines, ...) -> Timeline            # `perf script` text -> samples in time order

Frame names go through `names.export_name` (bytes that are not UTF-8 as `\\xNN`, reversibly).
The formats and the file names they are known by live in `formats.py`, so `flamegraph convert`
and `render --format` agree; `write(profile, format, path)` (export/files.py) writes any of them.
Nothing here imports json or protobuf at module level: the CLI pays for a format only when it
writes one.
"""

from __future__ import annotations

from .files import write as write
from .formats import EXPORTER as EXPORTER
from .formats import FORMATS as FORMATS
from .formats import ONE_COUNT_FORMATS as ONE_COUNT_FORMATS
from .formats import TIMED_FORMATS as TIMED_FORMATS
from .formats import ExportError as ExportError
from .formats import ExportRequest as ExportRequest
from .formats import capture_facts as capture_facts
from .formats import describe as describe
from .formats import format_of as format_of
from .formats import known_endings as known_endings
from .formats import sampling_interval_ns as sampling_interval_ns
from .formats import threaded as threaded

"""A Timeline -> Chrome's Trace Event Format (JSON): what Chrome DevTools, Perfetto and speedscope open.

One track per thread (`pid`/`tid`, named by `process_name`/`thread_name` metadata events). Time runs
along the x axis: consecutive samples of a thread that share a stack prefix become one "X" (complete)
slice per frame, so a function running for 40 samples is one 80 ms slice with its callees nested
inside. Slices nest strictly (a child starts and ends within its parent; parents come first) and
times are whole microseconds of perf's clock. Slices carry no `args`: speedscope's importer makes
them part of the frame's name, which would split one function into many. Frames get a
category: `operator` for MXNet operator frames (`[op] FullyConnected`), `kernel` (`_[k]`), `jit`
(`_[j]`), else `cpu` (`off-cpu` for waits). Capture facts go in `otherData`.

    {"traceEvents": [
      {"ph": "M", "name": "thread_name", "pid": 42, "tid": 43, "args": {"name": "python"}},
      {"ph": "X", "name": "main", "cat": "cpu", "pid": 42, "tid": 43, "ts": 1252176183, "dur": 6012},
      ...],
     "displayTimeUnit": "ms", "otherData": {"title": "...", "event": "cpu-clock", ...}}
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import groupby
from typing import Any

from .formats import EXPORTER
from .names import export_name
from .timeline import Span, Timeline


def category(frame: str, unit: str) -> str:
    if frame.startswith("[op] "):
        return "operator"
    if frame.endswith("_[k]"):
        return "kernel"
    if frame.endswith("_[j]"):
        return "jit"
    return "off-cpu" if unit == "microseconds" else "cpu"


def iter_slices(spans: list[Span], unit: str) -> Iterator[dict[str, Any]]:
    """The "X" events of one thread's spans (in time order): shared prefixes of touching spans merged."""
    opened: list[dict[str, Any]] = []  # the slices open now, root first
    emitted: list[dict[str, Any]] = []  # every slice, in the order opened (parents before children)
    end_us = 0

    def close(keep: int, at_us: int) -> None:
        while len(opened) > keep:
            event = opened.pop()
            event["dur"] = at_us - event["ts"]

    for span in spans:
        start_us = span.start // 1000
        touching = bool(opened) and start_us == end_us
        keep = 0
        if touching:
            while keep < min(len(opened), len(span.stack)) and opened[keep]["_frame"] == span.stack[keep]:
                keep += 1
        close(keep, min(start_us, end_us) if opened else start_us)
        for frame in span.stack[keep:]:
            event = {
                "ph": "X", "name": export_name(frame), "cat": category(frame, unit), "pid": span.pid,
                "tid": span.tid, "ts": start_us, "dur": 0, "_frame": frame,
            }  # fmt: skip
            opened.append(event)
            emitted.append(event)
        end_us = max(span.end // 1000, start_us)
    close(0, end_us)
    for event in emitted:
        del event["_frame"]
        yield event


def trace_document(timeline: Timeline, title: str | None = None) -> dict[str, Any]:
    events: list[dict[str, Any]] = []
    for pid, comm in sorted(timeline.processes.items()):
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": export_name(comm)}})
    for (pid, tid), comm in sorted(timeline.threads.items()):
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": export_name(comm)}})
    spans = sorted(timeline.spans, key=lambda s: (s.pid, s.tid, s.start))
    for _, thread_spans in groupby(spans, key=lambda s: (s.pid, s.tid)):
        events.extend(iter_slices(list(thread_spans), timeline.unit))
    facts = {"title": title or "flame graph", "unit": timeline.unit, "exporter": EXPORTER}
    if timeline.event:
        facts["event"] = timeline.event
    if timeline.interval_ns:
        facts["sampling interval"] = f"{timeline.interval_ns / 1e6:.3f} ms"
    facts.update(timeline.metadata)
    other = {export_name(k): export_name(v) for k, v in facts.items()}
    return {"traceEvents": events, "displayTimeUnit": "ms", "otherData": other}


def render_chrome_trace(timeline: Timeline, title: str | None = None) -> bytes:
    """The Trace Event Format JSON object, UTF-8, deterministic."""
    document = trace_document(timeline, title)
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"

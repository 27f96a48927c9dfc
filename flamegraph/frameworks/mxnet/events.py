"""Read a Chrome-trace JSON document as a stream of its event objects, in bounded memory.

MXNet's trace is one object whose "traceEvents" array holds an object per event, each indented over
several lines (continuous dump appends them a second's worth at a time, the closing lines at the end):
    {
        "traceEvents": [
            {
                "name": "FullyConnected",
                "cat": "operator",
                "ph": "B",
    ...
        ],
        "displayTimeUnit": "ms"
    }
A bare array of events is read too. The text is decoded a block at a time and each event parsed alone
(`json.JSONDecoder.raw_decode`), so memory is a block and one event, whatever the file's size. Where the
JSON breaks (a file cut short, garbage) the damage is said once and the rest is searched for flat objects
(`{...}` without a nested brace), each parsed alone: every complete event is recovered. Bytes that are
not UTF-8 are kept as surrogate escapes (what goes in comes out).
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from typing import Any, BinaryIO

BLOCK = 1 << 20
MAX_EVENT = 1 << 20  # one event never spans this much text: past it, the JSON is broken, not cut by a block
FLAT_OBJECT = re.compile(r"\{[^{}]*\}")  # an event without nested objects ("M" metadata nests; unneeded)
SPACE = re.compile(r"[\s,]*")  # what separates the events
WHITE = re.compile(r"\s*")
NUMBER_TAIL = re.compile(r"[0-9.eE+-]*")  # what may follow a number's prefix in the same number


class Broken(Exception):
    """The JSON breaks at `position` (characters into the text) for `reason`."""

    def __init__(self, reason: str, position: int) -> None:
        super().__init__(reason)
        self.reason, self.position = reason, position


class Text:
    """The stream's text, decoded a block at a time; `text[at:]` from `base` on is what is held."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        # What the stream holds now, up to a block (a buffered stream's `read` waits for a whole block: a trace
        # read as it is written, segment_reader.py, must give every complete event before it waits).
        self.read = getattr(stream, "read1", stream.read)
        self.decoder = codecs.getincrementaldecoder("utf-8")("surrogateescape")  # raw bytes kept, never raised
        self.text = ""
        self.at = 0  # the position read up to, in `text`
        self.base = 0  # the position of text[0] in the whole text
        self.ended = False

    def more(self) -> bool:
        """Read a block, dropping what has been read (positions then move: callers start over); False at the
        end of the stream, where nothing moves."""
        if self.ended:
            return False
        data = self.read(BLOCK)
        if not data:
            self.ended = True
            self.text += self.decoder.decode(b"", final=True)  # (an escaped incomplete character, if any)
            return False
        added = self.decoder.decode(data)
        self.base += self.at
        self.text = self.text[self.at :] + added
        self.at = 0
        return True

    def skip(self, pattern: re.Pattern[str] = SPACE) -> str:
        """The next character after what `pattern` matches ('' at the end)."""
        while True:
            self.at = pattern.match(self.text, self.at).end()  # type: ignore[union-attr]
            if self.at < len(self.text):
                return self.text[self.at]
            if not self.more():
                return ""

    def value(self, decoder: json.JSONDecoder) -> Any:
        """The JSON value at the position, read whole (more blocks while it is cut by the block's end)."""
        while True:
            try:
                found, end = decoder.raw_decode(self.text, self.at)
            except json.JSONDecodeError as err:
                if len(self.text) - self.at < MAX_EVENT and self.more():
                    continue
                raise Broken(err.msg, self.base + err.pos) from None
            except RecursionError:  # a value nested thousands deep: garbled, as json.loads would not read it
                raise Broken("nested too deep", self.base + self.at) from None
            if self._may_go_on(found, end) and self.more():  # a number the block's end cut: read it whole
                continue
            self.at = end
            return found

    def _may_go_on(self, found: object, end: int) -> bool:
        """Whether the value ends only because the text held so far does: a number ("12" of "12.5e3") with
        nothing after it but characters a number may hold."""
        if end == len(self.text):
            return True
        return isinstance(found, int | float) and not isinstance(found, bool) and NUMBER_TAIL.fullmatch(
            self.text, end) is not None

    def expect(self, character: str) -> None:
        if self.skip(WHITE) != character:
            raise Broken(f"Expecting '{character}' delimiter", self.base + self.at)
        self.at += 1


def iter_events(stream: BinaryIO, problems: list[str]) -> Iterator[dict[str, Any]]:
    """The event objects of the trace in `stream`; what is wrong with it appended to `problems` (one line)."""
    text = Text(stream)
    decoder = json.JSONDecoder()
    count = 0
    try:
        first = text.skip(WHITE)
        if not first:
            problems.append("empty file (the process ended before the profiler dumped)")
            return
        if first == "[" or _to_events(text, decoder):
            text.at += 1
            for event in _array(text, decoder):
                count += 1
                yield event
            return
        problems.append("no traceEvents list")
    except Broken as broken:
        recovered = 0
        for event in _recover(text):
            recovered += 1
            yield event
        problems.append(
            f"truncated or garbled JSON ({broken.reason} at byte {broken.position:,}): "
            f"{count + recovered:,} complete events recovered"
        )


def _to_events(text: Text, decoder: json.JSONDecoder) -> bool:
    """Past the document's members up to its "traceEvents" array (True, at its '['), or to its end (False)."""
    if text.skip(WHITE) != "{":
        raise Broken("Expecting value", text.base + text.at)
    text.at += 1
    while True:
        following = text.skip()
        if following == "}":
            return False
        if following != '"':
            raise Broken("Expecting property name enclosed in double quotes", text.base + text.at)
        key = text.value(decoder)
        text.expect(":")
        if text.skip(WHITE) == "[" and key == "traceEvents":
            return True
        text.value(decoder)


def _array(text: Text, decoder: json.JSONDecoder) -> Iterator[dict[str, Any]]:
    while True:
        following = text.skip()
        if following == "]":
            text.at += 1
            return
        if not following:
            raise Broken("Expecting ',' delimiter", text.base + text.at)
        event = text.value(decoder)
        if isinstance(event, dict):
            yield event


def _recover(text: Text) -> Iterator[dict[str, Any]]:
    """Every flat object parsed alone, from where the JSON broke to the end of the stream."""
    while True:
        last = text.at
        for match in FLAT_OBJECT.finditer(text.text, text.at):
            last = match.end()
            try:
                event = json.loads(match.group())
            except json.JSONDecodeError:
                continue
            if isinstance(event, dict):
                yield event
        brace = text.text.rfind("{", last)  # an object the block's end cuts: kept for the next block
        text.at = brace if brace >= 0 else len(text.text)
        if not text.more():
            return

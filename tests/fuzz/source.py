"""Fuzz input decoding: one byte string -> the options of a run and the text it reads.

A fuzz input is plain bytes, so the same file drives hypothesis, atheris and the corpus replay.
The first bytes pick options (each target says which); the rest is the text fed to the parser.
Reading past the end gives zeros, so every byte string is a valid input.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


class Source:
    """Reads options from the head of a fuzz input; `rest()` is the text that follows."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        value = self.data[self.pos] if self.pos < len(self.data) else 0
        self.pos += 1
        return value

    def flags(self, count: int) -> list[bool]:
        """`count` booleans (at most 8) from one byte."""
        value = self.byte()
        return [bool(value >> bit & 1) for bit in range(count)]

    def choice(self, options: Sequence[T]) -> T:
        return options[self.byte() % len(options)]

    def integer(self, size: int = 2) -> int:
        return int.from_bytes(bytes(self.byte() for _ in range(size)), "little")

    def text(self, limit: int = 40) -> str:
        """A length byte, then that many bytes (at most `limit`) decoded as argv would be."""
        length = min(self.byte(), limit)
        raw = self.data[self.pos : self.pos + length]
        self.pos += length
        return raw.decode("utf-8", "surrogateescape")

    def rest(self) -> bytes:
        return self.data[self.pos :]

"""Writing results without losing what the user had: atomic replace, '-' for stdout."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from ..diagnostics import InputMissing


@contextmanager
def atomic_output(path: Path | None) -> Iterator[BinaryIO]:
    """Write to a temporary file next to `path` and rename it over `path` only on success."""
    if path is None or str(path) == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    directory = path.parent if str(path.parent) else Path(".")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=directory)
    except OSError as err:
        raise InputMissing(f"{path}: cannot write: {err.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; outputs are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomically(path: Path | None, write: Callable[[BinaryIO], None]) -> None:
    with atomic_output(path) as out:
        write(out)

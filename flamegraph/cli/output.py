"""Writing results without losing what the user had: atomic replace, '-' for stdout."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from ..diagnostics import FlamegraphError, InputMissing
from ..folded import write_folded
from ..model import FoldedProfile


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


class ScratchRecording:
    """perf.data in a scratch directory unless the user named a path; removed after success, kept (and
    its path printed) when a step after recording fails, so nothing recorded is lost.

        with ScratchRecording("flamegraph-record-", perf_data, status.note) as session:
            recording = record(spec, session.data_path)
            session.recorded = True
            ...
    """

    def __init__(self, prefix: str, perf_data: Path | None, note: Callable[[str], None]) -> None:
        self.scratch = Path(tempfile.mkdtemp(prefix=prefix))
        self.data_path = perf_data or self.scratch / "perf.data"
        self.keep = perf_data is not None
        self.recorded = False
        self._note = note

    def __enter__(self) -> ScratchRecording:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: object) -> None:
        if isinstance(error, FlamegraphError) and self.recorded and not self.keep:
            self.keep = True
            self._note(f"flamegraph: the recording is kept in {self.data_path}")
        if not self.keep:
            shutil.rmtree(self.scratch, ignore_errors=True)


def write_results(
    profile: FoldedProfile,
    folded: Path | None,
    svg: Path | None,
    render: Callable[[], bytes],
    note: Callable[[str], None],
) -> None:
    """--folded and the SVG of a recording, each written atomically and announced."""
    if folded is not None:
        write_atomically(folded, lambda out: write_folded(profile, out))
        note(f"wrote {folded} ({len(profile.counts):,} stacks)")
    if svg is not None:
        with atomic_output(svg) as out:
            out.write(render())
        note(f"wrote {svg}")

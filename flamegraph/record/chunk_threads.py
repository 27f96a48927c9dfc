"""Thread names carried from chunk to chunk of a streamed recording.

Each chunk is a whole perf.data, but at a switch perf 6.1 synthesises the COMM of the processes it was
given only (the launched command's first thread, or the threads a --pid had when perf attached): a thread
started in an earlier chunk has no COMM record in the later ones, and `perf script` names it `:TID`
(`:6700;clone3;start_thread;...` where one whole perf.data gives `thrc;clone3;...`). One `ThreadNames`
reads the chunks' text in order and gives such a header the name its thread had in the chunks before
(for the same pid when perf prints it); every other header teaches it its thread's name, so a name set
later (`prctl(PR_SET_NAME)`, an exec) is the one carried on.

    names = ThreadNames()
    for chunk in chunks:
        fold_blocks(collapser, names.blocks(iter_blocks(stream_of(chunk))), path)
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

# A header (-F comm,pid,tid,time,... or comm,tid,time,...; without -g perf right-aligns the comm): the comm
# up to the blank before the ids, the time after them. Frame lines begin with a tab.
_HEADER = re.compile(rb"^ *([^\t\n ][^\n]*?) +(?:(\d+)/)?(\d+) +(?:\[\d+\] +)?\d+\.\d+: ", re.M)
# A header whose comm is perf's stand-in for a thread it has no COMM of: ':' and the tid.
_UNNAMED = re.compile(rb"^( *):(\d+)( +(?:(\d+)/)?(\d+) )", re.M)


class ThreadNames:
    """tid -> (pid or None, comm) as the chunks read so far name it (see the module's doc)."""

    def __init__(self) -> None:
        self._names: dict[bytes, tuple[bytes | None, bytes]] = {}
        self.renamed = 0  # headers given their thread's name

    def blocks(self, blocks: Iterable[bytes]) -> Iterator[bytes]:
        """One chunk's `perf script` text given as raw blocks, handed on in whole lines, named."""
        carry = b""
        for block in blocks:
            data = carry + block if carry else block
            cut = data.rfind(b"\n") + 1
            if not cut:
                carry = data
                continue
            carry = data[cut:]
            yield self._name(data[:cut])
        if carry:
            yield self._name(carry)

    def _name(self, text: bytes) -> bytes:
        # Named with what the chunks before said, then learned from: a thread renamed in this text keeps
        # its old name in the headers before the rename (perf names none of a chunk's threads by a later COMM).
        if self._names and (text[:1] in b": " or b"\n:" in text or b" :" in text):
            text = _UNNAMED.sub(self._known, text)
        learned = self._names
        for comm, pid, tid in dict.fromkeys(_HEADER.findall(text)):
            if comm[:1] == b":" and (comm[1:].isdigit() or comm == b":-1"):
                continue  # perf's stand-in (or an exited task's): no name to learn
            learned[tid] = (pid or None, comm)
        return text

    def _known(self, match: re.Match[bytes]) -> bytes:
        tid, pid = match.group(5), match.group(4)
        known = self._names.get(tid)
        if match.group(2) != tid or known is None or (pid and known[0] and known[0] != pid):
            return match.group(0)
        self.renamed += 1
        return match.group(1) + known[1] + match.group(3)

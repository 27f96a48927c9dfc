"""Examples for the search box, taken from the graph itself (never `^dnnl` on a graph without oneDNN).

From the heaviest functions of the table under the graph, their short names:
    mxnet::engine::ThreadedEngine::WaitForVar [S]              -> WaitForVar
    dmlc::ThreadedIter<mxnet::DataBatch>::Init                 -> Init
    mxnet::op::mxnet_op::Kernel<...>::Launch<...>              -> Launch
    [libmxnet.so], libmxnet.so+0x62333d0, [S]                  -> skipped (no function name)
"""

from __future__ import annotations

import re

EXAMPLES = 2
MIN_LENGTH = 3
MAX_LENGTH = 24  # a placeholder is short
STATE = re.compile(r"\s\[[A-Za-z?+:]{1,3}\]$")
NOT_A_NAME = re.compile(r"^\[|\+0x|^[0-9a-fx]+$")


def short_name(name: str) -> str | None:
    """The last `::` component of a name, templates, arguments and a state suffix removed."""
    name = STATE.sub("", name)
    depth = 0
    plain = []
    for char in name:  # drop <...> and (...) at any depth
        if char in "<(":
            depth += 1
        elif char in ">)" and depth:
            depth -= 1
        elif not depth:
            plain.append(char)
    text = "".join(plain).strip()
    if not text or NOT_A_NAME.search(text):
        return None
    words = text.rsplit("::", 1)[-1].split()
    last = words[-1].split("@")[0].strip("_") if words else ""
    return last if MIN_LENGTH <= len(last) <= MAX_LENGTH and re.fullmatch(r"[A-Za-z_][\w.]*", last) else None


def search_examples(names: list[str], offcpu: bool) -> list[str]:
    """Up to two regular expressions that match something in the graph, heaviest first."""
    found: list[str] = []
    for name in names:
        short = short_name(name)
        if short is not None and re.escape(short) not in found:
            found.append(re.escape(short))
        if len(found) == EXAMPLES:
            break
    if offcpu and len(found) < EXAMPLES:
        found.append(r"\[S\]")
    return found

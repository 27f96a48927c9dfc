"""Pure clean-ups of one perf frame: offsets, parameter lists, quotes, Java 'L' prefixes, Rust
leftovers (flamegraph.folding.rust), annotations.

All functions take and return bytes (perf prints raw bytes; what goes in comes out).
Two parameter-list rules exist: the reference's (cut at the first '(') for --compat, and
ours, which cuts only the trailing top-level parameter list, so that
    std::_Function_handler<void (std::shared_ptr<dmlc::ManualEvent>), F>::_M_invoke(std::_Any_data const&)
keeps its template arguments whole.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .rust import demangle_legacy

OFFSET = re.compile(rb"\+0x[\da-f]+$")
GO_METHOD = re.compile(rb"\.\(.*\)\.")  # net/http.(*Client).Do: the parens are part of the name (see is_go_method)
REFERENCE_PARAMS = re.compile(rb"\((?!anonymous namespace\)).*")
KERNEL_DSO_REFERENCE = re.compile(rb"(^\[|vmlinux$)")
# Ours adds the images Debian's debug packages install by version and module files:
#   [kernel.kallsyms]  [vmlinux-6.1.0-27-amd64]  /usr/lib/debug/boot/vmlinux-6.1.0-27-amd64
#   /lib/modules/6.1.0-27-amd64/build/vmlinux  /lib/modules/6.1.0-27-amd64/kernel/fs/ext4/ext4.ko
KERNEL_DSO = re.compile(rb"^\[|vmlinux(?:-[^/]*)?$|\.ko(?:\.(?:xz|gz|zst))?$")
PERF_MAP_DSO = re.compile(rb"/tmp/perf-\d+\.map")
JITTED_DSO = re.compile(rb"(?:^|/)jitted-\d+-\d+\.so$")  # written by `perf inject --jit`

ANONYMOUS_NAMESPACE = b"(anonymous namespace)"
OPERATOR = b"operator"
OPERATOR_CHARS = frozenset(b"<>=!+-*/%&|^~,")
OPENERS = frozenset(b"<([{")
CLOSERS = frozenset(b">)]}")


def _is_ident(byte: int) -> bool:
    return byte == 0x5F or 0x30 <= byte <= 0x39 or 0x41 <= byte <= 0x5A or 0x61 <= byte <= 0x7A


def _skip_operator(name: bytes, i: int) -> int | None:
    """If `operator` starts at i, return the index after its symbol (`()`, `<<`, `[]`, `->`...)."""
    end = i + len(OPERATOR)
    if not name.startswith(OPERATOR, i) or (i and _is_ident(name[i - 1])):
        return None
    if end < len(name) and _is_ident(name[end]):
        return None  # operatorFoo, or "operator new": a word, handled as ordinary text
    if name.startswith(b"()", end) or name.startswith(b"[]", end):
        return end + 2
    while end < len(name) and name[end] in OPERATOR_CHARS:
        end += 1
    return end


def cut_params(name: bytes) -> bytes:
    """Drop the trailing top-level parameter list (and qualifiers after it): C++/Java/C names."""
    if name.find(b"(") < 0 or is_go_method(name):  # find: `in` costs ~2 k instructions on bytes (3.11)
        return name
    depth = 0
    last_open = -1
    i = 0
    n = len(name)
    while i < n:
        after_operator = _skip_operator(name, i) if name[i] == 0x6F else None
        if after_operator is not None:
            i = after_operator
            continue
        byte = name[i]
        if byte in OPENERS:
            if byte == 0x28 and depth == 0:
                if name.startswith(ANONYMOUS_NAMESPACE, i):
                    i += len(ANONYMOUS_NAMESPACE)
                    continue
                last_open = i
            depth += 1
        elif byte in CLOSERS and depth:
            depth -= 1
        i += 1
    return name if last_open < 0 else name[:last_open]


def is_go_method(name: bytes) -> bool:
    """GO_METHOD.search(name) is not None, in linear time (the regex rescans from every '.(': quadratic)."""
    for line in name.split(b"\n"):  # `.` stops at a newline
        start = line.find(b".(")
        if start >= 0 and line.find(b").", start + 2) >= 0:
            return True
    return False


def cut_params_reference(name: bytes) -> bytes:
    """stackcollapse-perf.pl: everything after the first '(' (not an anonymous namespace) is noise."""
    if is_go_method(name):
        return name
    return REFERENCE_PARAMS.sub(b"", name, count=1)


def tidy_name(name: bytes, java: bool, compat: bool) -> bytes:
    name = name.replace(b";", b":")  # ';' separates frames in folded text
    name = cut_params_reference(name) if compat else cut_params(name)
    name = name.replace(b'"', b"").replace(b"'", b"")
    if java and name.find(b"/") >= 0 and name.startswith(b"L"):
        name = name[1:]  # Lorg/mozilla/Foo:.call -> org/mozilla/Foo:.call
    if not compat:
        # Last, so that what the escapes stand for is kept: a lifetime's quote, a ( that is no parameter list.
        name = demangle_legacy(name).replace(b";", b":")
    return name


PYTHON_PREFIX = b"py::"  # CPython's perf support (3.12+): py::QUALNAME:FILE


def python_frame(symbol: bytes) -> bytes | None:
    """A Python function as CPython's perf support names it, read as Python: the function and its
    file's name; None for any other symbol.

        py::train_epoch:/home/u/train_mlp.py               -> train_epoch (train_mlp.py)
        py::_find_and_load:<frozen importlib._bootstrap>   -> _find_and_load (<frozen importlib._bootstrap>)
        py::Net.forward.<locals>.<lambda>:/m/net.py        -> Net.forward.<locals>.<lambda> (net.py)
    """
    if not symbol.startswith(PYTHON_PREFIX):
        return None
    function, colon, file = symbol[len(PYTHON_PREFIX) :].partition(b":")  # a qualname has no colon
    if not colon or not function or function.find(b" ") >= 0:
        return None
    if not file.startswith(b"<"):
        file = file.rsplit(b"/", 1)[-1]
    return (function + b" (" + file + b")").replace(b";", b":")  # a file named "se;mi.py" is one frame


# A recording has a few hundred DSOs and thousands of distinct frames: each DSO is classified once.
@lru_cache(maxsize=4096)
def is_kernel_dso(dso: bytes, compat: bool = False) -> bool:
    """Kernel code: the reference's rule with --compat, ours (versioned images, modules) otherwise."""
    pattern = KERNEL_DSO_REFERENCE if compat else KERNEL_DSO
    return pattern.search(dso) is not None and dso.find(b"unknown") < 0


@lru_cache(maxsize=4096)
def is_jit_dso(dso: bytes, compat: bool) -> bool:
    if PERF_MAP_DSO.search(dso):
        return True
    return not compat and JITTED_DSO.search(dso) is not None

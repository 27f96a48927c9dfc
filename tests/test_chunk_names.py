"""A streamed chunk scripted without perf's demangling, demangled after: the same text as perf demangling."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from flamegraph.io.perf import find_perf, script_command
from flamegraph.record.chunk_names import NO_DEMANGLE, ChunkNames, alias_groups
from flamegraph.record.spec import ONCPU_FIELDS
from flamegraph.record.spool import Spool
from flamegraph.record.stream import StreamedFold

pytestmark = pytest.mark.parallel  # its perf tests were proven beside two busy loops (make test's parallel part)

needs_cxxfilt = pytest.mark.skipif(shutil.which("c++filt") is None, reason="needs c++filt (binutils)")
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to build the C++ program")

# A C++ program whose hot functions are templates and methods (std::string in their names), and, with
# `alias` as its argument, a function that two symbols name: `hot_c` and `work_alias(long)` at one address.
# perf picks among them by comparing the names: `hot_c` mangled (fewer leading underscores than
# `_Z10work_aliasl`), `work_alias` demangled (the longer name).
PROGRAM = r"""
#include <cstring>
#include <string>
namespace work {
template <typename T> struct Box {
    __attribute__((noinline)) T spin(const std::string& tag, T n) {
        volatile T s = 0;
        for (T i = 0; i < n; ++i) s = s + (i * 7 + (T)tag.size()) % 13;
        return s;
    }
};
}
extern "C" __attribute__((noinline)) long hot_c(long n) {
    volatile long s = 0;
    for (long i = 0; i < n; ++i) s = s + i % 11;
    return s;
}
long work_alias(long n) __attribute__((alias("hot_c")));
int main(int argc, char** argv) {
    long total = 0;
    for (int round = 0; round < 40; ++round) {
        if (argc > 1 && !strcmp(argv[1], "alias")) total += work_alias(2000000);
        else total += work::Box<long>().spin(std::string("x"), 2000000);
    }
    return total == 42;
}
"""
FIELDS = ["-F", ONCPU_FIELDS]


def record(tmp_path: Path, *args: str) -> Path:
    source, program = tmp_path / "work.cpp", tmp_path / "work"
    if not program.exists():
        source.write_text(PROGRAM)
        subprocess.run(["g++", "-O1", "-g", "-o", str(program), str(source)], check=True, timeout=120)
    data = tmp_path / f"perf-{'-'.join(args) or 'plain'}.data"
    subprocess.run(
        [find_perf(), "record", "-q", "-N", "--buildid-all", "--buildid-mmap", "-e", "cpu-clock", "-F", "499",
         "--call-graph", "dwarf,8192", "-o", str(data), "--", str(program), *args],
        check=True, timeout=60, capture_output=True,
    )  # fmt: skip
    return data


def perf_text(data: Path, *extra: str) -> bytes:
    return subprocess.run(script_command(str(data), extra=[*FIELDS, *extra]), capture_output=True, check=True).stdout


@pytest.mark.perf
@needs_gxx
@needs_cxxfilt
def test_a_chunk_without_perfs_demangling_reads_as_perf_demangling_prints_it(tmp_path: Path) -> None:
    data = record(tmp_path)
    names = ChunkNames.find()
    assert names is not None
    today = perf_text(data)
    assert b"work::Box<long>::spin" in today
    assert b"_ZN4work3BoxIlE4spin" in perf_text(data, NO_DEMANGLE)  # what perf prints without demangling
    assert names.script(str(data), FIELDS) == today
    assert names.rescripted == 0
    broken = ChunkNames(shutil.which("false") or "false")  # a c++filt that fails: perf demangles, as before
    assert broken.script(str(data), FIELDS) is None


@pytest.mark.perf
@needs_gxx
@needs_cxxfilt
def test_a_name_perf_picks_among_aliases_by_its_demangled_form_is_scripted_as_before(tmp_path: Path) -> None:
    data = record(tmp_path, "alias")
    assert {b"hot_c", b"_Z10work_aliasl"} in alias_groups(tmp_path / "work").values()
    today = perf_text(data)
    assert b" work_alias " in today  # demangling, perf names the function by its C++ alias...
    assert b" hot_c " in perf_text(data, NO_DEMANGLE)  # ...without, by the C one: c++filt cannot undo that
    names = ChunkNames.find()
    assert names is not None
    assert names.script(str(data), FIELDS) is None
    assert names.rescripted == 1


@needs_cxxfilt
def test_frames_are_demangled_as_perf_prints_them_and_nothing_else() -> None:
    names = ChunkNames.find()
    assert names is not None
    text = (
        b"python 1/1 1.0: cpu-clock:\n"
        b"\t    7f01 _ZNSs4_Rep10_M_disposeERKSaIcE (/nonexistent/libx.so)\n"
        b"\t    7f02 _ZNSt6thread4joinEv@plt (/nonexistent/libx.so)\n"
        b"\t    7f03 main (/nonexistent/x)\n"
        b"\tffffffff81000000 _raw_spin_lock ([kernel.kallsyms])\n"
    )
    assert names.rewrite(text, {}) == (
        b"python 1/1 1.0: cpu-clock:\n"
        b"\t    7f01 std::string::_Rep::_M_dispose (/nonexistent/libx.so)\n"
        b"\t    7f02 std::thread::join@plt (/nonexistent/libx.so)\n"
        b"\t    7f03 main (/nonexistent/x)\n"
        b"\tffffffff81000000 _raw_spin_lock ([kernel.kallsyms])\n"
    )


@needs_cxxfilt
@pytest.mark.parametrize(
    "line",
    [
        b"\t    7f01 camlStdlib__List_map_123 (/nonexistent/app)",  # perf's OCaml demangler
        b"\t    7f01 Lcom/x/Y;run()V (/nonexistent/app)",  # perf's Java demangler
        b"python 1/1 1.0: cpu-clock:  7f01 _ZN1a1bEv (/nonexistent/app)",  # a mangled name outside a frame line
        b"\tffffffff81000000 _ZN1a1bEv ([kernel.kallsyms])",  # ... or in the kernel's
    ],
)
def test_a_name_perf_demangles_otherwise_makes_the_chunk_scripted_as_before(line: bytes) -> None:
    names = ChunkNames.find()
    assert names is not None
    assert names.rewrite(b"python 1/1 1.0: cpu-clock:\n" + line + b"\n", {}) is None


@needs_cxxfilt
def test_the_streamed_folder_scripts_its_chunks_without_perfs_demangling(tmp_path: Path) -> None:
    spool = Spool(tmp_path, cap=64_000_000)
    assert isinstance(StreamedFold(spool, lambda: None, FIELDS).names, ChunkNames)  # type: ignore[arg-type,return-value]
    custom = StreamedFold(spool, lambda: None, FIELDS, fold_chunk=lambda c, p, a: None)  # type: ignore[arg-type,return-value]
    assert custom.names is None  # a reader of its own (--mxnet's) scripts as it does


def test_a_short_recording_keeps_perfs_demangling_a_long_job_skips_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The alias groups cost a one-off that only a long job pays back: chunks before DEMANGLE_AFTER are
    scripted by perf as they always were, the later ones through ChunkNames."""
    from flamegraph.record import stream

    scripted: list[str] = []

    class Names:
        def script(self, path: str, args: object) -> bytes:
            scripted.append(path)
            return b""

    plain: list[str] = []
    monkeypatch.setattr(stream, "fold_input", lambda collapser, path, script_args, rewrite: plain.append(path))
    monkeypatch.setattr(stream, "fold_blocks", lambda collapser, blocks, path: None)
    fold = StreamedFold(Spool(tmp_path, cap=64_000_000), lambda: None, FIELDS)  # type: ignore[arg-type,return-value]
    fold.names = Names()  # type: ignore[assignment]
    for number in range(stream.DEMANGLE_AFTER + 2):
        fold.chunks = number
        fold._fold_plain(None, f"chunk{number}", FIELDS, fold.threads.blocks)  # type: ignore[arg-type]
    assert plain == [f"chunk{n}" for n in range(stream.DEMANGLE_AFTER)]
    assert scripted == [f"chunk{stream.DEMANGLE_AFTER}", f"chunk{stream.DEMANGLE_AFTER + 1}"]

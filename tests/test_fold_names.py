"""Names come from the binary that was recorded: build-id checks before grouping [unknown] frames by
function, kernel images named by version, and Rust's half-demangled legacy names made readable."""

from __future__ import annotations

import pickle
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from helpers.dsos import QUADMATH, full_parse, need_quadmath
from helpers.shared import shared_dir
from hypothesis import example, given
from hypothesis import strategies as st

from flamegraph.folding.perf import FoldOptions, PerfCollapser
from flamegraph.folding.rust import demangle_legacy
from flamegraph.folding.tidy import is_kernel_dso, tidy_name
from flamegraph.io.diagnostics import Diagnostics
from flamegraph.naming.buildid import RecordedBuildIds, parse_buildid_list, read_recorded_build_ids, same_build_id
from flamegraph.naming.grouping import NOT_RECORDED_HINT, UNVERIFIED, grouping_note
from flamegraph.naming.observer import FrameObserver
from flamegraph.naming.symbols import DIFFERENT, NO_LOCAL_ID, NOT_RECORDED, EhFrameIndex, FunctionNamer

pytestmark = pytest.mark.parallel  # its perf tests were proven beside two busy loops (make test's parallel part)

DD_STACKS = shared_dir() / "peer-tests" / "flamegraph-pl" / "perf-dd-stacks-01.txt"
QUADMATH_ID = "549b4c82347785459571c79239872ad31509dcf4"  # numpy 1.23.5's bundled libquadmath


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "flamegraph", *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )


def fold(text: bytes, options: FoldOptions) -> dict[str, float]:
    collapser = PerfCollapser(options, Diagnostics(echo=False))
    collapser.feed(text.splitlines(keepends=True), "test")
    return collapser.profile().counts


# -- grouping only where the build-id proves the file is the recorded one ---------------------------------


@pytest.mark.shared
def test_text_from_another_machine_keeps_its_dso_names() -> None:
    """FlameGraph's dd recording (2015, another machine) must not be named from this machine's /bin/dd."""
    default = run_cli("fold", str(DD_STACKS))
    assert default.returncode == 0, default.stderr
    assert re.search(r"\bdd\+0x", default.stdout) is None
    assert "[dd]" in default.stdout
    assert default.stderr == ""


@pytest.mark.shared
def test_text_is_grouped_only_when_asked_and_then_called_unverified() -> None:
    asked = run_cli("fold", "--group-unknown", str(DD_STACKS))
    assert asked.returncode == 0
    assert asked.stderr.splitlines() == [UNVERIFIED]
    assert "unverified" in UNVERIFIED and "no build-ids" in UNVERIFIED
    plain = run_cli("fold", "--no-group-unknown", str(DD_STACKS))
    assert "[dd]" in plain.stdout and plain.stderr == ""


def quadmath_frames() -> tuple[bytes, int, int]:
    need_quadmath()
    (a, _), (b, _) = full_parse(QUADMATH)[10:12]
    lib = str(QUADMATH).encode()
    text = b"".join(
        b"python 100 1.000001: 1 cpu-clock:\n\t%x [unknown] (%s)\n\t4011 main (/usr/bin/python3)\n\n" % (addr, lib)
        for addr in (a, a + 1, b + 2)
    )
    return text, a, b


def test_the_index_reads_the_build_id_of_the_file_it_indexes() -> None:
    need_quadmath()
    assert EhFrameIndex.load(str(QUADMATH)).build_id == QUADMATH_ID


@pytest.mark.parametrize(
    ("recorded_ids", "grouped", "reason"),
    [
        ({QUADMATH_ID}, True, None),
        ({QUADMATH_ID.upper()}, True, None),
        ({"0" * 40}, False, DIFFERENT),
        ({QUADMATH_ID, "0" * 40}, False, DIFFERENT),  # two recordings of different builds folded together
        (set(), False, NOT_RECORDED),
    ],
    ids=["same", "same-uppercase", "different", "two-builds", "not-recorded"],
)
def test_a_dso_is_grouped_only_with_the_recorded_build_id(
    recorded_ids: set[str], grouped: bool, reason: str | None
) -> None:
    need_quadmath()
    text, a, b = quadmath_frames()
    by_path = {str(QUADMATH).encode(): frozenset(recorded_ids)} if recorded_ids else {}
    namer = FunctionNamer(RecordedBuildIds(by_path))
    counts = fold(text, FoldOptions(frame_hook=FrameObserver(namer)))
    base = QUADMATH.name
    if grouped:
        assert counts == {f"python;main;{base}+{a:#x}": 2, f"python;main;{base}+{b:#x}": 1}
        assert namer.refused == {} and grouping_note(namer) is None
    else:
        assert counts == {f"python;main;[{base}]": 3}
        assert namer.refused == {str(QUADMATH): reason}
        assert namer.refused_frames == 3  # three distinct addresses
        hint = f"; {NOT_RECORDED_HINT}" if reason == NOT_RECORDED else ""
        assert grouping_note(namer) == (
            f"note: 1 DSO kept as [dso], not grouped by function (3 distinct frames): {base} ({reason}){hint}"
        )


def test_a_file_without_build_id_is_not_trusted(tmp_path: Path) -> None:
    """A recorded build-id, a file here without one: not provably the same."""
    need_quadmath()
    note = struct.pack("<III", 4, 20, 3) + b"GNU\0" + bytes.fromhex(QUADMATH_ID)  # NT_GNU_BUILD_ID
    content = QUADMATH.read_bytes()
    assert content.count(note) == 1
    copy = tmp_path / QUADMATH.name
    copy.write_bytes(content.replace(note, note[:8] + b"\x99" + note[9:]))  # another note type: no build-id
    assert EhFrameIndex.load(str(copy)).build_id is None
    namer = FunctionNamer(RecordedBuildIds({str(copy).encode(): frozenset({QUADMATH_ID})}))
    assert namer(b"%x" % full_parse(QUADMATH)[10][0], str(copy).encode()) is None
    assert namer.refused == {str(copy): NO_LOCAL_ID}


def test_the_note_counts_dsos_and_frames_by_reason() -> None:
    namer = FunctionNamer(RecordedBuildIds(problems=("a.data: perf buildid-list failed: bad file",)))
    namer.refused = {f"/opt/lib{i}.so": NOT_RECORDED for i in range(6)} | {"/usr/bin/tool": DIFFERENT}
    namer.refused_frames = 1
    assert grouping_note(namer) == (
        "note: 7 DSOs kept as [dso], not grouped by function (1 distinct frame): "
        f"tool ({DIFFERENT}); lib0.so, lib1.so, lib2.so, lib3.so and 2 more ({NOT_RECORDED}) "
        "(a.data: perf buildid-list failed: bad file)"
    )
    assert grouping_note(None) is None and grouping_note(FunctionNamer()) == UNVERIFIED


def test_jit_and_kernel_code_are_not_subject_to_the_build_id_rule() -> None:
    """Perf maps and injected jitted-*.so have their own names, the kernel's build-id is filed under
    [kernel.kallsyms]: the namer is never asked about them, so no note blames them."""
    namer = FunctionNamer(RecordedBuildIds())
    text = (
        b"python 100 1.000001: 1 cpu-clock:\n\t7f01 [unknown] (/tmp/perf-100.map)\n"
        b"\t7f02 jit_gemm (/root/.debug/jit/jitted-100-1.so)\n\t7f03 [unknown] (/root/.debug/jit/jitted-100-2.so)\n\n"
    )
    kernel = b"/usr/lib/debug/boot/vmlinux-6.1.0-27-amd64"
    text += b"python 100 1.000002: 1 cpu-clock:\n\tffffffff81000010 [unknown] (%s)\n\n" % kernel
    counts = fold(text, FoldOptions(annotate_jit=True, frame_hook=FrameObserver(namer)))
    assert counts == {
        "python;[jitted-100-2.so]_[j];jit_gemm_[j];[perf-100.map]_[j]": 1,
        "python;[vmlinux-6.1.0-27-amd64]": 1,
    }
    assert namer.refused == {} and namer.unreadable == {}


def test_the_namer_keeps_the_recorded_build_ids_across_processes() -> None:
    recorded = RecordedBuildIds({b"/usr/lib/libx.so": frozenset({"ab" * 20})})
    clone = pickle.loads(pickle.dumps(FunctionNamer(recorded)))
    assert clone.recorded == recorded and clone._indexes == {}
    assert pickle.loads(pickle.dumps(FunctionNamer())).recorded is None


def test_buildid_list_output_is_parsed() -> None:
    output = [
        b"4a5a9b0affb66c437abcd455d2738af879985fa9 [kernel.kallsyms]\n",
        b"e59f954969893171a6b23be9244b941749e1257f /tmp/dir with space/mydd\n",
        b"                                         /usr/lib/x86_64-linux-gnu/libc.so.6\n",  # recorded with -B
        b"0123456789abcdef /usr/lib/liblld.so\n",  # an 8-byte id (lld's default)
    ]
    assert parse_buildid_list(output) == {
        b"[kernel.kallsyms]": frozenset({"4a5a9b0affb66c437abcd455d2738af879985fa9"}),
        b"/tmp/dir with space/mydd": frozenset({"e59f954969893171a6b23be9244b941749e1257f"}),
        b"/usr/lib/liblld.so": frozenset({"0123456789abcdef"}),
    }
    assert same_build_id("0123456789abcdef", "0123456789abcdef" + "0" * 24)  # perf's padded 20-byte slot
    assert not same_build_id("0123456789abcdef", "0123456789abcdee")
    merged = RecordedBuildIds({b"/a": frozenset({"1"})}).merge(
        RecordedBuildIds({b"/a": frozenset({"2"}), b"/b": frozenset({"3"})})
    )
    assert merged.by_path == {b"/a": frozenset({"1", "2"}), b"/b": frozenset({"3"})}


def test_unreadable_build_ids_are_a_problem_not_an_error(tmp_path: Path) -> None:
    bogus = tmp_path / "perf.data"
    bogus.write_bytes(b"PERFILE2" + b"\0" * 100)
    recorded = read_recorded_build_ids(str(tmp_path / "missing.data"))
    assert recorded.by_path == {} and recorded.problems and "perf buildid-list failed" in recorded.problems[0]
    assert read_recorded_build_ids(str(bogus)).by_path == {}


# -- kernel images named by version ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dso", "ours", "reference"),
    [
        ("[kernel.kallsyms]", True, True),
        ("[vmlinux-6.1.0-27-amd64]", True, True),
        ("[ext4]", True, True),
        ("/lib/modules/4.1.0-virtual/build/vmlinux", True, True),
        ("/usr/lib/debug/boot/vmlinux-6.1.0-27-amd64", True, False),
        ("/boot/vmlinux-6.1.0-27-amd64", True, False),
        ("/lib/modules/6.1.0-27-amd64/kernel/fs/ext4/ext4.ko", True, False),
        ("/lib/modules/6.1.0-27-amd64/kernel/fs/ext4/ext4.ko.xz", True, False),
        ("[unknown]", False, False),
        ("/usr/lib/x86_64-linux-gnu/libc.so.6", False, False),
        ("/opt/vmlinux-tools/bin/decode", False, False),
        ("/usr/bin/python3", False, False),
        ("//anon", False, False),
    ],
)
def test_kernel_dsos(dso: str, ours: bool, reference: bool) -> None:
    assert is_kernel_dso(dso.encode()) is ours
    assert is_kernel_dso(dso.encode(), compat=True) is reference


def test_versioned_kernel_frames_are_annotated() -> None:
    text = (
        b"prog 7 1.000001: 1 cpu-clock:\n"
        b"\tffffffff81000010 do_syscall_64 (/usr/lib/debug/boot/vmlinux-6.1.0-27-amd64)\n"
        b"\tffffffff81000020 ext4_read (/lib/modules/6.1.0-27-amd64/kernel/fs/ext4/ext4.ko)\n"
        b"\t4011 main (/usr/bin/prog)\n\n"
    )
    assert fold(text, FoldOptions(annotate_kernel=True)) == {"prog;main;ext4_read_[k];do_syscall_64_[k]": 1}
    assert fold(text, FoldOptions(annotate_kernel=True, compat=True)) == {"prog;main;ext4_read;do_syscall_64": 1}


# -- Rust's legacy mangling left in names ----------------------------------------------------------


HASH = "::h0123456789abcdef"


@pytest.mark.parametrize(
    ("name", "readable"),
    [
        (
            "core::ptr::drop_in_place$LT$alloc..vec..Vec$LT$u8$GT$$GT$" + HASH,
            "core::ptr::drop_in_place<alloc::vec::Vec<u8>>",
        ),
        ("_$LT$std..fs..File$u20$as$u20$std..io..Read$GT$::read" + HASH, "<std::fs::File as std::io::Read>::read"),
        ("std::rt::lang_start::_$u7b$$u7b$closure$u7d$$u7d$" + HASH, "std::rt::lang_start::{{closure}}"),
        (
            "_$LT$grep..ReadByLine$LT$$u27$s$C$$u20$M$GT$$GT$::run::h30ecedc997ad7e32",
            "<grep::ReadByLine<'s, M>>::run",
        ),
        ("_$LT$$RF$$u27$a$u20$mut$u20$I$GT$::next" + HASH, "<&'a mut I>::next"),
        ("_$LT$$BP$const$u20$T$GT$::is_null" + HASH, "<*const T>::is_null"),
        ("core::fmt::builders::_$u5b$T$u5d$$u7e$x$SP$y" + HASH, "core::fmt::builders::[T]~x@y"),
        (
            "_$LT$F$u20$as$u20$core..ops..FnOnce$LT$$LP$$RP$$GT$$GT$::call_once" + HASH,
            "<F as core::ops::FnOnce<()>>::call_once",
        ),
        ("_$LT$fn$LP$$RP$$u20$.$GT$$u20$T$GT$::call" + HASH, "<fn() -> T>::call"),
        ("emulator::main::hc2aaa9b4591a10c7", "emulator::main"),
        # Not Rust legacy mangling: left alone.
        ("com.example.Outer$C$Inner.run", "com.example.Outer$C$Inner.run"),  # Java nested class, no hash
        ("a..b::c", "a..b::c"),
        ("core::ptr::drop_in_place$LT$T$GT$", "core::ptr::drop_in_place$LT$T$GT$"),  # no hash
        ("foo::haaaaaaaaaaaaaaaa", "foo::haaaaaaaaaaaaaaaa"),  # too few distinct digits for a hash
        ("foo::h0123456789ABCDEF", "foo::h0123456789ABCDEF"),  # rustc's hashes are lower case
        ("foo$XY$bar" + HASH, "foo$XY$bar" + HASH),  # an escape rustc never writes
        ("foo$u01$bar" + HASH, "foo$u01$bar" + HASH),  # a control character
        ("foo...bar" + HASH, "foo...bar" + HASH),
        ("foo bar" + HASH, "foo bar" + HASH),
        (HASH, HASH),
        ("foo" + HASH + HASH, "foo" + HASH + HASH),
        ("foo..h0123456789abcdef" + HASH, "foo..h0123456789abcdef" + HASH),  # would still end in a hash
    ],
)
def test_rust_legacy_names(name: str, readable: str) -> None:
    assert demangle_legacy(name.encode()) == readable.encode()


def test_rust_names_through_the_folder_except_with_compat() -> None:
    name = b"core::ptr::drop_in_place$LT$alloc..vec..Vec$LT$u8$GT$$GT$::h0123456789abcdef"
    semicolon = b"_$LT$T$u3b$$u20$N$GT$::len::h0123456789abcdef"
    text = b"prog 7 1.000001: 1 cpu-clock:\n\t4012 %s+0x12 (/usr/bin/prog)\n\t4011 %s+0x3 (/usr/bin/prog)\n\n" % (
        name,
        semicolon,
    )
    assert fold(text, FoldOptions()) == {"prog;<T: N>::len;core::ptr::drop_in_place<alloc::vec::Vec<u8>>": 1}
    assert fold(text, FoldOptions(compat=True)) == {f"prog;{semicolon.decode()};{name.decode()}": 1}
    assert tidy_name(name, False, True) == name


LEGACY_PIECES = ["$LT$", "$GT$", "$u20$", "$u7b$", "$u7d$", "$RF$", "$BP$", "$C$", "$SP$", "$LP$", "$RP$", "..", "."]
RUSTISH = st.lists(
    st.sampled_from(LEGACY_PIECES) | st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True) | st.just("::"),
    max_size=12,
).map("".join)
HASHES = st.from_regex(r"::h[0-9a-f]{16}", fullmatch=True)
NAMES = st.binary(max_size=60) | st.builds(lambda a, h: (a + h).encode(), RUSTISH, HASHES) | RUSTISH.map(str.encode)


@given(NAMES)
@example(b"foo..h0123456789abcdef::h0123456789abcdef")
def test_demangling_never_raises_and_is_idempotent(name: bytes) -> None:
    once = demangle_legacy(name)
    assert demangle_legacy(once) == once
    if once != name:
        assert len(once) < len(name) and re.search(rb"::h[0-9a-f]{16}$", name)


@given((st.binary(max_size=60) | RUSTISH.map(str.encode)).filter(lambda b: re.search(rb"::h[0-9a-f]{16}$", b) is None))
def test_names_without_a_rust_hash_are_unchanged(name: bytes) -> None:
    assert demangle_legacy(name) == name


# -- a real recording whose binary is replaced afterwards --------------------------------------------


@pytest.mark.perf
def test_a_binary_replaced_after_recording_does_not_name_its_frames(tmp_path: Path) -> None:
    """Record a copy of dd (stripped: its own frames are [unknown]), then overwrite the copy with cat."""
    dd, cat = shutil.which("dd"), shutil.which("cat")
    assert dd is not None and cat is not None
    tool = tmp_path / "mydd"
    shutil.copy(dd, tool)
    data, folded = tmp_path / "rec.data", tmp_path / "rec.folded"
    workload = [str(tool), "if=/dev/zero", "of=/dev/null", "bs=1k", "count=400000"]
    recorded = run_cli("record", "--perf-data", str(data), "--folded", str(folded), "--no-svg", "--", *workload)
    assert recorded.returncode == 0, recorded.stderr
    assert "mydd+0x" in folded.read_text()  # a fresh recording: the build-ids match, frames are grouped
    assert "kept as [dso]" not in recorded.stderr
    same = run_cli("fold", str(data))
    assert "mydd+0x" in same.stdout and "kept as [dso]" not in same.stderr
    shutil.copy(cat, tool)  # another build at the recorded path
    changed = run_cli("fold", str(data))
    assert changed.returncode == 0, changed.stderr
    assert "mydd+0x" not in changed.stdout and "[mydd]" in changed.stdout
    notes = [line for line in changed.stderr.splitlines() if "kept as [dso]" in line]
    assert len(notes) == 1
    assert re.fullmatch(
        r"note: 1 DSO kept as \[dso\], not grouped by function \(\d+ distinct frames?\): mydd \(" + DIFFERENT + r"\)",
        notes[0],
    ), notes
    # Asked for explicitly, perf.data is still checked: the user gets no wrong name.
    asked = run_cli("fold", "--group-unknown", str(data))
    assert "mydd+0x" not in asked.stdout and "kept as [dso]" in asked.stderr


def test_the_note_says_how_to_record_missing_build_ids() -> None:
    namer = FunctionNamer(RecordedBuildIds())
    namer.refused, namer.refused_frames = {"/usr/bin/env": NOT_RECORDED}, 2
    assert grouping_note(namer) == (
        f"note: 1 DSO kept as [dso], not grouped by function (2 distinct frames): env ({NOT_RECORDED}); "
        f"{NOT_RECORDED_HINT}"
    )

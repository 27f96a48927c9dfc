"""The jitdump file, the in-process hook and the recorder's --jit pre-step, without oneDNN or perf:
a fake 'kernel' is put into anonymous executable memory by a small program run through the hook."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import REPO
from helpers.asm import POSTAMBLE, PREAMBLE, assemble

from flamegraph.frameworks.jit import anon, jitdump, session
from flamegraph.frameworks.jit.hook import HOOK, JitHook, JitSummary, wrap_command
from flamegraph.frameworks.jit.jitmap import Kernel
from flamegraph.frameworks.jit.unwind import EH_FRAME_HDR_SIZE, build_unwind
from flamegraph.record import RecordSpec

KERNEL = assemble(*PREAMBLE, "nop", *POSTAMBLE, "ret")


def test_records_read_back(tmp_path: Path) -> None:
    path = jitdump.dump_path(str(tmp_path), 4242)
    with open(path, "wb") as f:
        f.write(jitdump.HEADER.pack(jitdump.MAGIC, 1, 40, 62, 0, 4242, 1_000, 0))
    unwind = build_unwind(len(KERNEL), b"")
    loads = [
        jitdump.CodeLoad(0x7F00_0000_1000, "jit_a", KERNEL, unwind, created=5_000),
        jitdump.CodeLoad(0x7F00_0000_2000, "inner::jit_b", b"\xc3", None, created=0),
    ]
    jitdump.write_records(path, loads)
    first = Path(path).read_bytes()
    jitdump.write_records(path, loads)  # a second run rewrites, never appends
    assert Path(path).read_bytes() == first
    records = list(jitdump.iter_records(path))
    assert [kind for kind, _, _ in records] == [jitdump.JIT_CODE_UNWINDING_INFO, jitdump.JIT_CODE_LOAD, 0]
    # Stamped at creation, at the earliest just after the marker (header timestamp 1000).
    assert [ts for _, ts, _ in records] == [5_000, 5_000, 1_002]
    _, _, body = records[0]
    size, hdr_size, mapped = struct.unpack_from("<QQQ", body)
    assert (size, hdr_size, mapped) == (len(unwind.data), EH_FRAME_HDR_SIZE, (len(unwind.data) + 15) & ~15)
    assert body[24 : 24 + size] == unwind.data
    _, _, body = records[1]
    pid, tid, vma, addr, code_size, index = struct.unpack_from("<IIQQQQ", body)
    assert (pid, tid, vma, addr, code_size, index) == (4242, 4242, 0x7F0000001000, 0x7F0000001000, len(KERNEL), 0)
    name_end = body.index(b"\0", 40)
    assert body[40:name_end] == b"jit_a" and body[name_end + 1 :] == KERNEL
    data = Path(path).read_bytes()
    assert struct.unpack_from("<I", data, 40 + 4)[0] % 8 == 0  # unwinding records are padded to 8 bytes


def test_marker_is_mapped_executable(tmp_path: Path) -> None:
    marker = jitdump.create_marker(str(tmp_path))
    assert marker.path == str(tmp_path / f"jit-{os.getpid()}.dump")
    header = jitdump.read_header(marker.path)
    assert header.pid == os.getpid() and header.elf_mach == 62
    maps = Path("/proc/self/maps").read_text().splitlines()
    assert any(line.endswith(marker.path) and line.split()[1].startswith("r-x") for line in maps)


PROGRAM = textwrap.dedent(
    """
    import ctypes, mmap, os, sys
    code = bytes.fromhex(sys.argv[1])
    region = mmap.mmap(-1, 2 * 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                       prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    region[4096 : 4096 + len(code)] = code
    address = ctypes.addressof(ctypes.c_char.from_buffer(region)) + 4096
    with open("dnnl_dump_cpu_jit_fake_gemm.0.bin", "wb") as f:
        f.write(code)
    print(os.getpid(), hex(address), __name__, sys.argv[2:], os.environ.get("DNNL_JIT_DUMP"), sep="|", flush=True)
    KEEP = region  # still mapped at exit, like oneDNN's kernels
    """
)


def run_hooked(tmp_path: Path, *program: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    jit_dir = tmp_path / "jit"
    env = {k: v for k, v in os.environ.items() if k != "DNNL_JIT_DUMP"}
    proc = subprocess.run(
        [sys.executable, str(HOOK), "--jit-dir", str(jit_dir), "--", *program],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc, jit_dir


def test_hook_names_the_kernel_and_complete_adds_unwind_info(tmp_path: Path) -> None:
    (tmp_path / "work.py").write_text(PROGRAM)
    proc, jit_dir = run_hooked(tmp_path, "work.py", KERNEL.hex(), "--epochs", "1")
    pid_text, address, name, argv, dnnl = proc.stdout.strip().split("|")
    pid = int(pid_text)
    assert (name, argv) == ("__main__", "['--epochs', '1']")
    assert dnnl == "1"  # the hook set DNNL_JIT_DUMP=1 for oneDNN
    perf_map = Path(f"/tmp/perf-{pid}.map")
    try:
        assert perf_map.read_text() == f"{int(address, 16):x} {len(KERNEL):x} jit_fake_gemm\n"
        assert "1 JIT kernels located, 0 dumps not in memory" in proc.stderr
        assert not list(tmp_path.glob("dnnl_dump_*"))  # moved out of the working directory
        kernels = session.read_kernels(session.kernels_path(str(jit_dir), pid))
        assert [(k.address, k.name, Path(k.path).parent.name) for k in kernels] == [
            (int(address, 16), "jit_fake_gemm", f"dnnl-{pid}")
        ]
        (done,) = session.complete(str(jit_dir))
        assert (done.pid, done.kernels, done.with_cfi, done.no_cfi) == (pid, 1, 1, [])
        kinds = [kind for kind, _, _ in jitdump.iter_records(jitdump.dump_path(str(jit_dir), pid))]
        assert kinds == [jitdump.JIT_CODE_UNWINDING_INFO, jitdump.JIT_CODE_LOAD]
    finally:
        perf_map.unlink(missing_ok=True)


def test_hook_runs_modules_and_code_strings(tmp_path: Path) -> None:
    (tmp_path / "pkgmod.py").write_text("import sys\nprint(__name__, sys.argv)\n")
    proc, _ = run_hooked(tmp_path, "-m", "pkgmod", "a", "b")
    assert proc.stdout.strip() == "__main__ ['" + str(tmp_path / "pkgmod.py") + "', 'a', 'b']"
    proc, _ = run_hooked(tmp_path, "-c", "import sys; print(__name__, sys.argv)", "x")
    assert proc.stdout.strip() == "__main__ ['-c', 'x']"


def test_hook_passes_the_exit_status_through(tmp_path: Path) -> None:
    jit_dir = tmp_path / "jit"
    proc = subprocess.run(
        [sys.executable, str(HOOK), "--jit-dir", str(jit_dir), "--", "-c", "raise SystemExit(3)"],
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 3


def test_wrap_command() -> None:
    jit = Path("/run/jit")
    hook = (str(HOOK), "--jit-dir", "/run/jit", "--")
    assert wrap_command(("python3", "train.py", "--epochs", "2"), jit) == (
        "python3",
        *hook,
        "train.py",
        "--epochs",
        "2",
    )
    assert wrap_command(("/venv/bin/python", "-u", "-X", "dev", "-m", "pkg.mod", "a"), jit) == (
        "/venv/bin/python",
        "-u",
        "-X",
        "dev",
        *hook,
        "-m",
        "pkg.mod",
        "a",
    )
    assert wrap_command(("python3.11", "-c", "pass"), jit) == ("python3.11", *hook, "-c", "pass")
    assert wrap_command(("./train",), jit) is None  # not a Python interpreter
    assert wrap_command(("python",), jit) is None  # interactive
    assert wrap_command(("python", "-"), jit) is None  # program on stdin


def test_jit_hook_prepare(tmp_path: Path) -> None:
    notes: list[str] = []
    hook = JitHook(tmp_path / "jit", note=notes.append)
    spec = hook.prepare(RecordSpec(command=(sys.executable, "train.py"), env={"A": "1"}))
    assert spec.command[:2] == (sys.executable, str(HOOK)) and spec.command[-1] == "train.py"
    assert spec.env == {"A": "1", "DNNL_JIT_DUMP": "1"} and hook.hooked
    same = RecordSpec(command=("/bin/true",))
    assert JitHook(tmp_path / "j2", note=notes.append).prepare(same) == same
    assert notes[-1].startswith("flamegraph: --jit ignored: it works for Python commands")
    assert (tmp_path / "jit").is_dir()
    # A second recording into the same directory starts clean (its own files stay).
    for name in ("jit-1.dump", "jit-1.kernels", "jitted-1-0.so", "dnnl-1/x.bin", "notes.txt"):
        (tmp_path / "jit" / name).parent.mkdir(exist_ok=True)
        (tmp_path / "jit" / name).write_text("")
    hook.prepare(RecordSpec(command=(sys.executable, "train.py")))
    assert [p.name for p in (tmp_path / "jit").iterdir()] == ["notes.txt"]


def test_hook_module_imports_only_the_standard_library() -> None:
    """The hook runs inside the profiled interpreter: nothing of ours that needs third-party code."""
    code = (
        "import sys; import flamegraph.frameworks.flamegraph_launcher, flamegraph.frameworks.jit.session; "
        "print(sorted(m for m in ('capstone', 'typer', 'jinja2', 'elftools') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr


def test_the_kernels_file_carries_the_scan_time_as_a_field(tmp_path: Path) -> None:
    kernel = Kernel(0x7EFC88E45000, 0x780, "jit_softmax_t", 36, "/run/jit/dnnl-4242/x.36.bin", 1466730211034)
    comment = "1 JIT kernels located, 0 dumps not in memory (1 anonymous executable regions, 0.1 MiB, 9 ms)"
    path = session.write_kernels(str(tmp_path), 4242, [kernel], comment, scan_ms=9)
    assert session.read_kernels_header(path) == (comment, 9)
    assert session.read_kernels(path) == [kernel]
    bare = session.write_kernels(str(tmp_path), 4243, [kernel])  # named from outside: no comment, no time
    assert session.read_kernels_header(bare) == ("", None)


def test_jit_summary_is_shown_only_in_the_header_text() -> None:
    summary = JitSummary("python train.py", 37, 36, [9, 11], 0.414, 0.2)
    assert summary.unwound
    assert summary.metadata() == {
        "command": "python train.py",
        "JIT kernels": "37 named, 36 with unwind info",
        "JIT work after the run": "naming 9+11 ms in the process, unwind info 0.41 s, perf inject 0.20 s",
    }
    outside = JitSummary(kernels=5)
    assert not outside.unwound and outside.metadata() == {"JIT kernels": "5 named from outside (perf map)"}


def _mmap2(pid: int, start: int, length: int, prot: int, name: bytes) -> bytes:
    name += b"\0" * (8 - len(name) % 8)  # NUL-terminated, padded to 8 bytes as perf writes it
    body = anon.MMAP2.pack(pid, pid, start, length, start, prot, 2) + name
    return struct.pack("<IHH", anon.PERF_RECORD_MMAP2, 2, 8 + len(body)) + body


def test_anonymous_code_mappings_are_kept_through_inject_unless_they_hold_a_load(tmp_path: Path) -> None:
    """perf inject --jit drops a process's //anon mappings once it has its jitdump (b-11): those that hold none
    of its code loads are renamed for inject (in place, same size) and renamed back after, byte for byte."""
    rx, rwx, rw = 5, 7, 3
    records = [
        _mmap2(7, 0x1000, 0x1000, rwx, b"//anon"),  # another JIT's code: kept
        _mmap2(7, 0x10000, 0x10000, rx, b"//anon"),  # holds a load (the Python trampolines): left to inject
        _mmap2(8, 0x10000, 0x10000, rx, b"//anon"),  # the same range in another process, no load there: kept
        _mmap2(7, 0x30000, 0x1000, rw, b"//anon"),  # data: not code
        _mmap2(7, 0x40000, 0x1000, rx, b"/usr/lib/libc.so.6"),  # a file
    ]
    data = b"".join(records)
    header = struct.pack("<8sQQQQQQ", b"PERFILE2", 104, 136, 0, 0, 104, len(data)).ljust(104, b"\0")
    path = tmp_path / "perf.data"
    path.write_bytes(header + data)
    assert anon.keep(str(path), {7: [(0x10100, 0x10200)]}) == 2
    kept = path.read_bytes()
    assert len(kept) == len(header + data) and kept.count(b"//ANON\0") == 2 and kept.count(b"//anon\0") == 2
    at = len(header) + len(records[0]) + len(records[1])  # the third record's name: pid 8's
    assert kept[at + 8 + anon.MMAP2.size :].startswith(b"//ANON\0")
    assert anon.restore(str(path)) == 2
    assert path.read_bytes() == header + data

"""Python frames (issue 22): a Python 3.12+ command is recorded with perf support on, its perf
trampolines get unwind info, and its stacks run complete from the interpreter's `_start` through
every Python caller, as py-spy 0.4 sees them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pytest
from helpers.extras import need
from helpers.programs import need_perf
from helpers.python_tree import CHAINS, TREE
from helpers.pythons import find_python, need_pyspy, need_python, skip_or_fail

from flamegraph.frameworks.flamegraph_launcher import own_frames
from flamegraph.frameworks.jit import jitdump, session, trampolines
from flamegraph.frameworks.jit.hook import HOOK, JitHook, running_python_note
from flamegraph.record import RecordSpec
from flamegraph.record.command import python_target

FUNCTIONS = ("middle", "leaf", "other", "spin")
PERF_FRAME = re.compile(r"^py::(?P<function>[^:]+):(?P<file>.*)$")  # py::main:/tmp/t/tree.py
READABLE_FRAME = re.compile(r"^(?P<function>\S+) \((?P<file>[^()]*)\)$")  # main (tree.py)
PYSPY_FRAME = re.compile(r"^(?P<function>\S+) \((?P<file>[^:()]*)(:\d+)?\)$")  # main (tree.py:22)


def tree_functions(stack: Iterable[str], pattern: re.Pattern[str] = PERF_FRAME) -> tuple[str, ...]:
    """The known tree's Python functions in a stack, root first (any naming we write)."""
    found = []
    for frame in stack:
        match = pattern.match(frame) or READABLE_FRAME.match(frame)
        if match and os.path.basename(match.group("file")) in ("tree.py", "blocky.py", "queue.py"):
            found.append(match.group("function"))
    return tuple(found)


# -- the perf map and the unwind tables (no perf needed) -----------------------------------------

MAP_312 = """\
7f4422776000 b py::_find_and_load:<frozen importlib._bootstrap>
7f442277600b b py::main:/tmp/t/tree.py
7f4422776016 b py::leaf:/tmp/t/tree.py
7f4422776021 40 [dnnl] jit_avx_gemm
7f4422790000 b py::other:/tmp/t/tree.py
bad line
7f4422790000 b py::other2:/tmp/t/tree.py
"""


def test_perf_map_trampolines_and_runs() -> None:
    found = list(trampolines.iter_perf_map(MAP_312.splitlines(), 11))
    assert [t.name for t in found] == [
        "py::_find_and_load:<frozen importlib._bootstrap>", "py::main:/tmp/t/tree.py", "py::leaf:/tmp/t/tree.py",
        "py::other:/tmp/t/tree.py", "py::other2:/tmp/t/tree.py",
    ]  # fmt: skip
    last = {t.address: t for t in found}  # read_perf_map keeps the last name of an address
    runs = trampolines.runs(sorted(last.values(), key=lambda t: t.address), 11)
    assert [(len(r.trampolines), r.stride) for r in runs] == [(3, 11), (1, 11)]
    assert runs[0].functions()[2] == (22, 11, "py::leaf:/tmp/t/tree.py")


def test_runs_follow_313_padding_and_break_on_other_gaps() -> None:
    at = [0x1000, 0x1010, 0x1020, 0x1040, 0x1050, 0x9000]  # 3.13 pads each copy to 16 bytes
    runs = trampolines.runs([trampolines.Trampoline(a, f"py::f{a:x}:x.py") for a in at], 11)
    assert [(r.trampolines[0].address, len(r.trampolines), r.stride) for r in runs] == [
        (0x1000, 3, 16), (0x1040, 2, 16), (0x9000, 1, 11),
    ]  # fmt: skip


def _cfa_offset(rule: bytes, rip: int) -> int:
    """CFA - rsp for `rip`: the stack rule's DWARF expression run as libunwind runs it."""
    from flamegraph.naming.dwarf import read_sleb128, read_uleb128

    assert rule[0] == 0x0F  # DW_CFA_def_cfa_expression
    length, pos = read_uleb128(rule, 1)
    code, stack, rsp = rule[pos : pos + length], [], 1 << 20
    i = 0
    while i < len(code):
        op = code[i]
        i += 1
        if op in (0x77, 0x80):  # breg7 (rsp), breg16 (rip)
            offset, i = read_sleb128(code, i)
            stack.append(((rsp if op == 0x77 else rip) + offset) % (1 << 64))
        elif op == 0x10:  # constu
            value, i = read_uleb128(code, i)
            stack.append(value)
        elif 0x30 <= op < 0x50:  # lit0..31
            stack.append(op - 0x30)
        else:
            b, a = stack.pop(), stack.pop()
            stack.append(a % b if op == 0x1D else int(a < b) if op == 0x2D else a << b if op == 0x24 else a + b)
    (cfa,) = stack
    return cfa - rsp


EXPECTED_CFA = [8] * 4 + [16] * 6 + [8]  # sub rsp, 8 (4 bytes); call rcx (2); add rsp, 8 (4); ret


@pytest.mark.parametrize("stride", [11, 16])  # 3.12, 3.13
def test_one_stack_rule_for_every_copy(stride: int) -> None:
    start = 0x7F4422776000
    rule = trampolines.stack_rule(start, stride)
    for copy in (0, 1, 2, 5956):
        assert [_cfa_offset(rule, start + copy * stride + o) for o in range(11)] == EXPECTED_CFA


def test_the_stack_rule_is_what_the_analyser_finds() -> None:
    need("capstone")
    from flamegraph.frameworks.jit.cfi import analyse

    result = analyse(session.X86_64_TRAMPOLINE)
    assert result.status == "ok" and result.program == bytes.fromhex("440e10460e08")  # rsp+16 at 4, rsp+8 at 10


def test_a_run_fits_its_arena_and_is_stamped_when_the_arena_was_mapped() -> None:
    line = ("  4242 12560.905332123: PERF_RECORD_MMAP2 4242/4242: [0x7f0274cc8000(0x10000) @ 0x7f0274cc8000 "
            "00:00 0 0]: r-xp //anon")  # fmt: skip
    (arena,) = trampolines.iter_arenas([line, line.replace("4242 ", "4243 ", 1)], 4242)
    assert (arena.start, arena.end, arena.time_ns) == (0x7F0274CC8000, 0x7F0274CD8000, 12560905332123)
    full = trampolines.Run(tuple(trampolines.Trampoline(arena.start + 11 * i, f"py::f{i}:x.py")
                                 for i in range(65536 // 11)), 11, 11)  # fmt: skip
    fitted = trampolines.fitted(full, arena)
    assert 0 < len(full.trampolines) - len(fitted.trampolines) <= 12  # room for ~100 bytes of tables
    (load,) = trampolines.code_loads([fitted], session.X86_64_TRAMPOLINE, [arena])
    assert load.unwind is not None and load.created == arena.time_ns + 1
    assert load.address + (len(load.code) + 7) // 8 * 8 + load.unwind.mapped_size <= arena.end
    assert load.code[:11] == session.X86_64_TRAMPOLINE and len(load.code) == 11 * len(fitted.trampolines)
    assert trampolines.fitted(full, None).trampolines == fitted.trampolines  # 64 KiB from its page: the same


# -- which commands are Python 3.12+ (no perf needed) --------------------------------------------


def test_python_target_resolves_shebang_scripts(tmp_path: Path) -> None:
    python = need_python("3.12")
    plain = tmp_path / "tool"
    plain.write_text(f"#!{python}\nprint(1)\n")
    with_option = tmp_path / "tool-u"
    with_option.write_text(f"#!{python} -u\nprint(1)\n")
    env = dict(os.environ)
    target = python_target((str(plain), "a"), env)
    assert target is not None and target.version == (3, 12) and target.command == (python, str(plain), "a")
    target = python_target((str(with_option), "a"), env)
    assert target is not None and target.command == (str(with_option), "a")  # its option kept: not wrapped
    assert python_target(("/bin/sh", "-c", "true"), env) is None
    assert python_target((python, "-m", "json.tool"), env).command == (python, "-m", "json.tool")  # type: ignore[union-attr]


def _prepare(tmp_path: Path, command: tuple[str, ...], python: bool | None) -> tuple[RecordSpec, list[str]]:
    notes: list[str] = []
    hook = JitHook(tmp_path / "perf.data.jit", note=notes.append, dnnl=False, python=python)
    return hook.prepare(RecordSpec(command=command, cwd=str(tmp_path))), notes


def test_a_312_command_gets_perf_support_and_the_hook(tmp_path: Path) -> None:
    python = need_python("3.12")
    spec, notes = _prepare(tmp_path, (python, "-X", "dev", "train.py", "--epochs", "1"), None)
    directory = str(tmp_path / "perf.data.jit")
    assert spec.command == (python, "-X", "dev", "train.py", "--epochs", "1")  # run as given: no launcher
    assert spec.env["PYTHONPERFSUPPORT"] == "1" and "DNNL_JIT_DUMP" not in spec.env
    site = Path(spec.env["PYTHONPATH"].split(os.pathsep)[0])  # its sitecustomize (under our cache): the support
    assert (site / "sitecustomize.py").read_text().count(directory) == 1
    assert len(notes) == 1 and "Python 3.12: perf support on" in notes[0]
    spec, notes = _prepare(tmp_path, (python, "train.py"), False)  # --no-python
    assert spec.command == (python, "train.py") and spec.env == {} and notes == []


def test_older_pythons_and_other_commands_are_left_alone(tmp_path: Path) -> None:
    if sys.version_info >= (3, 12):
        pytest.skip("needs the suite to run on Python < 3.12 (the Makefile's 3.11)")
    spec, notes = _prepare(tmp_path, (sys.executable, "train.py"), None)
    assert spec.command == (sys.executable, "train.py") and notes == []
    spec, notes = _prepare(tmp_path, (sys.executable, "train.py"), True)  # --python on 3.11: one line
    assert spec.command == (sys.executable, "train.py") and len(notes) == 1 and "need 3.12+" in notes[0]
    spec, notes = _prepare(tmp_path, ("/bin/sh", "-c", "true"), None)
    assert spec.command == ("/bin/sh", "-c", "true") and notes == []


def test_pid_of_a_312_process_says_how_to_start_it() -> None:
    python = need_python("3.12")
    proc = subprocess.Popen([python, "-c", "import time; time.sleep(30)"])
    try:
        for _ in range(50):  # until the exec has happened
            if os.readlink(f"/proc/{proc.pid}/exe").endswith("python3.12"):
                break
            time.sleep(0.05)
        note = running_python_note(proc.pid)
        assert note is not None and "-X perf" in note and f"pid {proc.pid} is Python 3.12" in note
    finally:
        proc.kill()
        proc.wait()
    assert running_python_note(os.getpid()) is None or sys.version_info >= (3, 12)


def test_the_hook_saves_the_trampoline_and_maps_the_marker(tmp_path: Path) -> None:
    python = need_python("3.12")
    directory = tmp_path / "jit"
    code = "import os; print(os.getpid())"
    env = {**os.environ, "PYTHONPERFSUPPORT": "1"}
    argv = [python, str(HOOK), "--python-dir", str(directory), "--", "-c", code]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, env=env)
    pid = int(out.stdout)
    assert Path(jitdump.trampoline_path(str(directory), pid)).read_bytes() == session.X86_64_TRAMPOLINE
    assert jitdump.read_header(jitdump.dump_path(str(directory), pid)).pid == pid


# -- real recordings: complete stacks, and the shares py-spy 0.4 reports -------------------------

RELEASES = ("3.12", "3.13")
SECONDS = 4.0  # ~2,000 samples each way: a share's noise is ~1 point, the bound 3


def _record(python: str, directory: Path) -> Counter[tuple[str, ...]]:
    from flamegraph.io.diagnostics import Diagnostics
    from flamegraph.record import RecordOptions, fold_recording, record

    script = directory / "tree.py"
    script.write_text(TREE)
    notes: list[str] = []
    hook = JitHook(directory / "perf.data.jit", note=notes.append, dnnl=False, python=None)
    how = RecordOptions(freq=999)  # twice the default: the shares' sampling noise is what the bound must absorb
    spec = RecordSpec(command=(python, str(script), str(SECONDS)), cwd=str(directory), options=how)
    recording = record(spec, directory / "perf.data", hooks=[hook])
    assert hook.summary.python_functions > 100, notes
    profile = fold_recording(recording, diagnostics=Diagnostics())
    return Counter({tuple(stack.split(";")): int(weight) for stack, weight in profile.counts.items()})


@pytest.fixture(scope="module", params=RELEASES)
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Counter]:
    release = request.param
    python = find_python(release)
    if python is None:
        skip_or_fail(f"needs a Python {release} interpreter (pyenv or python{release} on PATH)")
    assert python is not None
    return python, _record(python, tmp_path_factory.mktemp(f"py{release}"))


@pytest.mark.perf
def test_known_tree_stacks_are_complete(recorded: tuple[str, Counter]) -> None:
    _python, stacks = recorded
    work = {stack: n for stack, n in stacks.items() if "spin" in tree_functions(stack)}
    total = sum(work.values())
    assert total > 200
    complete = sum(n for stack, n in work.items() if "_start" in stack and tree_functions(stack) in CHAINS)
    assert complete / total >= 0.95, Counter({tree_functions(s): n for s, n in work.items()}).most_common(5)


def _shares(stacks: Iterable[tuple[tuple[str, ...], int]], pattern: re.Pattern[str]) -> dict[str, float]:
    """Each function's share of the samples in `main` (start-up and exit differ between tools)."""
    inside, counts = 0, Counter[str]()
    for stack, n in stacks:
        functions = set(tree_functions(stack, pattern))
        if "main" in functions:
            inside += n
            counts.update({f: n for f in functions})
    return {f: 100 * counts[f] / max(inside, 1) for f in FUNCTIONS}


@pytest.mark.perf
def test_shares_match_pyspy(recorded: tuple[str, Counter], tmp_path: Path) -> None:
    python, stacks = recorded
    pyspy = need_pyspy(need_python("3.12"))
    script = tmp_path / "tree.py"
    script.write_text(TREE)
    ours = _shares(stacks.items(), PERF_FRAME)
    attempts = []
    for _ in range(2):  # a second py-spy run when the first is off: sampling noise on a loaded machine
        peer = _shares(_pyspy(pyspy, python, script, tmp_path / "spy.txt"), PYSPY_FRAME)
        attempts.append(peer)
        if max(abs(ours[f] - peer[f]) for f in FUNCTIONS) <= 3.0:
            return
    pytest.fail(f"ours {ours} vs py-spy {attempts}: more than 3 points apart")


def _pyspy(pyspy: str, python: str, script: Path, raw: Path) -> list[tuple[tuple[str, ...], int]]:
    ran = subprocess.run([pyspy, "record", "-r", "997", "-f", "raw", "-o", str(raw), "--", python, str(script),
                          str(SECONDS)], capture_output=True, text=True)  # fmt: skip
    if ran.returncode != 0 and re.search(r"ptrace|[Pp]ermission", ran.stderr):
        skip_or_fail(f"py-spy cannot trace here (ptrace): {ran.stderr.strip().splitlines()[-1]}")
    assert ran.returncode == 0, ran.stderr
    theirs = []
    for line in raw.read_text().splitlines():
        stack, n = line.rsplit(" ", 1)
        theirs.append((tuple(stack.split(";")), int(n)))
    return theirs


# -- frames read as Python (no perf needed) ------------------------------------------------------


@pytest.mark.parametrize(
    ("symbol", "named"),
    [
        (b"py::train_epoch:/home/u/train_mlp.py", b"train_epoch (train_mlp.py)"),
        (b"py::_find_and_load:<frozen importlib._bootstrap>", b"_find_and_load (<frozen importlib._bootstrap>)"),
        (b"py::Net.forward.<locals>.<lambda>:/m/net.py", b"Net.forward.<locals>.<lambda> (net.py)"),
        (b"py::<module>:<string>", b"<module> (<string>)"),
        (b"py::f:C:/odd:name.py", b"f (odd:name.py)"),  # a colon in the file: the qualname has none
        (b"py::", None),
        (b"py::nofile", None),
        (b"std::py::thing", None),
        (b"_PyEval_EvalFrameDefault", None),
    ],
)
def test_python_frame_names(symbol: bytes, named: bytes | None) -> None:
    from flamegraph.folding.tidy import python_frame

    assert python_frame(symbol) == named


def test_frame_lines_read_as_python_and_verbatim_under_compat() -> None:
    from flamegraph.folding.frames import name_frame
    from flamegraph.folding.options import FoldOptions

    line = b"\t            39ed py::train_epoch:/home/u/train_mlp.py (/tmp/p.data.jit/jitted-4242-0.so)"
    assert name_frame(line, FoldOptions.with_all()) == b"train_epoch (train_mlp.py)"  # no _[j]: not a kernel
    assert name_frame(line, FoldOptions(compat=True)) == b"py::train_epoch:/home/u/train_mlp.py"
    perf_map = b"\t    7f4422776102 py::_load_unlocked:<frozen importlib._bootstrap> (/tmp/perf-12178.map)"
    assert name_frame(perf_map, FoldOptions()) == b"_load_unlocked (<frozen importlib._bootstrap>)"


ROOT = ("python3.12", "_start", "Py_RunMain", "PyEval_EvalCode", "py_trampoline_evaluator")
CALL = ("_PyEval_EvalFrameDefault", "PyObject_Vectorcall", "py_trampoline_evaluator")
LAUNCHER = own_frames()  # the real recordings (test_python_launcher.py) check they are what perf names
OURS = "(flamegraph_launcher.py)"
HOOKED = (
    f"<module> {OURS}", *CALL, f"main {OURS}", *CALL, f"run {OURS}", *CALL,
    "run_path (<frozen runpy>)", *CALL,
    "_run_module_code (<frozen runpy>)", *CALL, "_run_code (<frozen runpy>)", "_PyEval_EvalFrameDefault",
    "builtin_exec", "PyEval_EvalCode", "py_trampoline_evaluator",
)  # fmt: skip


@pytest.mark.parametrize(
    ("stack", "folded"),
    [
        # between two Python functions: the machinery goes; after the last one, the eval loop's own time is its
        ((*ROOT, "main (t.py)", *CALL, "leaf (t.py)", "_PyEval_EvalFrameDefault"),
         (*ROOT, "main (t.py)", "leaf (t.py)")),
        ((*ROOT, "main (t.py)", *CALL, "leaf (t.py)", "_PyEval_EvalFrameDefault.cold", "_PyObject_Malloc"),
         (*ROOT, "main (t.py)", "leaf (t.py)", "_PyObject_Malloc")),
        # a C function that is not call machinery stays, between and after
        ((*ROOT, "main (t.py)", "_PyEval_EvalFrameDefault", "builtin_sorted", "list_sort", *CALL, "key (t.py)"),
         (*ROOT, "main (t.py)", "builtin_sorted", "list_sort", "key (t.py)")),
        ((*ROOT, "nap (t.py)", "_PyEval_EvalFrameDefault", "cfunction_vectorcall_O", "time_sleep", "clock_nanosleep",
          "[S]"), (*ROOT, "nap (t.py)", "time_sleep", "clock_nanosleep", "[S]")),
        # our launcher's frames (and runpy's exec under them) are not the program's
        ((*ROOT, *HOOKED, "<module> (t.py)", *CALL, "main (t.py)"), (*ROOT, "<module> (t.py)", "main (t.py)")),
        # no Python function (3.11): nothing to fold onto
        ((*ROOT, "_PyEval_EvalFrameDefault", "PyObject_Vectorcall", "_PyEval_EvalFrameDefault"),
         (*ROOT, "_PyEval_EvalFrameDefault", "PyObject_Vectorcall", "_PyEval_EvalFrameDefault")),
        # a stack cut short inside the launcher, and the launcher's own work: none of its frames stay
        (("python3.12", "[unknown]", *CALL, f"main {OURS}", *CALL, f"run {OURS}", *CALL,
          "run_path (<frozen runpy>)", *CALL, "_find_and_load (<frozen importlib._bootstrap>)"),
         ("python3.12", "[unknown]", "_PyEval_EvalFrameDefault", "PyObject_Vectorcall", "py_trampoline_evaluator",
          "_find_and_load (<frozen importlib._bootstrap>)")),
        (("python3.12", f"prepare {OURS}", "perf_map_write_entry"), ("python3.12", "perf_map_write_entry")),
        ((*ROOT, f"<module> {OURS}", *CALL, "_find_and_load (<frozen importlib._bootstrap>)"),
         (*ROOT, "_find_and_load (<frozen importlib._bootstrap>)")),  # its own imports
        (("python3.13", "<module> (<frozen runpy>)", "builtin___build_class__", "perf_map_write_entry"),
         ("python3.13", "builtin___build_class__", "perf_map_write_entry")),
        ((*ROOT, *HOOKED[:-3], "_run_module_code (<frozen runpy>)", "perf_map_write_entry"),
         (*ROOT, "perf_map_write_entry")),
        # a user's own launcher.py (`python launcher.py`, recorded without ours) keeps every frame, even those
        # named as the launcher's functions are (main, run, prepare), and a stack ending in one of them
        ((*ROOT, "<module> (launcher.py)", *CALL, "work (launcher.py)"),
         (*ROOT, "<module> (launcher.py)", "work (launcher.py)")),
        ((*ROOT, "<module> (launcher.py)", *CALL, "main (launcher.py)", *CALL, "train (model.py)"),
         (*ROOT, "<module> (launcher.py)", "main (launcher.py)", "train (model.py)")),
        ((*ROOT, "<module> (launcher.py)", *CALL, "main (launcher.py)", "_PyEval_EvalFrameDefault"),
         (*ROOT, "<module> (launcher.py)", "main (launcher.py)")),
    ],
)  # fmt: skip
def test_interpreter_frames_fold_onto_the_python_function(stack: tuple[str, ...], folded: tuple[str, ...]) -> None:
    from flamegraph.folding.python import python_stack

    assert python_stack(stack, LAUNCHER) == folded


def test_keep_interpreter_drops_only_the_launcher() -> None:
    """--keep-interpreter: CPython's frames stay, the launcher's and runpy's go with the exec between them."""
    from flamegraph.folding.python import python_stack

    launched = (*ROOT, "<module> (flamegraph_launcher.py)", *CALL, "main (flamegraph_launcher.py)", *CALL,
                "run_path (<frozen runpy>)", *CALL, "_run_code (<frozen runpy>)", "_PyEval_EvalFrameDefault",
                "builtin_exec", "PyEval_EvalCode", "py_trampoline_evaluator", "<module> (t.py)", *CALL,
                "main (t.py)", "_PyEval_EvalFrameDefault")  # fmt: skip
    plain = (*ROOT, "<module> (t.py)", *CALL, "main (t.py)", "_PyEval_EvalFrameDefault")  # `python t.py`
    assert python_stack(launched, LAUNCHER, keep_interpreter=True) == plain
    assert python_stack(plain, LAUNCHER, keep_interpreter=True) == plain
    only_ours = (*ROOT, "<module> (flamegraph_launcher.py)", *CALL, "prepare (flamegraph_launcher.py)", "open64")
    assert python_stack(only_ours, LAUNCHER, keep_interpreter=True) == (*ROOT, "open64")


def test_folding_merges_stacks_and_keeps_the_total() -> None:
    from flamegraph.folding.python import fold_interpreter
    from flamegraph.model import FoldedProfile

    a = ";".join((*ROOT, "main (t.py)", *CALL, "leaf (t.py)", "_PyEval_EvalFrameDefault"))
    b = ";".join((*ROOT, "main (t.py)", *CALL, "leaf (t.py)"))
    c = ";".join((*ROOT, "_PyEval_EvalFrameDefault"))
    profile = fold_interpreter(FoldedProfile(counts={a: 3, b: 2, c: 1}), LAUNCHER)
    assert profile.counts == {";".join((*ROOT, "main (t.py)", "leaf (t.py)")): 5, c: 1}


def test_the_python_preset_has_the_palette_classes() -> None:
    from flamegraph.color import PRESETS, hue_of

    rules = [(rule.compiled(), rule.color, rule.label) for rule in PRESETS["python"]]
    for name, label in [("main (tree.py)", "Python functions"), ("<lambda> (<string>)", "Python functions"),
                        ("_PyEval_EvalFrameDefault", "CPython interpreter"), ("memcpy", None)]:  # fmt: skip
        matched = [(color, lab) for pattern, color, lab in rules if pattern.search(name)]
        assert [lab for _c, lab in matched[:1]] == ([label] if label else [])
        if matched:  # the legend's hue is the palette's
            assert matched[0][0] == hue_of("python", name)


# -- off-CPU: the Python function that blocked -----------------------------------------------------

BLOCKY = textwrap.dedent(
    """
    import queue, threading, time

    def nap():
        time.sleep(0.05)

    def wait_on_queue(q):
        return q.get()

    def main():
        q = queue.Queue()
        threading.Timer(0.8, q.put, args=(1,)).start()
        for _ in range(6):
            nap()
        wait_on_queue(q)

    main()
    """
)


@pytest.mark.perf
def test_offcpu_names_the_python_function_that_blocked(tmp_path: Path) -> None:
    """time.sleep and queue.get of a 3.12 program: the waits sit under nap and wait_on_queue, called
    from main, with the interpreter's machinery folded away (the C function that blocked stays)."""
    from flamegraph.io.diagnostics import Diagnostics
    from flamegraph.io.folded import read_folded

    python = need_python("3.12")
    program = tmp_path / "blocky.py"
    program.write_text(BLOCKY)
    folded = tmp_path / "waits.folded"
    proc = subprocess.run(
        [sys.executable, "-m", "flamegraph", "offcpu", "--no-svg", "--folded", str(folded), "--", python,
         str(program)], capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Python 3.12: perf support on" in proc.stderr
    with folded.open("rb") as lines:
        counts = read_folded(lines, str(folded), Diagnostics(echo=False)).counts
    waited: Counter[tuple[str, ...]] = Counter()
    for stack, us in counts.items():
        frames = stack.split(";")
        waited[tree_functions(frames, PERF_FRAME) or ("<none>",)] += us
        if "nap (blocky.py)" in frames:
            after = frames[frames.index("nap (blocky.py)") + 1]
            assert after == "time_sleep", frames  # the eval loop and cfunction_vectorcall_O folded away
    blocked = {chain: us for chain, us in waited.items() if chain and chain[0] == "<module>"}
    assert blocked.get(("<module>", "main", "nap"), 0) >= 0.8 * 6 * 50_000, waited
    assert blocked.get(("<module>", "main", "wait_on_queue", "Queue.get"), 0) >= 0.8 * 500_000, waited


# -- other JIT code of a Python program ---------------------------------------------------------------

JIT_SPIN = textwrap.dedent(
    """
    import ctypes, mmap, sys, time

    # x86-64: mov rcx, rdi; 1: dec rcx; jnz 1b; ret -- a loop in anonymous executable memory, as a JIT makes it
    CODE = bytes.fromhex("4889f948ffc975fbc3")
    PROT = mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC
    memory = mmap.mmap(-1, mmap.PAGESIZE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=PROT)
    memory.write(CODE)
    spin = ctypes.CFUNCTYPE(None, ctypes.c_uint64)(ctypes.addressof(ctypes.c_char.from_buffer(memory)))
    end = time.monotonic() + float(sys.argv[1])
    while time.monotonic() < end:
        spin(50_000_000)
    """
)
PERF_MAP_FRAME = re.compile(r"\[perf-\d+\.map\]_\[j\]")


@pytest.mark.perf
def test_a_python_programs_other_jit_code_stays_jit_code(tmp_path: Path) -> None:
    """perf inject --jit, run for the Python functions, drops every later anonymous mapping of the process (b-11):
    the code another JIT made there (oneDNN's kernels under MXNet; here a loop the program writes) lost its
    mapping and came out `[unknown]`, or named after a file perf had seen at that address before (measured:
    85-93 % `[ld.so.cache]`). Its mapping is kept: JIT code, `[perf-PID.map]_[j]`, as without Python frames; and the
    kept perf.data names it `//anon` as perf wrote it."""
    from flamegraph.io.diagnostics import Diagnostics
    from flamegraph.io.folded import read_folded

    python = need_python("3.12")
    perf = need_perf()
    (tmp_path / "spin.py").write_text(JIT_SPIN)
    folded, perf_data = tmp_path / "spin.folded", tmp_path / "perf.data"
    proc = subprocess.run(
        [sys.executable, "-m", "flamegraph", "record", "--perf-data", str(perf_data), "--folded", str(folded),
         "-o", str(tmp_path / "spin.svg"), "--", python, str(tmp_path / "spin.py"), "1.5"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "perf support on" in proc.stderr and "perf inject --jit done" in proc.stderr, proc.stderr
    with folded.open("rb") as lines:
        counts = read_folded(lines, str(folded), Diagnostics(echo=False)).counts
    leaves: Counter[str] = Counter()
    for stack, n in counts.items():
        leaves[stack.rsplit(";", 1)[-1]] += n
    jit = sum(n for leaf, n in leaves.items() if PERF_MAP_FRAME.fullmatch(leaf))
    assert jit >= 0.6 * sum(leaves.values()), leaves.most_common(5)  # measured 88-93 % (the loop is all it does)
    mmaps = subprocess.run([perf, "script", "-i", str(perf_data), "--show-mmap-events"], capture_output=True,
                           text=True, errors="replace").stdout  # fmt: skip
    assert "rwxp //anon" in mmaps and "//ANON" not in mmaps

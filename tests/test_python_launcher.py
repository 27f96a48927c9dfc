"""The launcher a Python 3.12+ command runs through leaves no trace a user sees: none of its frames (nor
the runpy frames it calls) in the graphs of `record` and `offcpu`, the program's `<module>` the root of
its Python frames, and no /tmp/perf-PID.map left behind unless the raw recording is kept or the user
turned perf support on. Real recordings: pyenv's 3.12 and 3.13, and a venv's python."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers.pythons import need_python

PROGRAM = textwrap.dedent(
    """
    import time

    def spin():
        end = time.perf_counter() + 0.3
        while time.perf_counter() < end:
            pass

    def nap():
        time.sleep(0.2)

    spin()
    nap()
    """
)
WORK = {"record": "spin (prog.py)", "offcpu": "nap (prog.py)"}  # where each command's time goes
PID = re.compile(r"flamegraph: pid (\d+): \d+ Python functions with unwind info")


def _python(kind: str, tmp_path: Path) -> str:
    """pyenv's interpreter of a release, or a venv made from 3.13 (its python a link to the real one)."""
    if kind != "venv":
        return need_python(kind)
    venv = tmp_path / "venv"
    subprocess.run([need_python("3.13"), "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    return str(venv / "bin" / "python")


def _run(
    tmp_path: Path, command: str, python: str, *options: str, env: dict[str, str] | None = None
) -> tuple[Path, int]:
    """`flamegraph COMMAND --folded F OPTIONS -- PYTHON prog.py` -> (F, the program's pid)."""
    program = tmp_path / "prog.py"
    program.write_text(PROGRAM)
    folded = tmp_path / f"{command}.folded"
    ran = subprocess.run(
        [sys.executable, "-m", "flamegraph", command, "--no-svg", "--folded", str(folded), *options, "--", python,
         str(program)], capture_output=True, text=True, timeout=120, cwd=tmp_path, env={**os.environ, **(env or {})},
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    found = PID.search(ran.stderr)
    assert found is not None, ran.stderr
    return folded, int(found.group(1))


@pytest.mark.perf
@pytest.mark.parametrize("kind", ["3.12", "3.13", "venv"])
@pytest.mark.parametrize("command", ["record", "offcpu"])
def test_no_frame_of_the_launcher_and_no_map_left(command: str, kind: str, tmp_path: Path) -> None:
    python = _python(kind, tmp_path)
    folded, pid = _run(tmp_path, command, python)
    stacks = [line.rsplit(" ", 1)[0].split(";") for line in folded.read_text().splitlines()]
    ours = {f for stack in stacks for f in stack if f.endswith(("(flamegraph_launcher.py)", "(<frozen runpy>)"))}
    assert not ours, f"frames of the launcher in the graph: {sorted(ours)}"
    work = [stack for stack in stacks if WORK[command] in stack]
    assert work, f"no stack reaches {WORK[command]}"
    for stack in work:
        python_frames = [f for f in stack if re.fullmatch(r".+ \(.+\)", f) and not f.endswith("_[k]")]
        assert python_frames[0] == "<module> (prog.py)", stack
    assert not os.path.lexists(f"/tmp/perf-{pid}.map"), "the perf map our perf support caused was left in /tmp"


@pytest.mark.perf
@pytest.mark.parametrize(
    ("options", "env"),
    [(("--perf-data", "kept.data"), {}), ((), {"PYTHONPERFSUPPORT": "1"})],
    ids=["raw-recording-kept", "user-perf-support"],
)
def test_the_map_stays_when_kept_or_not_ours(options: tuple[str, ...], env: dict[str, str], tmp_path: Path) -> None:
    """perf report of a kept perf.data reads the map; a map the user's own perf support writes is theirs."""
    _folded, pid = _run(tmp_path, "record", need_python("3.12"), *options, env=env)
    path = Path(f"/tmp/perf-{pid}.map")
    try:
        assert path.is_file() and not path.is_symlink()
    finally:
        path.unlink(missing_ok=True)


@pytest.mark.perf
@pytest.mark.parametrize("release", ["3.12", "3.13"])
def test_keep_interpreter_leaves_the_launcher_out_too(release: str, tmp_path: Path) -> None:
    """--keep-interpreter keeps CPython's frames, not ours: the program's `<module>` follows the interpreter's
    `PyEval_EvalCode; py_trampoline_evaluator` as in `python prog.py`, without the launcher's or runpy's frames
    nor the `builtin_exec` they run it with."""
    folded, _pid = _run(tmp_path, "record", need_python(release), "--keep-interpreter")
    stacks = [line.rsplit(" ", 1)[0].split(";") for line in folded.read_text().splitlines()]
    ours = {f for stack in stacks for f in stack if f.endswith(("(flamegraph_launcher.py)", "(<frozen runpy>)"))}
    assert not ours, f"frames of the launcher in the graph: {sorted(ours)}"
    work = [stack for stack in stacks if "spin (prog.py)" in stack]
    assert work, "no stack reaches spin (prog.py)"
    for stack in work:
        module = stack.index("<module> (prog.py)")
        assert "builtin_exec" not in stack[:module], stack
        assert stack[module - 1] == "py_trampoline_evaluator", stack
    assert any("_PyEval_EvalFrameDefault" in stack for stack in work), "the interpreter's frames were not kept"


# The program's view of itself, printed, then an uncaught exception: all of it as in `python prog.py`.
AS_ITSELF = textwrap.dedent(
    """
    import os, sys
    import flamegraph  # the project's own package, beside the script
    here = os.path.dirname(__file__)
    print(__file__, sys.argv, sys.path[0], sys.orig_argv[1:], flamegraph.VALUE)
    print(sorted(name for name in sys.modules if name != "sitecustomize"))  # (ours is its one trace)
    import time

    def spin():
        end = time.perf_counter() + 0.3
        while time.perf_counter() < end:
            pass

    spin()
    os.chdir("/")
    print(open(os.path.join(here, "data.txt")).read())
    raise ValueError("the program's own")
    """
)


@pytest.mark.perf
@pytest.mark.parametrize("kind", ["3.12", "3.13", "venv"])
@pytest.mark.parametrize("command", ["record", "offcpu"])
def test_the_program_runs_as_without_the_profiler(command: str, kind: str, tmp_path: Path) -> None:
    """newcomer10 a-F19: the program ran inside our launcher: a relative `__file__` (a script that chdirs could not
    open the file beside it), the tool's package for `import flamegraph`, 127 modules instead of 32, and a
    traceback beginning with the launcher's frames. Now the same as a plain run, and its functions still named."""
    python = _python(kind, tmp_path)
    project = tmp_path / "proj"
    (project / "flamegraph").mkdir(parents=True)
    (project / "flamegraph" / "__init__.py").write_text("VALUE = 42\n")
    (project / "data.txt").write_text("beside the script\n")
    (project / "prog.py").write_text(AS_ITSELF)
    plain = subprocess.run([python, "prog.py", "an-arg"], capture_output=True, text=True, timeout=60, cwd=project)
    assert plain.returncode == 1 and "42" in plain.stdout, plain.stderr
    folded = tmp_path / "run.folded"
    ran = subprocess.run(
        [sys.executable, "-P", "-m", "flamegraph", command, "--no-svg", "--folded", str(folded), "--", python,
         "prog.py", "an-arg"], capture_output=True, text=True, timeout=120, cwd=project,
    )  # fmt: skip  (-P: the tool's own `flamegraph`, not the project's in the working directory)
    assert ran.returncode == 1 and "the command exited with status 1" in ran.stderr, ran.stderr
    assert ran.stdout == plain.stdout
    traceback = plain.stderr.strip()
    assert traceback.startswith("Traceback") and traceback in ran.stderr, ran.stderr
    stacks = [line.rsplit(" ", 1)[0].split(";") for line in folded.read_text().splitlines()]
    assert not any(f.endswith(("(flamegraph_launcher.py)", "(<frozen runpy>)")) for s in stacks for f in s)
    work = [stack for stack in stacks if WORK["record"] in stack]
    if command == "record":
        assert work, "no stack reaches spin (prog.py)"
    for stack in work:
        assert next(f for f in stack if re.fullmatch(r".+ \(.+\)", f)) == "<module> (prog.py)", stack



def _record(tmp_path: Path, *command: str, env: dict[str, str] | None = None) -> tuple[str, list[list[str]]]:
    """`flamegraph record` of prog.py's PROGRAM run by `command` in tmp_path -> (its stderr, the folded stacks)."""
    (tmp_path / "prog.py").write_text(PROGRAM)
    folded = tmp_path / "cmd.folded"
    ran = subprocess.run(
        [sys.executable, "-m", "flamegraph", "record", "--no-svg", "--folded", str(folded), "--", *command],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env={**os.environ, **(env or {})},
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return ran.stderr, [line.rsplit(" ", 1)[0].split(";") for line in folded.read_text().splitlines()]


@pytest.mark.perf
@pytest.mark.parametrize("release", ["3.12", "3.13"])
def test_a_script_path_not_utf8_runs_without_perf_support(release: str, tmp_path: Path) -> None:
    """newcomer10 b-23: CPython's perf map writer fails on a file name that is not UTF-8: the program died at its
    first call under flamegraph (fine without). Perf support is left off for it, in one line."""
    name = os.fsdecode(b"b\xfed.py")
    (tmp_path / name).write_text(PROGRAM + "print('done')\n")
    stderr, stacks = _record(tmp_path, need_python(release), name)
    assert "b\\xfed.py is not a UTF-8 path" in stderr and "no Python frames" in stderr, stderr
    assert "perf support on (" not in stderr and stacks


def _named_and_rooted(stacks: list[list[str]], script: str) -> None:
    """spin's samples are named and unwound to the program's `<module>` (not cut at the first Python frame)."""
    work = [stack for stack in stacks if f"spin ({script})" in stack]
    assert work, f"no stack reaches spin ({script})"
    assert all(f"<module> ({script})" in stack for stack in work), work


@pytest.mark.perf
@pytest.mark.parametrize("line", ["#!{python} -u", "#!/usr/bin/env -S python3 -u"], ids=["option", "env-S"])
def test_a_shebang_with_an_option_is_named_and_unwound(line: str, tmp_path: Path) -> None:
    """newcomer10 b-16: a `#!` line carrying an option got a false "reads its program from stdin" and no Python
    names at all. It runs as given, and the sitecustomize starts the support in it as in any Python."""
    python = need_python("3.13")
    tool = tmp_path / "tool"
    tool.write_text(line.format(python=python) + "\n" + PROGRAM)
    tool.chmod(0o755)
    path = f"{os.path.dirname(python)}{os.pathsep}{os.environ['PATH']}"
    stderr, stacks = _record(tmp_path, str(tool), env={"PATH": path})
    assert "stdin" not in stderr and "Python 3.13: perf support on" in stderr, stderr
    _named_and_rooted(stacks, "tool")


@pytest.mark.perf
@pytest.mark.parametrize("flag", ["-E", "-I", "-S"])
def test_an_interpreter_reading_no_environment_still_gets_its_frames(flag: str, tmp_path: Path) -> None:
    """newcomer10 b-17: `python -E`/`-I` ignore PYTHONPERFSUPPORT (and PYTHONPATH): 'perf support on' was said and
    not one Python frame came. They run through the launcher with -X perf; -S (no site) through the launcher."""
    stderr, stacks = _record(tmp_path, need_python("3.12"), flag, "prog.py")
    how = "-X perf" if flag != "-S" else "PYTHONPERFSUPPORT=1"
    assert f"Python 3.12: perf support on ({how})" in stderr, stderr
    _named_and_rooted(stacks, "prog.py")


@pytest.mark.perf
@pytest.mark.parametrize("flag", ["-I", "-S"])
def test_through_the_launcher_sys_path_is_as_in_a_plain_run(flag: str, tmp_path: Path) -> None:
    """-I (no script directory on sys.path) and -S (our site directory unread, so still on PYTHONPATH): the
    launcher leaves sys.path as python sets it."""
    python = need_python("3.12")
    (tmp_path / "path.py").write_text("import sys\nprint(sys.path, __file__)\n")
    plain = subprocess.run([python, flag, "path.py"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    ran = subprocess.run(
        [sys.executable, "-m", "flamegraph", "record", "--no-svg", "--folded", str(tmp_path / "p.folded"), "--",
         python, flag, "path.py"], capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert ran.returncode == 0 and ran.stdout == plain.stdout, ran.stderr


@pytest.mark.perf
@pytest.mark.parametrize("how", ["-X", "env"])
def test_perf_jit_becomes_perf_and_leaves_no_dump(how: str, tmp_path: Path) -> None:
    """newcomer10 b-28: 3.13's `-X perf_jit` (or PYTHON_PERF_JIT_SUPPORT=1): 'its functions are frames' and none
    were (its jitdump is not injected), and a 212 KB /tmp/jit-PID.dump left per run. Now -X perf, said."""
    options, env = (("-X", "perf_jit"), {}) if how == "-X" else ((), {"PYTHON_PERF_JIT_SUPPORT": "1"})
    stderr, stacks = _record(tmp_path, need_python("3.13"), *options, "prog.py", env=env)
    assert "-X perf_jit replaced by -X perf" in stderr, stderr
    _named_and_rooted(stacks, "prog.py")
    found = PID.search(stderr)
    assert found is not None, stderr
    assert not os.path.lexists(f"/tmp/jit-{found.group(1)}.dump"), "CPython's perf_jit dump was left in /tmp"


WAITS = textwrap.dedent(
    """
    import threading, time

    def spin():
        end = time.perf_counter() + 0.3
        while time.perf_counter() < end:
            pass

    def nap():
        time.sleep(0.3)

    worker = threading.Thread(target=nap)
    worker.start()
    spin()
    worker.join()
    """
)


@pytest.mark.perf
@pytest.mark.parametrize("release", ["3.12", "3.13"])
def test_wall_time_has_python_frames(release: str, tmp_path: Path) -> None:
    """newcomer10 b-14: `record --wall` of a Python 3.12+ command had no Python frame and said nothing. It gets
    them as record and offcpu do: on-CPU time under spin, the worker's wait under nap, both named and unwound."""
    (tmp_path / "waits.py").write_text(WAITS)
    folded = tmp_path / "wall.folded"
    ran = subprocess.run(
        [sys.executable, "-m", "flamegraph", "record", "--wall", "--no-svg", "--folded", str(folded), "--",
         need_python(release), "waits.py"], capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert f"Python {release}: perf support on" in ran.stderr, ran.stderr
    stacks = [line.rsplit(" ", 1)[0].split(";") for line in folded.read_text().splitlines()]
    _named_and_rooted(stacks, "waits.py")
    assert any("nap (waits.py)" in stack for stack in stacks), "the worker's wait is not under nap"
    assert not any(f.endswith("(flamegraph_launcher.py)") for stack in stacks for f in stack)
    found = PID.search(ran.stderr)
    assert found is not None and not os.path.lexists(f"/tmp/perf-{found.group(1)}.map"), ran.stderr

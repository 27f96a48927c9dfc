"""Python stacks read as Python: the interpreter's own call machinery between two Python functions
folded away, and the frames of our start-up launcher left out.

A stack of a Python 3.12+ program recorded with perf support, as folded (root first):
    ...;PyEval_EvalCode;py_trampoline_evaluator;<module> (flamegraph_launcher.py);_PyEval_EvalFrameDefault;
    PyObject_Vectorcall;py_trampoline_evaluator;main (flamegraph_launcher.py);...;run_path (<frozen runpy>);...;
    <module> (train.py);_PyEval_EvalFrameDefault;PyObject_Vectorcall;py_trampoline_evaluator;
    train_epoch (train.py);_PyEval_EvalFrameDefault;_PyObject_Malloc
becomes
    ...;PyEval_EvalCode;py_trampoline_evaluator;<module> (train.py);train_epoch (train.py);_PyObject_Malloc
The machinery right after the last Python function goes too, so the eval loop's own time is that
function's self time; C functions it calls that are not call machinery (_PyObject_Malloc, time_sleep,
builtin_sorted, MXNet's) stay. Before the first Python function nothing changes. A stack with no
Python function is left as it is (Python 3.11 and older: no perf support, nothing to fold onto).
`--keep-interpreter` keeps the machinery; only the launcher's frames go (with what lies between them and
the program's first function: runpy's exec), so that the program's `<module>` follows `PyEval_EvalCode`
as it would without us. (--compat, whose names are perf's own, skips all of this.)
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..model import PYTHON_FUNCTION, FoldedProfile, Stack

PYTHON_FRAME = re.compile(PYTHON_FUNCTION)
# CPython's call machinery (3.12, 3.13): the eval loop, the vectorcall protocol, calling a type, a
# method or a C function on behalf of Python code. A compiler's clone suffix (.cold, .constprop.0) is
# not part of the name.
INTERPRETER = frozenset(
    """
    _PyEval_EvalFrameDefault _PyEval_EvalFrame _PyEval_Vector PyEval_EvalCode PyEval_EvalCodeEx
    py_trampoline_evaluator _PyFunction_Vectorcall _PyObject_Vectorcall PyObject_Vectorcall
    _PyObject_VectorcallTstate PyObject_VectorcallMethod PyObject_VectorcallDict _PyObject_VectorcallDictTstate
    _PyObject_FastCallDictTstate _PyObject_Call_Prepend _PyObject_MakeTpCall _PyObject_Call PyObject_Call
    _PyObject_CallNoArgs PyObject_CallNoArgs PyObject_CallOneArg PyObject_CallObject PyObject_CallMethod
    _PyObject_CallMethod PyObject_CallFunction PyObject_CallFunctionObjArgs PyObject_CallMethodObjArgs
    _PyVectorcall_Call PyVectorcall_Call method_vectorcall vectorcall_method vectorcall_unbound
    cfunction_call cfunction_vectorcall_O cfunction_vectorcall_NOARGS cfunction_vectorcall_FASTCALL
    cfunction_vectorcall_FASTCALL_KEYWORDS cfunction_vectorcall_FASTCALL_KEYWORDS_METHOD
    method_vectorcall_O method_vectorcall_NOARGS method_vectorcall_FASTCALL method_vectorcall_FASTCALL_KEYWORDS
    method_vectorcall_FASTCALL_KEYWORDS_METHOD method_vectorcall_VARARGS method_vectorcall_VARARGS_KEYWORDS
    slot_tp_call slot_tp_init slot_tp_new type_call call_method call_unbound call_unbound_noarg
    _Py_call_instrumentation
    """.split()
)
CLONE_SUFFIX = re.compile(r"\.(?:cold|constprop|isra|part|lto_priv)(?:\.\d+)*$")
# The launcher runs the program with runpy: its frames are not the program's. Which frames are the
# launcher's only the launcher says (frameworks.flamegraph_launcher.own_frames(), passed in by the pipeline: folding
# sits below frameworks), so that moving or renaming it cannot leave them in every graph.
RUNPY = re.compile(r"^\S+ \((?:<frozen runpy>|runpy\.py)\)$")  # any of runpy's functions (run_path, _run_code...)


def is_python(frame: str) -> bool:
    return PYTHON_FRAME.match(frame) is not None


def is_interpreter(frame: str) -> bool:
    return frame in INTERPRETER or CLONE_SUFFIX.sub("", frame) in INTERPRETER


def python_stack(stack: Stack, launcher: frozenset[str], keep_interpreter: bool = False) -> Stack:
    """`stack` (root first) with the interpreter's machinery after its first Python function folded
    away (unless `keep_interpreter`), and the `launcher`'s frames left out; unchanged when it has no
    Python function."""
    python = [i for i, frame in enumerate(stack) if is_python(frame)]
    if not python:
        return stack
    first, last = python[0], python[-1]
    ours = _launcher_frames(stack, python, launcher)
    kept = list(stack[:first])  # with the launcher's frames, what lies between them goes too (runpy's exec)
    program = next((i for i in python if i not in ours), None)  # the program's first function
    if keep_interpreter:
        if not ours:
            return stack
        return (*kept, *stack[program if program is not None else last + 1 :])
    if program is not None:
        kept += [stack[i] for i in range(program, last + 1) if not is_interpreter(stack[i])]
    after = last + 1
    while after < len(stack) and is_interpreter(stack[after]):
        after += 1  # the eval loop's own time: the last Python function's self time
    return (*kept, *stack[after:])


def _launcher_frames(stack: Stack, python: list[int], launcher: frozenset[str]) -> set[int]:
    """Indices of the launcher's Python frames and of the runpy frames right after them: the stack's
    first Python functions, when they are the launcher's (a stack cut short may begin in runpy, which
    it imports and calls). The launcher's file name is its own (flamegraph_launcher.py): a program's
    launcher.py or main.py is never taken for it."""
    names = [stack[i] for i in python]
    run = next((n for n, name in enumerate(names) if name not in launcher), len(names))
    if run == 0 and not RUNPY.match(names[0]):
        return set()
    dropped = set(python[:run])
    for i in python[run:]:
        if not RUNPY.match(stack[i]):
            break
        dropped.add(i)
    return dropped


def python_stacks(
    counts: Iterable[tuple[str, float]], launcher: frozenset[str], keep_interpreter: bool = False
) -> dict[str, float]:
    """Folded stacks ("a;b;c" -> weight) with `python_stack` applied; stacks that become one merge."""
    merged: dict[str, float] = {}
    for text, weight in counts:
        stack = tuple(text.split(";"))
        folded = ";".join(python_stack(stack, launcher, keep_interpreter)) if any(map(is_python, stack)) else text
        merged[folded] = merged.get(folded, 0) + weight
    return merged


def fold_interpreter(profile: FoldedProfile, launcher: frozenset[str], keep_interpreter: bool = False) -> FoldedProfile:
    """The profile with its Python stacks read as Python (the interpreter's frames kept with
    `keep_interpreter`), the `launcher`'s frames left out (in place; returned for chaining)."""
    profile.counts = python_stacks(profile.counts.items(), launcher, keep_interpreter)
    return profile

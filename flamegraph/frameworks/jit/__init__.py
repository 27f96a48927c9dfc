"""oneDNN JIT kernels for perf: names (perf map) and complete stacks through them (jitdump with CFI).

jitmap.py     dump files matched against anonymous executable memory -> addresses, /tmp/perf-<pid>.map
frame.py      the CFA tracker: one instruction at a time
cfi.py        the linear sweep (capstone) producing each kernel's DWARF CFA program, or none
unwind.py     .eh_frame + .eh_frame_hdr bytes for one kernel
jitdump.py    perf's jitdump format: the marker and the code-load / unwinding records
session.py    the JIT directory of a recording; `complete` writes the records
hook.py       `flamegraph record --jit`: the record hook (pre-step, external scan, perf inject --jit)
chunks.py     a streamed recording: each chunk completed and injected before it is folded
pychild.py    inside each Python child of the command: its marker and trampoline bytes (standard library only)
pysite.py     the sitecustomize that brings pychild to the Python processes the command starts afresh

The program runs through flamegraph/frameworks/flamegraph_launcher.py (DNNL_JIT_DUMP=1; at exit the kernels are
located), which --mxnet shares: this package never imports frameworks/mxnet/.
"""

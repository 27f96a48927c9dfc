"""The library's one pipeline: a request in, typed results out (the recording, the folded profile with
its report in the header, the files written). Every command, `fleet record` on each host and the
`make` recipes run these; a command maps its flags to a request and prints the result.

    record -> fold (+ report) -> write (folded + FILE.json, SVG, PNG) -> export
    oncpu.py      OnCpuRequest -> record_oncpu()  -> OnCpuResult   (`record`, and its steps for fleet and recipes)
    streamed.py   the same, folded while perf records (`record --max-spool/--every`, `offcpu --max-spool`)
    offcpu.py     OffCpuRequest -> record_offcpu_graph() -> OffCpuResult   (`offcpu`)
    wall.py       `record --wall`: on- and off-CPU of each thread on one axis
    perf_inputs.py  FoldRequest -> fold_inputs() -> FoldResult   (`fold`: perf script text or perf.data)
    draw.py       DrawInput -> read_for_drawing() -> draw_svg()   (`render`: folded stacks -> views -> SVG)
    outputs.py    Outputs -> write_outputs() -> Written   (the files one profile becomes)
    scratch.py    the scratch perf.data, kept when a later step fails

Nothing here imports a stage at module level but the types: `flamegraph --help` imports the commands,
which import the requests.
"""

"""One coverage-guided fuzzer process (atheris/libFuzzer) for one target; started by campaign.py.

    python -m tests.fuzz.atheris_main TARGET FINDINGS_DIR STATS_FILE [libFuzzer args: CORPUS... -max_total_time=S]

Only flamegraph/ is instrumented. A failing input does not stop the run: it is saved once per
distinct failure (exception type and where it was raised, or the assertion's first line) in
FINDINGS_DIR, up to five inputs each (the smallest named in the stats), and fuzzing goes on. STATS_FILE gets the
number of inputs run and the failures seen, rewritten every few seconds and at exit.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import sys
import time
import traceback
from pathlib import Path

import atheris

with atheris.instrument_imports(include=["flamegraph"]):
    from tests.fuzz.targets import TARGETS


KEEP = 5  # inputs kept per distinct failure


def signature(error: BaseException) -> str:
    """Where a failure comes from: the innermost frame in flamegraph/ (or in the target), and its type."""
    frames = traceback.extract_tb(error.__traceback__)
    ours = [f for f in frames if "/flamegraph/" in f.filename] or frames[-1:]
    where = f"{Path(ours[-1].filename).name}:{ours[-1].lineno}" if ours else "?"
    what = type(error).__name__
    if isinstance(error, AssertionError):
        what += ": " + str(error).split("\n", 1)[0][:60]
    return f"{what} at {where}"


def main() -> None:
    name, findings, stats_path = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    target = TARGETS[name]
    findings.mkdir(parents=True, exist_ok=True)
    stats: dict[str, object] = {"target": name, "runs": 0, "failures": {}}
    failures: dict[str, dict[str, object]] = stats["failures"]  # type: ignore[assignment]
    last_write = [0.0]

    def write_stats() -> None:
        stats_path.write_text(json.dumps(stats, indent=1))
        last_write[0] = time.monotonic()

    atexit.register(write_stats)

    def one_input(data: bytes) -> None:
        stats["runs"] = int(stats["runs"]) + 1  # type: ignore[call-overload]
        try:
            target(data)
        except Exception as error:  # noqa: BLE001 - every failure is recorded, the run goes on
            key = signature(error)
            seen = failures.setdefault(key, {"size": len(data), "file": "", "count": 0, "kept": 0})
            # Up to KEEP inputs per failure (one signature may hide two bugs: "ours != the reference"),
            # each under its own name, so a later run never overwrites what an earlier one found.
            if int(seen["kept"]) < KEEP or len(data) < int(seen["size"]):  # type: ignore[call-overload]
                file = f"{name}-{hashlib.sha1(key.encode()).hexdigest()[:8]}-{hashlib.sha1(data).hexdigest()[:8]}"
                (findings / file).write_bytes(data)
                text = "".join(traceback.format_exception(error))[-3000:]
                (findings / f"{file}.txt").write_text(f"{key}\n\n{text}")
                seen["kept"] = int(seen["kept"]) + 1  # type: ignore[call-overload]
                if len(data) <= int(seen["size"]) or not seen["file"]:  # type: ignore[call-overload]
                    seen["size"], seen["file"] = len(data), file
            seen["count"] = int(seen["count"]) + 1  # type: ignore[call-overload]
        if time.monotonic() - last_write[0] > 10:
            write_stats()

    atheris.Setup([sys.argv[0], *sys.argv[4:]], one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()

"""FoldedProfile -> speedscope's JSON file format (https://www.speedscope.app/file-format-schema.json).

One "sampled" profile per thread when every stack is rooted at a thread (`comm-PID/TID`, from
`fold --tid` or `record --threads`; `comm-TID` off-CPU; `comm-PID` with --pid), else one profile.
The root frame stays in each stack, so the stacks read back are exactly the folded ones. Weights are
in the profile's unit: sample counts (speedscope's unit "none") or off-CPU microseconds. Each
distinct frame is listed once in `shared.frames`. The title and capture facts go in the file's
`name` and in a `metadata` object (the schema allows extra keys; speedscope ignores them).

    {"$schema": "https://www.speedscope.app/file-format-schema.json", "name": "train.py - cpu-clock, samples",
     "shared": {"frames": [{"name": "python-42/43"}, {"name": "main"}]},
     "profiles": [{"type": "sampled", "name": "python-42/43", "unit": "none", "startValue": 0,
                   "endValue": 3, "samples": [[0, 1]], "weights": [3]}], ...}
"""

from __future__ import annotations

import json
from typing import Any

from ..io.folded import check_total, encode
from ..model import FoldedProfile
from .formats import EXPORTER, capture_facts, describe, threaded
from .names import export_name

SCHEMA = "https://www.speedscope.app/file-format-schema.json"
UNITS = {"microseconds": "microseconds", "milliseconds": "milliseconds", "nanoseconds": "nanoseconds",
         "seconds": "seconds", "bytes": "bytes"}  # fmt: skip  # anything else (samples) is "none"


def speedscope_unit(unit: str) -> str:
    return UNITS.get(unit, "none")


def group_by_thread(profile: FoldedProfile) -> dict[str | None, list[tuple[str, float]]]:
    """Stacks per thread root (every root a thread), or all under None; each list sorted by its bytes."""
    stacks = sorted(profile.counts.items(), key=lambda item: encode(item[0]))
    if not threaded(profile):
        return {None: stacks}
    groups: dict[str | None, list[tuple[str, float]]] = {}
    for stack, weight in stacks:
        groups.setdefault(stack.split(";", 1)[0], []).append((stack, weight))
    return groups


def speedscope_document(profile: FoldedProfile, title: str | None = None) -> dict[str, Any]:
    """The speedscope file as a JSON-ready dict."""
    name = export_name(describe(profile, title))  # the command's bytes, as the frames' (b-3)
    unit = speedscope_unit(profile.unit)
    frames: list[dict[str, str]] = []
    index: dict[str, int] = {}
    profiles: list[dict[str, Any]] = []
    for root, stacks in group_by_thread(profile).items():
        samples, weights = [], []
        for stack, weight in stacks:
            ids = []
            for frame in stack.split(";"):
                i = index.get(frame)
                if i is None:
                    i = index[frame] = len(frames)
                    frames.append({"name": export_name(frame)})
                ids.append(i)
            samples.append(ids)
            weights.append(weight)
        total = sum(weights)
        profiles.append({
            "type": "sampled", "name": export_name(root) if root is not None else name, "unit": unit,
            "startValue": 0, "endValue": total, "samples": samples, "weights": weights,
        })  # fmt: skip
    # The heaviest thread first (speedscope opens the active one; the list is its thread menu).
    profiles.sort(key=lambda p: (-p["endValue"], p["name"]))
    return {
        "$schema": SCHEMA,
        "name": name,
        "exporter": EXPORTER,
        "activeProfileIndex": 0,
        "metadata": {export_name(k): export_name(v) for k, v in capture_facts(profile).items()},
        "shared": {"frames": frames},
        "profiles": profiles,
    }


def render_speedscope(profile: FoldedProfile, title: str | None = None) -> bytes:
    """The speedscope JSON file: UTF-8, deterministic (same profile, same bytes). A total past the
    largest float is refused as `render` refuses it: JavaScript would read its `endValue` as Infinity."""
    check_total(profile.total)
    document = speedscope_document(profile, title)
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"

"""The straggler view: which host's profile differs most from the rest of the fleet, and against what.

Each host's profile becomes shares of its own total (hosts that sampled more do not weigh more).
A host's distance is the total variation distance between its self-time shares per function and
the mean shares of the *other* hosts (leave-one-out, so an outlier does not pull the mean towards
itself): the fraction of its time spent differently, 0 (same mix) to 1 (nothing in common). The
host with the largest distance is drawn as a differential graph against the others' mean stacks
(normalised to its total), red where it spends more. With two hosts the distances are equal; the
first by name is drawn.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..io.diagnostics import BadOption
from ..model import FoldedProfile


@dataclass
class Outlier:
    host: str
    distance: float  # 0..1
    ranking: list[tuple[str, float]]  # every host, farthest first
    profile: FoldedProfile  # the host's own
    mean: FoldedProfile  # the other hosts' mean shares per stack (sums to 1)


def shares(counts: Mapping[str, float]) -> dict[str, float]:
    total = sum(counts.values())
    return {key: weight / total for key, weight in counts.items()} if total > 0 else {}


def self_by_function(profile: FoldedProfile) -> dict[str, float]:
    """Self weight per function (the leaf frame of each stack)."""
    leaves: dict[str, float] = {}
    for stack, weight in profile.counts.items():
        leaf = stack.rsplit(";", 1)[-1]
        leaves[leaf] = leaves.get(leaf, 0.0) + weight
    return leaves


def mean_shares(items: list[dict[str, float]]) -> dict[str, float]:
    mean: dict[str, float] = {}
    for item in items:
        for key, value in item.items():
            mean[key] = mean.get(key, 0.0) + value / len(items)
    return mean


def variation_distance(p: Mapping[str, float], q: Mapping[str, float]) -> float:
    return 0.5 * sum(abs(p.get(key, 0.0) - q.get(key, 0.0)) for key in set(p) | set(q))


def find_outlier(profiles: Mapping[str, FoldedProfile]) -> Outlier:
    """The host farthest from the mean of the others (needs two hosts with samples)."""
    usable = {host: profile for host, profile in sorted(profiles.items()) if profile.total > 0}
    if len(usable) < 2:
        raise BadOption(f"the straggler view needs at least two hosts with samples, got {len(usable)}")
    functions = {host: shares(self_by_function(profile)) for host, profile in usable.items()}
    n = len(functions)
    fleet = mean_shares(list(functions.values()))
    ranking = []
    for host, own in functions.items():
        # the others' mean without recomputing it: (n * mean - own) / (n - 1); O(hosts x functions) in all
        others = {key: (n * value - own.get(key, 0.0)) / (n - 1) for key, value in fleet.items()}
        ranking.append((host, variation_distance(own, others)))
    ranking.sort(key=lambda item: (-round(item[1], 12), item[0]))
    host, distance = ranking[0]
    mean = mean_shares([shares(p.counts) for other, p in usable.items() if other != host])
    return Outlier(host, distance, ranking, usable[host], FoldedProfile(counts=mean, event=usable[host].event))


def outlier_metadata(outlier: Outlier) -> dict[str, str]:
    others = len(outlier.ranking) - 1
    return {
        "outlier": f"{outlier.host}: {100 * outlier.distance:.1f} % of its self time is spent differently "
        f"from the mean of the other {others} host{'s' * (others != 1)}",
        "before": f"the mean of the other hosts' stacks (shares, each host weighted equally), scaled to {outlier.host}",
        "after": f"{outlier.host}",
        "hosts by distance": ", ".join(f"{host} {100 * d:.1f} %" for host, d in outlier.ranking),
    }


def split_by_root(profile: FoldedProfile) -> dict[str, FoldedProfile]:
    """A `--per-host` profile (each host a root frame) -> one profile per host, without that frame."""
    hosts: dict[str, FoldedProfile] = {}
    for stack, weight in profile.counts.items():
        host, _, rest = stack.partition(";")
        hosts.setdefault(host, FoldedProfile(event=profile.event, unit=profile.unit)).add(rest or host, weight)
    return hosts

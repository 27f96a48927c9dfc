"""The sampling allocator's budget of samples per second (`--memory-max-rate`): run without perf (its
marker is then a plain call, taken here by the test program's own definition), the weights must stay
unbiased while the limit moves the mean interval, each exactly n / (1 - exp(-n / mean)) of the mean the
sample's interval was drawn with; and the texts that say what the limit did."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from flamegraph.folding.allocations import MemoryTotals
from flamegraph.io.diagnostics import BadOption
from flamegraph.model import FoldedProfile
from flamegraph.record.memory import MemoryRequest, parse_max_rate
from flamegraph.record.memory_fold import RAISED, memory_subtitle, raised_interval
from flamegraph.record.sampler import build_sampler, preload_env

HARNESS = r"""
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
/* Preloaded with the sampling allocator, without perf: this program's own flamegraph_alloc_sampled
 * (exported, -rdynamic) takes the marker's calls (the library calls it through its PLT). Two threads for
 * SECONDS: `big` allocates 3000 bytes in bursts (a tight loop for PHASE s, then idle as long), `small`
 * 1000 bytes in a slow steady loop; each thread's kind is the allocation size. */
static double got[2], want[2], var[2];
static long samples[2], bad[2];
static size_t low[2] = {(size_t)-1, (size_t)-1}, high[2];

__attribute__((visibility("default"))) void flamegraph_alloc_sampled(void *ptr, size_t size, size_t weight, int api,
                                                                     size_t mean) {
    int k = size == 3000 ? 0 : size == 1000 ? 1 : -1;
    if (k < 0 || ptr == NULL || api != 0)
        return;
    double p = -expm1(-(double)size / (double)mean);
    bad[k] += weight != (size_t)((double)size / p + 0.5);
    got[k] += (double)weight;
    var[k] += (1 - p) * (double)weight * (double)weight; /* Horvitz-Thompson: an unbiased estimate of the variance */
    samples[k]++;
    low[k] = mean < low[k] ? mean : low[k];
    high[k] = mean > high[k] ? mean : high[k];
}

static double seconds, phase;
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void *big(void *arg) {
    (void)arg;
    double start = now(), end = start + seconds;
    while (now() < end) {
        double burst = now() + phase;
        while (now() < burst)
            for (int i = 0; i < 100; i++) {
                volatile char *p = malloc(3000);
                p[0] = 1;
                free((void *)p);
                want[0] += 3000;
            }
        struct timespec idle = {0, (long)(phase * 1e9)};
        nanosleep(&idle, NULL);
    }
    return NULL;
}

static void *small(void *arg) {
    (void)arg;
    double end = now() + seconds;
    while (now() < end) {
        volatile char *p = malloc(1000);
        p[0] = 1;
        for (volatile int spin = 0; spin < 300; spin++) {
        }
        free((void *)p);
        want[1] += 1000;
    }
    return NULL;
}

int main(int argc, char **argv) {
    seconds = argc > 1 ? atof(argv[1]) : 2;
    phase = argc > 2 ? atof(argv[2]) : 0.15;
    pthread_t a, b;
    double start = now();
    pthread_create(&a, NULL, big, NULL);
    pthread_create(&b, NULL, small, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    double took = now() - start;
    for (int k = 0; k < 2; k++)
        printf("%s got %.0f want %.0f sd %.0f samples %ld bad %ld means %zu %zu\n", k ? "small" : "big", got[k],
               want[k], sqrt(var[k]), samples[k], bad[k], low[k], high[k]);
    printf("seconds %.3f\n", took);
    return 0;
}
"""


def run_harness(tmp_path: Path, mean: int, limit: int, seconds: float = 1.0) -> dict[str, list[float]]:
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler (cc) to build the sampling allocator")
    source = tmp_path / "harness.c"
    source.write_text(HARNESS)
    program = tmp_path / "harness"
    subprocess.run([compiler, "-O2", "-rdynamic", "-pthread", "-o", str(program), str(source), "-lm"], check=True)
    env = {**os.environ, **preload_env(build_sampler(False, cache=tmp_path / "cache"), mean, limit, {})}
    done = subprocess.run([str(program), str(seconds), "0.05"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = [line.split() for line in done.stdout.splitlines()]
    return {words[0]: [float(w) for w in words[1:] if w[0].isdigit()] for words in lines}


@pytest.mark.parametrize("limit", [0, 100_000])
def test_weights_stay_unbiased_while_the_limit_moves_the_mean(tmp_path: Path, limit: int) -> None:
    """Two threads: one allocating 3000-byte blocks in bursts of 50 ms (~30 GB/s, then idle as long), the
    other 1000-byte blocks steadily (~1 GB/s), a sample every 256 bytes asked for. Unlimited, ~2.5 million
    samples a second; at most 100,000/s, the mean is raised to ~40-600 KiB and moves with the bursts. Each
    thread's bytes are estimated within 4 of their standard errors (estimated from the samples: the sum
    of w^2 (1 - p), ~0.5 % here; and the weights' rounding to whole bytes) and within 2.5 %, and every
    weight is exactly its formula."""
    got = run_harness(tmp_path, 256, limit)
    seconds = got["seconds"][0]
    samples = got["big"][3] + got["small"][3]
    for kind in ("big", "small"):
        estimate, true, sd, count, bad, low, high = got[kind]
        assert bad == 0, got  # weight == round(n / (1 - exp(-n / mean))), the mean the marker said
        rounding = count / 2  # weights are whole bytes
        assert abs(estimate - true) <= 4 * sd + rounding and abs(estimate / true - 1) <= 0.025, (kind, got)
    if limit:
        assert samples <= 1.3 * limit * seconds, got  # kept to (the first window's quota aside)
        assert max(got["big"][6], got["small"][6]) >= 100 * 256, got  # the mean raised, 100x and more
    else:
        assert got["big"][5:] == [256, 256] and samples > 5 * 100_000 * seconds, got


def test_max_rate_is_samples_per_second_or_none() -> None:
    assert parse_max_rate("1000") == 1000 and parse_max_rate(" none ") == 0
    for text in ("0", "-5", "1k", "", "1.5"):
        with pytest.raises(BadOption, match="samples per second"):
            parse_max_rate(text)
    with pytest.raises(BadOption, match="samples per second"):
        MemoryRequest("alloc", 1024, -1)
    assert MemoryRequest("alloc", 512 * 1024).rate() == "sampled every 512 KiB on average, at most 1,000/s per process"
    assert MemoryRequest("alloc", 4096, 0).rate() == "sampled every 4 KiB on average"


def test_the_graph_says_how_far_the_limit_raised_the_interval() -> None:
    request = MemoryRequest("alloc", 512 * 1024, 1000)
    totals = MemoryTotals(means=Counter({512 * 1024: 10}))
    assert raised_interval(totals, request) is None  # never raised: the subtitle's rate is the truth
    totals.means.update({3 << 20: 60, 24 << 20: 30})
    text = raised_interval(totals, request)
    assert text == "interval raised to 3.00 MiB–24.00 MiB for 90 % of the samples"
    profile = FoldedProfile()
    assert memory_subtitle("bytes allocated", profile) == "bytes allocated"
    profile.metadata[RAISED] = text
    assert memory_subtitle("bytes allocated", profile) == f"bytes allocated; limit reached: {text}"

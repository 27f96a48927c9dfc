"""The sampling allocator's entry points (sampler.c), run without perf: its markers are then plain calls,
taken by the test program's own definitions. Each interposed function counts its bytes down once (malloc,
calloc and realloc in their fast path, the slow path after it), so every function's bytes are estimated
without bias; the live variant marks the free of every sampled address; and a library preloaded after the
sampler, whose constructor runs before the sampler's, is served (free() no longer tests whether the next
allocator is resolved: until it is, its pointer is a resolver)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from flamegraph.record.sampler import APIS, build_sampler, preload_env

HARNESS = r"""
#define _GNU_SOURCE
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
/* -rdynamic: the sampler's calls of its markers bind to these. Per api (sampler.c's enum): the weights'
 * sum, its variance estimated from the samples (Horvitz-Thompson: w^2 (1 - p)), the samples; the bytes
 * the program asked for; and the frees marked. */
static double got[10], var[10], want[10];
static long samples[10], frees;

__attribute__((visibility("default"))) void flamegraph_alloc_sampled(void *ptr, size_t size, size_t weight, int api,
                                                                     size_t mean) {
    if (api < 0 || api >= 10 || ptr == NULL)
        return;
    double p = -expm1(-(double)size / (double)mean);
    got[api] += (double)weight;
    var[api] += (1 - p) * (double)weight * (double)weight;
    samples[api]++;
}
__attribute__((visibility("default"))) void flamegraph_free_sampled(void *ptr) { (void)ptr; frees++; }

#define USE(p) (((volatile char *)(p))[0] = 1)

int main(int argc, char **argv) {
    long calls = argc > 1 ? atol(argv[1]) : 100000;
    for (long i = 0; i < calls; i++) {
        size_t n = 512 + (size_t)(i % 7) * 128; /* 512..1280 bytes */
        void *p = malloc(n);
        USE(p);
        want[0] += n;
        p = realloc(p, n + 1000); /* a tracked block's realloc frees it (live) */
        USE(p);
        want[2] += n + 1000;
        free(p);
        p = calloc(n / 64, 64);
        USE(p);
        want[1] += n;
        free(p);
        p = realloc(NULL, n);
        USE(p);
        want[2] += n;
        free(p);
        if (posix_memalign(&p, 64, n) != 0)
            return 2;
        USE(p);
        want[3] += n;
        free(p);
        p = aligned_alloc(64, n);
        USE(p);
        want[4] += n;
        free(p);
        p = memalign(64, n);
        USE(p);
        want[5] += n;
        free(p);
        p = valloc(n);
        USE(p);
        want[6] += n;
        free(p);
        p = pvalloc(n);
        USE(p);
        want[7] += n;
        free(p);
        p = reallocarray(NULL, n / 64, 64);
        USE(p);
        want[8] += n;
        free(p);
        if (i % 50 == 0) {
            size_t m = 8192 + (size_t)(i % 3) * 4096;
            p = mmap(NULL, m, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED)
                return 3;
            USE(p);
            want[9] += m;
            munmap(p, m);
        }
    }
    long all = 0, freed = frees; /* before printf allocates its buffer */
    for (int k = 0; k < 10; k++)
        all += samples[k];
    for (int k = 0; k < 10; k++)
        printf("%d got %.0f want %.0f sd %.0f samples %ld\n", k, got[k], want[k], sqrt(var[k]), samples[k]);
    printf("frees %ld samples %ld\n", freed, all);
    return 0;
}
"""
# A library preloaded after the sampler: its constructor runs before the sampler's (glibc initializes the
# preloaded objects last first).
EARLY = r"""
#include <stdlib.h>
__attribute__((constructor)) static void early(void) {
    free(NULL);
    free(malloc(100));
}
"""


def compiler() -> str:
    found = shutil.which("cc") or shutil.which("gcc")
    if found is None:
        pytest.skip("no C compiler (cc) to build the sampling allocator")
    return found


def harness(tmp_path: Path) -> Path:
    (tmp_path / "harness.c").write_text(HARNESS)
    program = tmp_path / "harness"
    # -fno-builtin: the calls as written (gcc makes realloc(NULL, n) a malloc(n))
    subprocess.run([compiler(), "-O2", "-fno-builtin", "-rdynamic", "-o", str(program), str(tmp_path / "harness.c"),
                    "-lm"], check=True)  # fmt: skip
    return program


@pytest.mark.parametrize("live", [False, True])
def test_every_function_counts_its_bytes_once(tmp_path: Path, live: bool) -> None:
    """A sample every 4 KiB on average, no limit, 40,000 rounds of nine functions and 800 anonymous maps
    (~750-22,000 samples each: standard errors of 0.5-1.5 %): each function's bytes within 5 standard
    errors (and the weights' rounding) and 6 %. Bytes counted down twice (a fast and a slow path; glibc's
    reallocarray calling realloc through the PLT, i.e. ours) would read about twice their size, bytes not
    counted down a fraction of it. Live: every sampled address's free is marked (all are freed; a grown
    block by its realloc)."""
    program = harness(tmp_path)
    env = {**os.environ, **preload_env(build_sampler(live, cache=tmp_path / "cache"), 4096, 0, {})}
    done = subprocess.run([str(program), "40000"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()]
    for words in rows[:10]:
        api, got, want, sd, count = APIS[int(words[0])], *(float(w) for w in words[2:9:2])
        assert count > 500, (api, words)
        assert abs(got - want) <= 5 * sd + count / 2 and abs(got / want - 1) <= 0.06, (api, words)
    frees, samples = int(rows[10][1]), int(rows[10][3])
    assert frees == (samples if live else 0), rows[10]


@pytest.mark.parametrize("live", [False, True])
def test_a_free_before_any_allocation_is_served(tmp_path: Path, live: bool) -> None:
    (tmp_path / "early.c").write_text(EARLY)
    early = tmp_path / "libearly.so"
    subprocess.run([compiler(), "-O2", "-fPIC", "-shared", "-o", str(early), str(tmp_path / "early.c")], check=True)
    library = build_sampler(live, cache=tmp_path / "cache")
    env = {**os.environ, **preload_env(library, 4096, 0, {"LD_PRELOAD": str(early)})}
    assert env["LD_PRELOAD"] == f"{library}:{early}"
    done = subprocess.run(["/bin/echo", "served"], env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "served\n", "")

/* A malloc-heavy program for bench/memory_cost.py: CALLS malloc/free pairs of varying sizes, nothing else.
 * Prints "calls N cpu_ns T": its own CPU time (CLOCK_PROCESS_CPUTIME_ID) around the loop, so the trap of a
 * probe on malloc is counted and perf's own work is not.  cc -O2 -fno-omit-frame-pointer -o malloc_heavy */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

__attribute__((noinline)) static void *grab(size_t n) { return malloc(n); }

int main(int argc, char **argv) {
    long calls = argc > 1 ? atol(argv[1]) : 200000;
    volatile char sink = 0;
    long start = cpu_ns();
    for (long i = 0; i < calls; i++) {
        char *p = grab(64 + (size_t)(i % 13) * 96);  /* 13 sizes: no rhythm shared with N = 10, 100, 1000 */
        p[0] = (char)i;
        sink ^= p[0];
        free(p);
    }
    printf("calls %ld cpu_ns %ld\n", calls, cpu_ns() - start);
    return sink == 42;
}

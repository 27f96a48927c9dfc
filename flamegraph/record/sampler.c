/* The sampling allocator of `flamegraph record --memory`: preloaded (LD_PRELOAD) into the command, it
 * forwards every allocation call to the next allocator (dlsym(RTLD_NEXT): glibc's, or one the user preloads)
 * and, on average once every FLAMEGRAPH_MEMORY_SAMPLE bytes, calls flamegraph_alloc_sampled(), on which
 * perf puts the one uprobe: the trap (~1.3 us) is paid on sampled allocations only.
 *
 * Sampling by bytes, as tcmalloc, jemalloc and Go do: each thread counts down the bytes to its next sample,
 * drawn from an exponential distribution of mean M (a Poisson process over the bytes allocated). An
 * allocation of n bytes is sampled with probability p = 1 - exp(-n/M) and weighs n/p: unbiased, exact
 * for n >> M, and a rhythm in the calls cannot alias with it (every Nth call could).
 *
 * A budget of samples per second per process (FLAMEGRAPH_MEMORY_RATE; 0: none) bounds the cost for any
 * program: a sample costs the program ~5-8 us (perf's trap and stack copy), so one allocating 25 GB/s
 * would take 50,000 samples/s at M = 512 KiB. The samples of each window (a tenth of the budget, or
 * 0.1 s) estimate the bytes allocated per second (their weights' sum); M becomes that rate divided by
 * the budget, never below the mean asked for. Each thread draws its next interval with the M in force
 * then and weighs the sample ending it with that same M: the interval is exponential given everything
 * before it (memoryless), so p = 1 - exp(-n/M) holds for that allocation and n/p stays unbiased however
 * M moves. The fast path is unchanged (a countdown); only a sample reads the clock and the shared
 * window (atomics, no lock).
 *
 * Built at record time by flamegraph/record/sampler.py (cc -O2 -fPIC -shared -fno-omit-frame-pointer);
 * with -DFLAMEGRAPH_LIVE it also interposes free() and munmap(): a sampled address is kept in a hash set,
 * and its free calls flamegraph_free_sampled() (for `--memory live`).
 * Nothing here allocates on a sampled path; the markers take no lock and allocate nothing. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec"))) /* no __tls_get_addr: it may call malloc */
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MARKER __attribute__((noinline, noipa, used)) EXPORT

/* The api argument of flamegraph_alloc_sampled: flamegraph/record/sampler.py's APIS, in this order. */
enum api { API_MALLOC, API_CALLOC, API_REALLOC, API_POSIX_MEMALIGN, API_ALIGNED_ALLOC, API_MEMALIGN,
           API_VALLOC, API_PVALLOC, API_REALLOCARRAY, API_MMAP };

/* The probed functions: their arguments are read at their first instruction (%di, %si, %dx, %cx). */
MARKER void flamegraph_alloc_sampled(void *ptr, size_t size, size_t weight, int api, size_t mean) {
    __asm__ volatile("" : : "r"(ptr), "r"(size), "r"(weight), "r"(api), "r"(mean) : "memory");
}
MARKER void flamegraph_free_sampled(void *ptr) { __asm__ volatile("" : : "r"(ptr) : "memory"); }
MARKER void flamegraph_sampler_loaded(size_t mean, int live, size_t limit) {
    __asm__ volatile("" : : "r"(mean), "r"(live), "r"(limit) : "memory");
}

/* glibc's own entry points: what a call made while dlsym() runs is served by (dlsym may allocate). */
extern void *__libc_malloc(size_t) __attribute__((weak));
extern void *__libc_calloc(size_t, size_t) __attribute__((weak));
extern void *__libc_realloc(void *, size_t) __attribute__((weak));
extern void *__libc_memalign(size_t, size_t) __attribute__((weak));
extern void __libc_free(void *) __attribute__((weak));

static void free_first(void *ptr);

static struct {
    void *(*malloc)(size_t);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    void (*free)(void *);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    void *(*mmap)(void *, size_t, int, int, int, off_t);
    int (*munmap)(void *, size_t);
} next = {.free = free_first};

static int64_t mean_bytes = 512 * 1024; /* the mean asked for: the finest */
static int64_t limit;                   /* samples per second per process; 0: no limit */
static int64_t mean_now = 512 * 1024;   /* atomic: the mean new intervals are drawn with (>= mean_bytes) */
static int ready;
static TLS int resolving;       /* this thread is inside dlsym() */
static TLS int64_t until;       /* bytes to this thread's next sample */
static TLS int64_t drawn_mean;  /* the mean `until` was drawn with: the sample ending it weighs by it */
static TLS int started;         /* `until` drawn */
static TLS uint64_t rng;        /* this thread's xorshift state */

static void *lookup(const char *name) {
    resolving = 1;
    void *found = dlsym(RTLD_NEXT, name);
    resolving = 0;
    return found;
}

static void resolve(void) {
    if (ready)
        return;
    next.malloc = lookup("malloc");
    next.calloc = lookup("calloc");
    next.realloc = lookup("realloc");
    void (*found_free)(void *) = lookup("free"); /* free() calls it unguarded: never NULL there */
    next.free = found_free ? found_free : __libc_free;
    next.posix_memalign = lookup("posix_memalign");
    next.aligned_alloc = lookup("aligned_alloc");
    next.memalign = lookup("memalign");
    next.valloc = lookup("valloc");
    next.pvalloc = lookup("pvalloc");
    next.mmap = lookup("mmap");
    next.munmap = lookup("munmap");
    if (next.malloc == NULL) /* no next definition: glibc's own (a preloaded allocator without them) */
        next.malloc = __libc_malloc;
    if (next.calloc == NULL)
        next.calloc = __libc_calloc;
    if (next.realloc == NULL)
        next.realloc = __libc_realloc;
    if (next.memalign == NULL)
        next.memalign = __libc_memalign;
    const char *text = getenv("FLAMEGRAPH_MEMORY_SAMPLE");
    if (text != NULL) {
        long long wanted = strtoll(text, NULL, 10);
        if (wanted >= 1)
            mean_bytes = wanted;
    }
    text = getenv("FLAMEGRAPH_MEMORY_RATE");
    if (text != NULL) {
        long long wanted = strtoll(text, NULL, 10);
        limit = wanted > 0 ? wanted : 0;
    }
    __atomic_store_n(&mean_now, mean_bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&ready, 1, __ATOMIC_RELEASE);
}

/* -- the byte counter ------------------------------------------------------------------------------- */

static uint64_t random64(void) {
    if (UNLIKELY(rng == 0)) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        uint64_t z = (uint64_t)now.tv_nsec ^ ((uint64_t)now.tv_sec << 30) ^ ((uint64_t)syscall(SYS_gettid) << 17)
                     ^ (uint64_t)(uintptr_t)&rng;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL; /* splitmix64 */
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        rng = (z ^ (z >> 31)) | 1;
    }
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int64_t interval(void) {
    drawn_mean = __atomic_load_n(&mean_now, __ATOMIC_RELAXED);
    double u = ((double)(random64() >> 11) + 1.0) / 9007199254740993.0; /* (0, 1] */
    double bytes = -log(u) * (double)drawn_mean;
    return bytes < 1 ? 1 : bytes > 4e18 ? (int64_t)4e18 : (int64_t)bytes;
}

/* 0 when this allocation of n bytes, already counted down, is not sampled; else the mean the interval it
 * ended was drawn with (the countdown crossed zero inside it), and the next interval is drawn. */
static inline int64_t passed(size_t n) {
    if (__builtin_expect(until > 0, 1))
        return 0;
    if (UNLIKELY(!started)) { /* a new thread: its first interval, then the same test */
        started = 1;
        until = interval() - (int64_t)n;
        if (until > 0)
            return 0;
    }
    int64_t mean = drawn_mean;
    until = interval();
    return n > 0 ? mean : 0;
}

/* passed() for an allocation not yet counted down. */
static inline int64_t crossed(size_t n) {
    until -= (int64_t)n;
    return passed(n);
}

static size_t weight(size_t n, int64_t mean) {
    double p = -expm1(-(double)n / (double)mean);
    double w = p > 0 ? (double)n / p : (double)mean;
    return (size_t)(w + 0.5);
}

/* -- the budget of samples per second -----------------------------------------------------------------
 * Shared by the threads of the process: a window's start, its samples and their weights (atomics). The
 * sample that fills the window's quota, or comes when it is older than its span, closes it (one thread
 * wins the exchange of its start) and sets the mean from the bytes per second the window saw. */
static int64_t window_start; /* ns, CLOCK_MONOTONIC; 0: none open */
static uint64_t window_samples, window_bytes;

static int64_t now_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

static void budget(size_t weighed) {
    if (limit == 0)
        return;
    int64_t quota = limit / 10 > 10 ? limit / 10 : 10;      /* samples per window: 0.1 s at 100/s and more */
    int64_t span = (int64_t)(1e9 * (double)quota / (double)limit); /* ns */
    uint64_t samples = __atomic_add_fetch(&window_samples, 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&window_bytes, (uint64_t)weighed, __ATOMIC_RELAXED);
    int64_t now = now_ns(), start = __atomic_load_n(&window_start, __ATOMIC_RELAXED);
    if (start == 0) {
        __atomic_compare_exchange_n(&window_start, &start, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
        return;
    }
    if ((int64_t)samples < quota && now - start < span)
        return;
    if (!__atomic_compare_exchange_n(&window_start, &start, now, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        return; /* another thread closes it */
    __atomic_exchange_n(&window_samples, 0, __ATOMIC_RELAXED);
    uint64_t bytes = __atomic_exchange_n(&window_bytes, 0, __ATOMIC_RELAXED);
    double seconds = (double)(now - start > 1000 ? now - start : 1000) / 1e9;
    double wanted = (double)bytes / seconds / (double)limit; /* the mean giving `limit` samples per second */
    int64_t mean = wanted < (double)mean_bytes ? mean_bytes : wanted > 4e15 ? (int64_t)4e15 : (int64_t)wanted;
    __atomic_store_n(&mean_now, mean, __ATOMIC_RELAXED);
}

#ifdef FLAMEGRAPH_LIVE
/* -- the sampled addresses (live) --------------------------------------------------------------------
 * A free must learn cheaply that its address was not sampled: a counter per hash bucket (FILTER) is read
 * without a lock, and only a non-zero one takes the lock to look in the table (open addressing, linear
 * probing, deletion by backward shift, grown by doubling in memory of its own). */
#define FILTER_BITS 15
static uint16_t filter[1u << FILTER_BITS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t *table;
static size_t capacity, count;

static inline size_t hash(uintptr_t p, unsigned bits) { return (size_t)(((p >> 4) * 0x9e3779b97f4a7c15ULL) >> (64 - bits)); }
static inline uint16_t *bucket(const void *p) { return &filter[hash((uintptr_t)p, FILTER_BITS)]; }

static void *pages(size_t bytes) {
    void *p = (void *)syscall(SYS_mmap, NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static unsigned bits_of(size_t n) { unsigned b = 0; while (((size_t)1 << b) < n) b++; return b; }

static void place(uintptr_t *into, size_t size, uintptr_t p) {
    size_t i = hash(p, bits_of(size));
    while (into[i] != 0)
        i = (i + 1) & (size - 1);
    into[i] = p;
}

static int remember(void *ptr) {
    pthread_mutex_lock(&lock);
    if (*bucket(ptr) == UINT16_MAX) { /* a full counter: not sampled (never seen: 65,535 addresses in one bucket) */
        pthread_mutex_unlock(&lock);
        return 0;
    }
    if (2 * (count + 1) > capacity) {
        size_t grown = capacity ? 2 * capacity : 4096;
        uintptr_t *bigger = pages(grown * sizeof *bigger);
        if (bigger == NULL) {
            pthread_mutex_unlock(&lock);
            return 0;
        }
        for (size_t i = 0; i < capacity; i++)
            if (table[i])
                place(bigger, grown, table[i]);
        if (table)
            syscall(SYS_munmap, table, capacity * sizeof *table);
        table = bigger;
        capacity = grown;
    }
    place(table, capacity, (uintptr_t)ptr);
    count++;
    __atomic_add_fetch(bucket(ptr), 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&lock);
    return 1;
}

/* Whether `ptr` was sampled: then it is forgotten, and its free marked. */
static void forget(void *ptr) {
    if (ptr == NULL || __atomic_load_n(bucket(ptr), __ATOMIC_RELAXED) == 0)
        return;
    int found = 0;
    pthread_mutex_lock(&lock);
    if (capacity) {
        unsigned bits = bits_of(capacity);
        size_t i = hash((uintptr_t)ptr, bits);
        while (table[i] != 0 && table[i] != (uintptr_t)ptr)
            i = (i + 1) & (capacity - 1);
        if (table[i] != 0) {
            found = 1;
            count--;
            __atomic_sub_fetch(bucket(ptr), 1, __ATOMIC_RELAXED);
            size_t hole = i; /* backward shift: later entries of the run move into the hole */
            for (size_t j = (i + 1) & (capacity - 1); table[j] != 0; j = (j + 1) & (capacity - 1)) {
                size_t home = hash(table[j], bits);
                if (((j - home) & (capacity - 1)) >= ((j - hole) & (capacity - 1))) {
                    table[hole] = table[j];
                    hole = j;
                }
            }
            table[hole] = 0;
        }
    }
    pthread_mutex_unlock(&lock);
    if (found)
        flamegraph_free_sampled(ptr);
}
#define LIVE 1
#else
#define LIVE 0
#endif

/* Each hot function has a fast path (the countdown stays above zero: a tail jump to the next allocator)
 * and a slow one, NAME_slow, reached by a tail call: the slow function's frame then sits right on the
 * program's caller, and it calls the marker itself, never as a tail call. At the marker's first
 * instruction the frame-pointer chain thus runs through that frame to the program's caller (the caller of
 * malloc is not skipped, as it is at a uprobe on malloc itself), and a DWARF unwind sees the same. */
#define SLOW __attribute__((noinline)) static

static inline int remember_if_live(void *ptr) {
#ifdef FLAMEGRAPH_LIVE
    return remember(ptr);
#else
    (void)ptr;
    return 1;
#endif
}

static inline void forget_if_live(void *ptr) {
#ifdef FLAMEGRAPH_LIVE
    forget(ptr);
#else
    (void)ptr;
#endif
}

/* Not sampled: the countdown, less n bytes in place, is still above zero. The whole fast path of malloc is
 * then 4 instructions (the TLS offset, a subtract to memory, a branch, a tail jump to the next malloc). Its
 * slow path is entered with n already counted down (PASSED; the functions without a fast path use
 * SAMPLED). A thread's countdown starts at zero, so its first call takes the slow path, which resolves the
 * next allocator and draws the first interval: no test of `ready` here. */
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
/* gcc and clang load, subtract and store apart (then test): one subtract to memory, its flags the test. */
static inline __attribute__((always_inline)) int count_down(int64_t n) {
    int above;
    __asm__("subq %[n], %[until]" : [until] "+m"(until), "=@ccg"(above) : [n] "er"(n));
    return above;
}
#define FAST(n) count_down((int64_t)(n))
#else
#define FAST(n) ((until -= (int64_t)(n)) > 0)
#endif

#define SAMPLED(ptr, n, api) SAMPLE_IF(crossed(n), ptr, n, api)
#define PASSED(ptr, n, api) SAMPLE_IF(passed(n), ptr, n, api)
#define SAMPLE_IF(chosen, ptr, n, api)                                                                      \
    do {                                                                                                    \
        int64_t mean_ = (chosen);                                                                           \
        if (UNLIKELY(mean_ != 0) && (ptr) != NULL && remember_if_live(ptr)) {                               \
            size_t weight_ = weight((n), mean_);                                                            \
            flamegraph_alloc_sampled((ptr), (n), weight_, (api), (size_t)mean_);                            \
            budget(weight_);                                                                                \
        }                                                                                                   \
    } while (0)

#define START(bootstrap)                                                                                    \
    do {                                                                                                    \
        if (UNLIKELY(!ready)) {                                                                             \
            if (resolving)                                                                                  \
                return bootstrap;                                                                           \
            resolve();                                                                                      \
        }                                                                                                   \
    } while (0)

/* -- the interposed functions ----------------------------------------------------------------------- */

SLOW void *malloc_slow(size_t n) {
    START(__libc_malloc ? __libc_malloc(n) : NULL);
    void *p = next.malloc(n);
    PASSED(p, n, API_MALLOC);
    return p;
}

EXPORT void *malloc(size_t n) {
    if (FAST(n))
        return next.malloc(n);
    return malloc_slow(n);
}

SLOW void *calloc_slow(size_t count_, size_t size) {
    START(__libc_calloc ? __libc_calloc(count_, size) : NULL);
    void *p = next.calloc(count_, size);
    size_t n;
    if (!__builtin_mul_overflow(count_, size, &n)) /* counted down by calloc() */
        PASSED(p, n, API_CALLOC);
    return p;
}

EXPORT void *calloc(size_t count_, size_t size) {
    size_t n;
    if (!__builtin_mul_overflow(count_, size, &n) && FAST(n))
        return next.calloc(count_, size);
    return calloc_slow(count_, size);
}

SLOW void *realloc_slow(void *old, size_t n) {
    START(__libc_realloc ? __libc_realloc(old, n) : NULL);
    forget_if_live(old); /* before its address can be handed to another thread */
    void *p = next.realloc(old, n);
    if (n > 0) /* counted down by realloc() */
        PASSED(p, n, API_REALLOC);
    return p;
}

#ifdef FLAMEGRAPH_LIVE
#define TRACKED(p) ((p) != NULL && __atomic_load_n(bucket(p), __ATOMIC_RELAXED) != 0)
#else
#define TRACKED(p) 0
#endif

EXPORT void *realloc(void *old, size_t n) {
    if (FAST(n) && !TRACKED(old))
        return next.realloc(old, n);
    return realloc_slow(old, n);
}

EXPORT void *reallocarray(void *old, size_t count_, size_t size) {
    if (UNLIKELY(!ready))
        resolve();
    size_t n;
    if (__builtin_mul_overflow(count_, size, &n)) {
        errno = ENOMEM;
        return NULL;
    }
    forget_if_live(old);
    /* The next realloc, not the next reallocarray: glibc's calls realloc through its PLT, i.e. ours, which
     * would count the same bytes a second time (and sample them as realloc's). */
    void *p = next.realloc(old, n);
    if (n > 0)
        SAMPLED(p, n, API_REALLOCARRAY);
    return p;
}

EXPORT int posix_memalign(void **out, size_t align, size_t n) {
    if (UNLIKELY(!ready))
        resolve();
    int failed = next.posix_memalign(out, align, n);
    if (failed == 0)
        SAMPLED(*out, n, API_POSIX_MEMALIGN);
    return failed;
}

EXPORT void *aligned_alloc(size_t align, size_t n) {
    if (UNLIKELY(!ready))
        resolve();
    void *p = next.aligned_alloc(align, n);
    SAMPLED(p, n, API_ALIGNED_ALLOC);
    return p;
}

EXPORT void *memalign(size_t align, size_t n) {
    START(__libc_memalign ? __libc_memalign(align, n) : NULL);
    void *p = next.memalign(align, n);
    SAMPLED(p, n, API_MEMALIGN);
    return p;
}

EXPORT void *valloc(size_t n) {
    if (UNLIKELY(!ready))
        resolve();
    void *p = next.valloc(n);
    SAMPLED(p, n, API_VALLOC);
    return p;
}

EXPORT void *pvalloc(size_t n) {
    if (UNLIKELY(!ready))
        resolve();
    void *p = next.pvalloc(n);
    SAMPLED(p, n, API_PVALLOC);
    return p;
}

/* Anonymous maps only (a file's map is not an allocation); the C library's own (malloc's arenas and big
 * chunks, thread stacks) call the kernel directly and are not seen here: they are the calls above. */
EXPORT void *mmap(void *addr, size_t n, int prot, int flags, int fd, off_t offset) {
    START((void *)syscall(SYS_mmap, addr, n, prot, flags, fd, offset));
    void *p = next.mmap(addr, n, prot, flags, fd, offset);
    if ((flags & MAP_ANONYMOUS) && p != MAP_FAILED)
        SAMPLED(p, n, API_MMAP);
    return p;
}
EXPORT void *mmap64(void *addr, size_t n, int prot, int flags, int fd, off_t offset)
    __attribute__((alias("mmap")));

/* next.free until the next allocator is resolved (a free can come before any allocation reached us): so
 * free() needs no test of `ready`. */
static void free_first(void *ptr) {
    if (resolving) {
        if (__libc_free)
            __libc_free(ptr);
        return;
    }
    resolve();
    next.free(ptr);
}

#ifdef FLAMEGRAPH_LIVE
/* A sampled address is tracked only once the allocator is resolved: no test of `ready` here either. */
SLOW void free_slow(void *ptr) {
    forget(ptr);
    next.free(ptr);
}

EXPORT void free(void *ptr) {
    if (!TRACKED(ptr)) {
        next.free(ptr);
        return;
    }
    free_slow(ptr);
}

/* A sampled map ends when its first page is unmapped (the whole map is counted as freed). */
EXPORT int munmap(void *addr, size_t n) {
    START((int)syscall(SYS_munmap, addr, n));
    forget(addr);
    return next.munmap(addr, n);
}
#endif

/* A child made by fork() draws its own samples (the same state would repeat the parent's choices). */
static void reseed(void) {
    rng = 0;
    started = 0;
    window_start = 0; /* its own budget: its own windows, from the mean asked for */
    window_samples = window_bytes = 0;
    mean_now = mean_bytes;
}

__attribute__((constructor)) static void sampler_start(void) {
    resolve();
    pthread_atfork(NULL, NULL, reseed);
    flamegraph_sampler_loaded((size_t)mean_bytes, LIVE, (size_t)limit);
}

/* The allocator probe: measures whatever malloc it runs with and prints raw observations,
 * one per line, to a file descriptor. It knows nothing of profcc's runtime and decides
 * nothing: allocator-probe/src/lib.rs turns the lines into a description.
 *
 * Entry: profcc_probe_run(fd). The allocator's functions are found by name in the global
 * scope (malloc, free, realloc, malloc_usable_size, mallctl), or as the environment variable
 * PROFCC_PROBE_FUNCS says: `role=name` (dlsym) or `role=@HEX` (an address in the main
 * program's file, the load bias added), comma-separated; roles malloc, free, realloc,
 * usable, mallctl.
 *
 * Lines (numbers decimal):
 *   object PATH                 the file that defines the malloc in use
 *   func ROLE HOW               how a role was resolved (name or @offset)
 *   sym NAME                    an identifying symbol defined in that file
 *   version KIND TEXT           what a version function returned (KIND: the function)
 *   style SEQ BIBOP OTHER       votes of the layout probe
 *   u REQ USABLE                usable size of a request (a walk, then sparse pairs)
 *   place SIZE N PAGEALIGNED ADJACENT MINDIFF TZ XTHREAD STAY MOVED   placement of N objects of SIZE;
 *                               XTHREAD: a freed one goes to a new thread (1/0, -1 untested);
 *                               then realloc to SIZE stayed (1/0), realloc to SIZE+1 moved (1/0)
 *   big WHERE REQ RESULT OFF_START OFF_END   a fresh process (fork) allocating REQ: was the
 *                               object mapped for itself (see big_try), and how far the fresh
 *                               mapping's ends lie from the object's
 *   slide REQ AGAIN             after freeing a fresh mapping of REQ, is REQ mapped afresh
 *   bench OP SIZE REUSE PHASE NS N   with PROFCC_PROBE_BENCH=1: mean ns of N calls (see bench)
 *   brk SIZE INHEAP             is an object of SIZE inside the [heap] (brk) region
 *   done MICROSECONDS
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

typedef void *(*malloc_fn)(size_t);
typedef void (*free_fn)(void *);
typedef void *(*realloc_fn)(void *, size_t);
typedef size_t (*usable_fn)(void *);
typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);

static struct {
    malloc_fn malloc;
    free_fn free;
    realloc_fn realloc;
    usable_fn usable;
    mallctl_fn mallctl;
} A;

static int out_fd = 1;

/* All of [p, p+n) to the output (stops at an error). */
static void put_out(const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(out_fd, p, n);
        if (w <= 0)
            return;
        p += w;
        n -= (size_t)w;
    }
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n > (int)sizeof buf - 2)
        n = sizeof buf - 2;
    buf[n++] = '\n';
    put_out(buf, (size_t)n);
}

/* ---- resolving the allocator's functions ---- */

static uintptr_t main_bias;
static int bias_cb(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    (void)data;
    main_bias = info->dlpi_addr; /* the first object is the main program */
    return 1;
}

static void *resolve(const char *role, const char *dflt) {
    const char *spec = getenv("PROFCC_PROBE_FUNCS");
    size_t rl = strlen(role);
    while (spec && *spec) {
        const char *end = strchr(spec, ',');
        size_t len = end ? (size_t)(end - spec) : strlen(spec);
        if (len > rl && strncmp(spec, role, rl) == 0 && spec[rl] == '=') {
            char name[256];
            size_t nl = len - rl - 1;
            if (nl >= sizeof name)
                nl = sizeof name - 1;
            memcpy(name, spec + rl + 1, nl);
            name[nl] = 0;
            say("func %s %s", role, name);
            if (name[0] == '@') {
                uintptr_t off = (uintptr_t)strtoull(name + 1, NULL, 16);
                dl_iterate_phdr(bias_cb, NULL);
                return (void *)(main_bias + off);
            }
            return dlsym(RTLD_DEFAULT, name);
        }
        spec = end ? end + 1 : NULL;
    }
    if (!dflt)
        return NULL;
    void *f = dlsym(RTLD_DEFAULT, dflt);
    if (f)
        say("func %s %s", role, dflt);
    return f;
}

/* ---- identification (ident.c, shared with the runtime) ---- */

size_t profcc_alloc_ident(void *malloc_fn, void *mallctl, char *buf, size_t cap);

static void identify(void) {
    char buf[2048];
    put_out(buf, profcc_alloc_ident((void *)A.malloc, (void *)A.mallctl, buf, sizeof buf));
}

/* ---- layout style ---- */

/* Three allocations x (size a), y (size b, another class), z (size a): a sequential allocator
 * lays them one after another; a BiBOP one puts x and z together and y elsewhere. Many
 * triples, kept until the end so that none reuses another's memory; a majority decides. */
#define TRIPLES 200
static void style(void) {
    static void *keep[TRIPLES * 3];
    int seq = 0, bibop = 0, other = 0;
    for (int t = 0; t < TRIPLES; t++) {
        size_t a = 16 + (size_t)(t * 37) % 200, b = 700 + (size_t)(t * 113) % 1300;
        char *x = A.malloc(a), *y = A.malloc(b), *z = A.malloc(a);
        keep[3 * t] = x, keep[3 * t + 1] = y, keep[3 * t + 2] = z;
        if (!x || !y || !z) {
            other++;
            continue;
        }
        size_t ux = A.usable ? A.usable(x) : a, uy = A.usable ? A.usable(y) : b;
        int chained = y > x && (size_t)(y - x) <= ux + 64 && z > y && (size_t)(z - y) <= uy + 64;
        intptr_t dz = z > x ? z - x : x - z;
        intptr_t dy = y > x ? y - x : x - y;
        int together = (size_t)dz <= 4 * ux + 64 && (size_t)dy > 4 * ux + 64 && !(y > x && y < z) && !(y < x && y > z);
        if (chained)
            seq++;
        else if (together)
            bibop++;
        else
            other++;
    }
    for (int i = 0; i < TRIPLES * 3; i++)
        A.free(keep[i]);
    say("style %d %d %d", seq, bibop, other);
}

/* ---- usable sizes ---- */

static size_t usable_of(size_t req) {
    void *p = A.malloc(req);
    if (!p)
        return 0;
    size_t u = A.usable(p);
    A.free(p);
    return u;
}

#define WALK_END (1u << 20)
#define SPARSE_END (64u << 20)
#define MAX_CLASSES 4096
static size_t classes[MAX_CLASSES];
static int nclasses;

/* Every class up to WALK_END (the next request is one past the last usable size); after 24
 * equal steps under 4 KiB in a row (class tables have fewer), a jump of a 32nd of the size (at
 * least 15 steps) before walking on. Then pairs (request, next class) up to SPARSE_END. */
static void walk(void) {
    size_t req = 1, last_step = 0;
    int same = 0;
    long steps = 0;
    while (req <= WALK_END && steps < 200000) {
        size_t u = usable_of(req);
        say("u %zu %zu", req, u);
        if (u < req)
            return;
        if (nclasses < MAX_CLASSES)
            classes[nclasses++] = u;
        size_t next = u + 1;
        size_t step = next - req;
        same = step == last_step ? same + 1 : 0;
        last_step = step;
        if (same >= 24 && step < 4096) {
            /* a long constant step: skip ahead (a 32nd further), then walk on */
            next = u + 1 + (15 * step > u / 32 ? 15 * step : u / 32);
        }
        req = next;
        steps++;
    }
    for (size_t r = WALK_END; r <= SPARSE_END; r += r / 8) {
        size_t u = usable_of(r);
        say("u %zu %zu", r, u);
        say("u %zu %zu", u + 1, usable_of(u + 1));
    }
}

/* ---- placement ---- */

static int cmp_ptr(const void *a, const void *b) {
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

struct xarg {
    size_t size;
    void *got;
};
static void *x_alloc(void *arg) {
    struct xarg *x = arg;
    x->got = A.malloc(x->size);
    A.free(x->got);
    return NULL;
}

/* An object the main thread frees: does a new thread's request of the same size get it
 * (a heap the threads share: a page heap), or not (a per-thread cache or heap)? */
static int xthread(size_t size) {
    void *p = A.malloc(size);
    A.free(p);
    struct xarg x = {size, NULL};
    pthread_t t;
    if (pthread_create(&t, NULL, x_alloc, &x) != 0)
        return -1;
    pthread_join(t, NULL);
    return x.got == p;
}

static void place(size_t size) {
    enum { N = 12 };
    uintptr_t p[N];
    int n = size <= (64u << 10) ? N : size <= (1u << 20) ? 6 : 3;
    for (int i = 0; i < n; i++)
        p[i] = (uintptr_t)A.malloc(size);
    int aligned = 0, adjacent = 0, tz = 63;
    uintptr_t mindiff = UINTPTR_MAX;
    qsort(p, n, sizeof p[0], cmp_ptr);
    for (int i = 0; i < n; i++) {
        if (p[i] % 4096 == 0)
            aligned++;
        if (p[i] && __builtin_ctzl(p[i]) < tz)
            tz = __builtin_ctzl(p[i]);
        if (i > 0) {
            uintptr_t d = p[i] - p[i - 1];
            if (d == size)
                adjacent++;
            if (d < mindiff)
                mindiff = d;
        }
    }
    for (int i = 0; i < n; i++)
        A.free((void *)p[i]);
    /* realloc as a cross-check: to the same usable size it stays; one byte more moves out of
     * a size class (a sequential heap may grow in place). */
    int stay = -1, moved = -1;
    if (A.realloc) {
        char *a = A.malloc(size), *b = a ? A.realloc(a, size) : NULL;
        stay = a && b == a;
        char *c = b ? A.realloc(b, size + 1) : NULL;
        moved = b && c && c != b;
        A.free(c ? c : b);
    }
    say("place %zu %d %d %d %lu %d %d %d %d", size, n, aligned, adjacent, (unsigned long)mindiff,
        tz, size >= 4096 ? xthread(size) : -1, stay, moved);
}

static void placements(void) {
    size_t kept = 0;
    for (int i = 0; i < nclasses; i++) {
        size_t c = classes[i];
        if (c == kept)
            continue;
        /* every class while there are few; geometric points when the walk was fine-grained */
        if (nclasses > 400 && kept && c < kept + kept / 16)
            continue;
        place(c);
        kept = c;
    }
}

/* ---- the big threshold, in fresh processes ---- */

struct range {
    uintptr_t lo, hi;
};
#define MAX_RANGES 4096

static int read_maps(struct range *r, int max, struct range *heap) {
    int fd = open("/proc/self/maps", O_RDONLY);
    if (fd < 0)
        return 0;
    static char buf[1 << 16];
    char line[512];
    int ll = 0, n = 0;
    ssize_t got;
    if (heap)
        heap->lo = heap->hi = 0;
    while ((got = read(fd, buf, sizeof buf)) > 0) {
        for (ssize_t i = 0; i < got; i++) {
            if (buf[i] != '\n') {
                if (ll < (int)sizeof line - 1)
                    line[ll++] = buf[i];
                continue;
            }
            line[ll] = 0;
            ll = 0;
            char *e;
            uintptr_t lo = strtoull(line, &e, 16);
            uintptr_t hi = strtoull(e + 1, NULL, 16);
            if (n < max)
                r[n].lo = lo, r[n].hi = hi, n++;
            if (heap && strstr(line, "[heap]"))
                heap->lo = lo, heap->hi = hi;
        }
    }
    close(fd);
    return n;
}

/* Was [p, p+size) mapped anew: the mapping holding p now, less what was mapped before, is a
 * run of fresh bytes holding the object? Its distance to the object's ends goes to off_*. */
static int fresh(struct range *before, int nb, uintptr_t p, size_t size, uintptr_t *off_start,
                 uintptr_t *off_end) {
    static struct range after[MAX_RANGES];
    int na = read_maps(after, MAX_RANGES, NULL);
    for (int i = 0; i < na; i++) {
        if (p < after[i].lo || p >= after[i].hi)
            continue;
        /* the fresh part around p: cut away every old mapping */
        uintptr_t lo = after[i].lo, hi = after[i].hi;
        for (int j = 0; j < nb; j++) {
            if (before[j].hi <= lo || before[j].lo >= hi)
                continue;
            if (before[j].lo <= p && p < before[j].hi)
                return 0; /* p was mapped before */
            if (before[j].hi <= p && before[j].hi > lo)
                lo = before[j].hi;
            if (before[j].lo > p && before[j].lo < hi)
                hi = before[j].lo;
        }
        if (p + size > hi)
            return 0;
        *off_start = p - lo;
        *off_end = hi - (p + size);
        return 1;
    }
    return 0;
}

struct bigarg {
    size_t size;
    int thread;
    int result;
    uintptr_t off_start, off_end;
};

/* Was the object mapped for itself: a fresh mapping around it, at most 1 MiB before it and
 * 64 KiB + 1/8 of its size after it, that freeing the object unmaps? Up to 3 objects of the
 * size (a top chunk or a cache may hold one or two). result: 0 no fresh mapping, 1 mapped
 * for itself, 2 fresh and tight but still mapped after free, 3 fresh but not tight (a region
 * the allocator carves). */
static void *big_try(void *arg) {
    struct bigarg *b = arg;
    static struct range before[MAX_RANGES];
    b->result = 0;
    if (b->thread) /* the thread's own heap or arena exists before the measurement */
        A.free(A.malloc(64));
    for (int k = 0; k < 3; k++) {
        int nb = read_maps(before, MAX_RANGES, NULL);
        void *p = A.malloc(b->size);
        if (!p)
            return NULL;
        uintptr_t s = 0, e = 0;
        if (!fresh(before, nb, (uintptr_t)p, b->size, &s, &e))
            continue;
        b->off_start = s, b->off_end = e;
        if (s > (1u << 20) || e > (64u << 10) + b->size / 8) {
            b->result = 3;
            continue;
        }
        A.free(p);
        nb = read_maps(before, MAX_RANGES, NULL);
        int still = 0;
        for (int i = 0; i < nb; i++)
            if ((uintptr_t)p >= before[i].lo && (uintptr_t)p < before[i].hi)
                still = 1;
        b->result = still ? 2 : 1;
        return NULL;
    }
    return NULL;
}

/* In a forked child (a fresh process as far as the allocator goes: nothing freed since the
 * probe started), in its main thread or a new thread. */
static int big_in_child(size_t size, int thread, uintptr_t *off_start, uintptr_t *off_end) {
    int pfd[2];
    if (pipe(pfd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        close(pfd[0]);
        struct bigarg b = {size, thread, 0, 0, 0};
        if (thread) {
            pthread_t t;
            if (pthread_create(&t, NULL, big_try, &b) == 0)
                pthread_join(t, NULL);
        } else {
            big_try(&b);
        }
        uintptr_t msg[3] = {(uintptr_t)b.result, b.off_start, b.off_end};
        (void)!write(pfd[1], msg, sizeof msg);
        _exit(0);
    }
    close(pfd[1]);
    uintptr_t msg[3] = {0, 0, 0};
    ssize_t got = read(pfd[0], msg, sizeof msg);
    close(pfd[0]);
    waitpid(pid, NULL, 0);
    if (got != sizeof msg)
        return -1;
    *off_start = msg[1];
    *off_end = msg[2];
    return (int)msg[0];
}

static int big_at(size_t size, int thread) {
    uintptr_t s = 0, e = 0;
    int r = big_in_child(size, thread, &s, &e);
    say("big %s %zu %d %lu %lu", thread ? "thread" : "main", size, r, (unsigned long)s,
        (unsigned long)e);
    return r;
}

/* The smallest request mapped afresh: doubling from 16 KiB to 64 MiB, then bisection. */
static void big_search(int thread) {
    size_t lo = 0, hi = 0;
    for (size_t s = 16u << 10; s <= SPARSE_END; s *= 2) {
        if (big_at(s, thread) == 1) {
            hi = s;
            break;
        }
        lo = s;
    }
    if (!hi)
        return;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (big_at(mid, thread) == 1)
            hi = mid;
        else
            lo = mid;
    }
}

/* After a fresh mapping of REQ is freed, is the next REQ mapped afresh again (1), or does
 * the allocator now keep such sizes (0: a threshold that slides up)? -1: REQ was not mapped
 * for itself to begin with. */
static int slide_at(size_t size) {
    int pfd[2];
    if (pipe(pfd) != 0)
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(pfd[0]);
        static struct range before[MAX_RANGES];
        uintptr_t s, e;
        int nb = read_maps(before, MAX_RANGES, NULL);
        void *p = A.malloc(size);
        int first = p && fresh(before, nb, (uintptr_t)p, size, &s, &e) && s <= (1u << 20) &&
                    e <= (64u << 10) + size / 8;
        int again = -1;
        if (first) {
            A.free(p);
            nb = read_maps(before, MAX_RANGES, NULL);
            p = A.malloc(size);
            again = p && fresh(before, nb, (uintptr_t)p, size, &s, &e);
        }
        (void)!write(pfd[1], &again, sizeof again);
        _exit(0);
    }
    close(pfd[1]);
    int again = -1;
    if (read(pfd[0], &again, sizeof again) != sizeof again)
        again = -1;
    close(pfd[0]);
    waitpid(pid, NULL, 0);
    if (again >= 0)
        say("slide %zu %d", size, again);
    return again;
}

/* Sizes from 1 MiB to 96 MiB; between the last that slid and the first that did not, a
 * bisection to 4 KiB. */
static void slides(void) {
    size_t slid = 0, kept = 0;
    for (size_t s = 1u << 20; s <= SPARSE_END; s *= 2) {
        size_t sizes[2] = {s, s + s / 2};
        for (int i = 0; i < 2; i++) {
            int r = slide_at(sizes[i]);
            if (r == 0)
                slid = sizes[i];
            else if (r == 1 && !kept && slid)
                kept = sizes[i];
        }
    }
    while (slid && kept > slid + 4096) {
        size_t mid = slid + (kept - slid) / 2;
        int r = slide_at(mid);
        if (r == 0)
            slid = mid;
        else if (r == 1)
            kept = mid;
        else
            break;
    }
}

static void brk_region(void) {
    static struct range r[MAX_RANGES];
    size_t sizes[] = {64, 4096, 65536};
    void *p[3];
    for (int i = 0; i < 3; i++)
        p[i] = A.malloc(sizes[i]);
    struct range heap;
    read_maps(r, MAX_RANGES, &heap);
    for (int i = 0; i < 3; i++) {
        uintptr_t a = (uintptr_t)p[i];
        say("brk %zu %d", sizes[i], heap.hi && a >= heap.lo && a < heap.hi);
        A.free(p[i]);
    }
}

static int same_file(void *a, void *b) {
    Dl_info x, y;
    return dladdr(a, &x) && dladdr(b, &y) && x.dli_fbase == y.dli_fbase;
}

/* ---- bench (PROFCC_PROBE_BENCH=1): the mean cost of a call ----
 * Two measurements per request size of BENCH_SIZES, serially (one thread) and in two threads
 * at once (`parallel`, the mean of both); lines: bench OP SIZE REUSE PHASE NS N. The sizes
 * are fixed here; allocator-probe/src/lib.rs files each under small/medium/big by the
 * description.
 *
 * `new` (fresh addresses: the heap grows): N mallocs in a row, then their N frees; N keeps
 * the batch under 256 MiB of requests (the blocks are never touched); CLOCK_MONOTONIC around
 * each batch.
 *
 * `reused` (a program's steady state: churn): each thread keeps a window of live blocks
 * (CHURN_WINDOW_BYTES / SIZE of them, 4 to 1024) of requests spread over the octave around
 * SIZE, [SIZE / sqrt 2, SIZE * sqrt 2) (a mix of neighbouring size classes); each step frees a random one of them and mallocs its replacement; in the
 * parallel phase one block in CHURN_REMOTE is handed to the other thread, which frees it
 * (a remote free, as in a larson or producer/consumer program). Every block's first byte
 * is written. Warm: a window's worth of steps first, untimed. Timed as profcc's runtime
 * times a program's call (rt/src/analyses/allocator/timing.h): two TSC reads around the
 * call, the empty bracket's cost (the median of BRACKET_SAMPLES) taken off; a request
 * under TIME_ALL_FROM bytes timed one call in CHURN_TIME_ONE_IN, and left out when it took
 * INTERRUPTED_FROM_NS or more (preempted); from TIME_ALL_FROM every call, kept. Each cell is
 * measured CHURN_ROUNDS times, the rounds taken in turn over all cells, and the median of its
 * means reported (a loaded machine). A parallel round counts only when its two threads ran
 * at once (their CPU time at least PARALLEL_OVERLAP x the round's wall time): taking turns
 * on one CPU, they never pass blocks between caches and their remote frees look cheap (half
 * the cost on a machine with one busy program). Such a round is run again, up to
 * PARALLEL_TRIES times; a cell with no round that ran at once keeps the median of all.
 * The three runtime constants come from profcc-schema (allocator-probe/build.rs). */
#include <sys/mman.h>
/* Every power of two from 16 B to 1 MiB (the runtime's buckets are bounded by them), then
 * two big ones. */
static const size_t BENCH_SIZES[] = {
    16,        32,        64,        128,      256,      512,      1024,
    2048,      4096,      8192,      16384,    32768,    65536,    131072,
    262144,    524288,    1u << 20,  4u << 20, 20u << 20, 0};
#define CHURN_WINDOW_BYTES (8u << 20)
#define CHURN_WINDOW_MAX 1024
#define CHURN_WINDOW_MIN 4
#define CHURN_REMOTE 16
#define CHURN_TIME_ONE_IN 8
#define CHURN_ROUNDS 9
#define PARALLEL_OVERLAP 1.6
#define PARALLEL_TRIES 4
/* Requests per thread, cell and round: 1 GiB, 256 to 20,000 steps. */
#define CHURN_BYTES (1ull << 30)
#define CHURN_STEPS_MIN 256
#define CHURN_STEPS_MAX 20000

struct bench_job {
    size_t size;
    int n;
    double ns[2]; /* malloc new, free new */
    pthread_barrier_t *start;
};

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *bench_run(void *arg) {
    struct bench_job *j = arg;
    void **b = mmap(NULL, (size_t)j->n * sizeof *b, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED)
        return NULL;
    if (j->start)
        pthread_barrier_wait(j->start);
    double t = now_ns();
    for (int i = 0; i < j->n; i++)
        b[i] = A.malloc(j->size);
    j->ns[0] = (now_ns() - t) / j->n;
    t = now_ns();
    for (int i = 0; i < j->n; i++)
        A.free(b[i]);
    j->ns[1] = (now_ns() - t) / j->n;
    munmap(b, (size_t)j->n * sizeof *b);
    return NULL;
}

/* The churn's shared state: the TSC's empty bracket and the interruption limit (ticks), the
 * two threads' inboxes of handed-over blocks. */
static uint64_t churn_bracket, churn_interrupted;
static void *churn_inbox[2];

struct churn_job {
    size_t size;
    int me, window, steps, parallel;
    uint64_t ticks[2], calls[2]; /* malloc, free: timed ticks (bracket off) and calls */
    pthread_barrier_t *start;
    double t0, t1, cpu_ns; /* the steps: CLOCK_MONOTONIC at start and end, thread CPU time */
};

static double thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static uint64_t churn_rand(uint64_t *x) {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* A request in [size / sqrt 2, size * sqrt 2): the octave around `size` (its geometric
 * middle), uniform inside it. */
static size_t churn_size(size_t size, uint64_t *x) {
    size_t lo = size * 181 / 256, hi = size * 362 / 256;
    size_t n = lo + (size_t)(churn_rand(x) % (uint64_t)(hi - lo));
    return n ? n : 1;
}

/* Time one call (ticks, bracket off) when it is to be timed; whether it counts. */
static int churn_timed(struct churn_job *j, int which, size_t n, uint64_t t0, uint64_t t1) {
    uint64_t c = t1 - t0;
    if (n < TIME_ALL_FROM && (c > churn_interrupted || c > (uint64_t)INT64_MAX))
        return 0;
    j->ticks[which] += c > churn_bracket ? c - churn_bracket : 0;
    j->calls[which]++;
    return 1;
}

static void churn_free(struct churn_job *j, void *p, size_t n, int timed) {
    if (!timed && n < TIME_ALL_FROM) {
        A.free(p);
        return;
    }
    uint64_t t0 = __builtin_ia32_rdtsc();
    A.free(p);
    uint64_t t1 = __builtin_ia32_rdtsc();
    churn_timed(j, 1, n, t0, t1);
}

static void *churn_run(void *arg) {
    struct churn_job *j = arg;
    uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(j->me + 1) + j->size;
    size_t bytes = (size_t)j->window * (sizeof(void *) + sizeof(size_t));
    void **slot = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (slot == MAP_FAILED)
        return NULL;
    size_t *len = (size_t *)(slot + j->window);
    for (int i = 0; i < j->window; i++) {
        len[i] = churn_size(j->size, &x);
        slot[i] = A.malloc(len[i]);
        if (slot[i])
            *(volatile char *)slot[i] = 1;
    }
    if (j->start)
        pthread_barrier_wait(j->start);
    j->t0 = now_ns();
    double cpu0 = thread_cpu_ns();
    /* The other thread's blocks this one was handed, and their sizes (an inbox holds one). */
    void **inbox = &churn_inbox[j->me], **other = &churn_inbox[1 - j->me];
    for (int r = -j->window; r < j->steps; r++) {
        int timed = r >= 0 && churn_rand(&x) % CHURN_TIME_ONE_IN == 0;
        unsigned i = (unsigned)(churn_rand(&x) % (uint64_t)j->window);
        void *old = slot[i];
        if (j->parallel && r % CHURN_REMOTE == 0) {
            /* Hand it over; one the other thread has not taken yet comes back (freed here). */
            old = __atomic_exchange_n(other, old, __ATOMIC_ACQ_REL);
        }
        if (old)
            churn_free(j, old, len[i], timed && r >= 0);
        size_t n = churn_size(j->size, &x);
        void *p;
        if (timed || n >= TIME_ALL_FROM) {
            uint64_t t0 = __builtin_ia32_rdtsc();
            p = A.malloc(n);
            uint64_t t1 = __builtin_ia32_rdtsc();
            if (r >= 0)
                churn_timed(j, 0, n, t0, t1);
        } else {
            p = A.malloc(n);
        }
        if (p)
            *(volatile char *)p = 1;
        slot[i] = p;
        len[i] = n;
        if (j->parallel && r % CHURN_REMOTE == CHURN_REMOTE / 2) {
            void *in = __atomic_exchange_n(inbox, NULL, __ATOMIC_ACQ_REL);
            if (in)
                churn_free(j, in, j->size, timed && r >= 0);
        }
    }
    j->cpu_ns = thread_cpu_ns() - cpu0;
    j->t1 = now_ns();
    for (int i = 0; i < j->window; i++)
        A.free(slot[i]);
    munmap(slot, bytes);
    return NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One round of the churn of `size` (one thread, or two at once): each op's mean ticks into
 * `means` (0: no call timed), its timed calls added to `n`. Whether the round counts: a
 * parallel one whose threads did not run at once (PARALLEL_OVERLAP) does not. */
static int churn(size_t size, int parallel, double means[2], uint64_t n[2]) {
    size_t w = CHURN_WINDOW_BYTES / size;
    w = w < CHURN_WINDOW_MIN ? CHURN_WINDOW_MIN : w > CHURN_WINDOW_MAX ? CHURN_WINDOW_MAX : w;
    unsigned long long steps = CHURN_BYTES / size;
    steps = steps < CHURN_STEPS_MIN   ? CHURN_STEPS_MIN
            : steps > CHURN_STEPS_MAX ? CHURN_STEPS_MAX
                                      : steps;
    struct churn_job j[2];
    memset(j, 0, sizeof j);
    for (int k = 0; k < 2; k++) {
        j[k].size = size;
        j[k].me = k;
        j[k].window = (int)w;
        j[k].steps = (int)steps;
        j[k].parallel = parallel;
    }
    churn_inbox[0] = churn_inbox[1] = NULL;
    means[0] = means[1] = 0;
    if (parallel) {
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, 2);
        j[0].start = j[1].start = &start;
        pthread_t t;
        if (pthread_create(&t, NULL, churn_run, &j[1]) != 0) {
            pthread_barrier_destroy(&start);
            return 0;
        }
        churn_run(&j[0]);
        pthread_join(t, NULL);
        pthread_barrier_destroy(&start);
    } else {
        churn_run(&j[0]);
    }
    for (int k = 0; k < 2; k++)
        if (churn_inbox[k])
            A.free(churn_inbox[k]);
    for (int op = 0; op < 2; op++) {
        uint64_t ticks = j[0].ticks[op] + j[1].ticks[op];
        uint64_t calls = j[0].calls[op] + j[1].calls[op];
        means[op] = calls ? (double)ticks / (double)calls : 0;
        n[op] += calls;
    }
    if (!parallel)
        return 1;
    double t0 = j[0].t0 < j[1].t0 ? j[0].t0 : j[1].t0;
    double t1 = j[0].t1 > j[1].t1 ? j[0].t1 : j[1].t1;
    return j[0].cpu_ns + j[1].cpu_ns >= PARALLEL_OVERLAP * (t1 - t0);
}

static void bench(void) {
    const char *e = getenv("PROFCC_PROBE_BENCH");
    if (!e || strcmp(e, "1") != 0)
        return;
    static const char *const OP[2] = {"malloc", "free"};
    for (int k = 0; BENCH_SIZES[k]; k++) {
        size_t size = BENCH_SIZES[k];
        size_t n = (256u << 20) / size;
        n = n < 16 ? 16 : n > 20000 ? 20000 : n;
        struct bench_job one = {size, (int)n, {0}, NULL};
        bench_run(&one);
        for (int c = 0; c < 2; c++)
            say("bench %s %zu new serial %.1f %zu", OP[c], size, one.ns[c], n);
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, 2);
        struct bench_job two[2] = {{size, (int)n, {0}, &start}, {size, (int)n, {0}, &start}};
        pthread_t t;
        if (pthread_create(&t, NULL, bench_run, &two[1]) != 0) {
            pthread_barrier_destroy(&start);
            continue;
        }
        bench_run(&two[0]);
        pthread_join(t, NULL);
        pthread_barrier_destroy(&start);
        for (int c = 0; c < 2; c++)
            say("bench %s %zu new parallel %.1f %zu", OP[c], size,
                (two[0].ns[c] + two[1].ns[c]) / 2, n);
    }
    /* The churn: the TSC's rate over a 2 ms spin (for the interruption limit), the empty
     * bracket, then every cell; the rows in ns at the rate over the whole churn. */
    uint64_t b[BRACKET_SAMPLES];
    for (int i = 0; i < BRACKET_SAMPLES; i++) {
        uint64_t a = __builtin_ia32_rdtsc();
        __asm__ volatile("" ::: "memory");
        b[i] = __builtin_ia32_rdtsc() - a;
    }
    for (int i = 1; i < BRACKET_SAMPLES; i++)
        for (int k = i; k > 0 && b[k] < b[k - 1]; k--) {
            uint64_t t = b[k];
            b[k] = b[k - 1];
            b[k - 1] = t;
        }
    churn_bracket = b[BRACKET_SAMPLES / 2];
    double t0 = now_ns();
    uint64_t c0 = __builtin_ia32_rdtsc();
    while (now_ns() - t0 < 2e6)
        ;
    double ticks_per_ns = (double)(__builtin_ia32_rdtsc() - c0) / (now_ns() - t0);
    churn_interrupted = (uint64_t)((double)INTERRUPTED_FROM_NS * ticks_per_ns);
    enum { MAXS = sizeof BENCH_SIZES / sizeof BENCH_SIZES[0] };
    /* Rounds outermost: a burst of load elsewhere spoils one round of many cells, not every
     * round of one. */
    static double means[MAXS][2][2][CHURN_ROUNDS];
    static int counts[MAXS][2][CHURN_ROUNDS]; /* the round ran as its phase says */
    uint64_t calls[MAXS][2][2] = {{{0}}};
    t0 = now_ns();
    c0 = __builtin_ia32_rdtsc();
    for (int round = 0; round < CHURN_ROUNDS; round++)
        for (int k = 0; BENCH_SIZES[k]; k++)
            for (int par = 0; par < 2; par++) {
                double m[2];
                int ok = 0;
                for (int try = 0; try < PARALLEL_TRIES && !ok; try++)
                    ok = churn(BENCH_SIZES[k], par, m, calls[k][par]);
                counts[k][par][round] = ok;
                for (int c = 0; c < 2; c++)
                    means[k][par][c][round] = m[c];
            }
    double ns_per_tick = (now_ns() - t0) / (double)(__builtin_ia32_rdtsc() - c0);
    static const char *const PHASE[2] = {"serial", "parallel"};
    for (int k = 0; BENCH_SIZES[k]; k++)
        for (int par = 0; par < 2; par++)
            for (int c = 0; c < 2; c++) {
                /* The rounds that count (all of them when none does). */
                double v[CHURN_ROUNDS];
                int nv = 0;
                for (int r = 0; r < CHURN_ROUNDS; r++)
                    if (counts[k][par][r])
                        v[nv++] = means[k][par][c][r];
                if (nv == 0)
                    for (int r = 0; r < CHURN_ROUNDS; r++)
                        v[nv++] = means[k][par][c][r];
                qsort(v, (size_t)nv, sizeof(double), cmp_double);
                say("bench %s %zu reused %s %.1f %llu", OP[c], BENCH_SIZES[k], PHASE[par],
                    v[nv / 2] * ns_per_tick, (unsigned long long)calls[k][par][c]);
            }
}

static uint64_t now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int profcc_probe_run(int fd) {
    uint64_t t0 = now_us();
    out_fd = fd;
    A.malloc = (malloc_fn)resolve("malloc", "malloc");
    A.free = (free_fn)resolve("free", "free");
    A.realloc = (realloc_fn)resolve("realloc", "realloc");
    A.usable = (usable_fn)resolve("usable", "malloc_usable_size");
    A.mallctl = (mallctl_fn)resolve("mallctl", "mallctl");
    if (!A.malloc || !A.free || !A.usable) {
        say("error cannot find malloc, free and a usable-size function");
        return 1;
    }
    /* A function found by its plain name in another file (glibc's malloc_usable_size beside
     * an allocator that lacks one) would be handed foreign pointers. */
    if (!same_file((void *)A.malloc, (void *)A.free)) {
        say("error free is not in the file that defines malloc");
        return 1;
    }
    if (!same_file((void *)A.malloc, (void *)A.usable)) {
        say("error malloc_usable_size is not in the file that defines malloc");
        return 1;
    }
    if (A.realloc && !same_file((void *)A.malloc, (void *)A.realloc))
        A.realloc = NULL;
    if (A.mallctl && !same_file((void *)A.malloc, (void *)A.mallctl))
        A.mallctl = NULL;
    identify();
    /* Fresh-process measurements first: nothing mapped afresh has been freed yet. */
    big_search(0);
    big_search(1);
    slides();
    brk_region();
    style();
    walk();
    placements();
    bench();
    say("done %lu", (unsigned long)(now_us() - t0));
    return 0;
}

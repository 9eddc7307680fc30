/* A statically linked allocator with a prefixed API (jemalloc built with
 * --with-jemalloc-prefix=je_, as redis links it): its calls, profiled. Compiled inside
 * interpose.c (included there, after the malloc family), whose internals it uses.
 *
 * Such an allocator defines je_malloc & co. inside the executable and no malloc: nothing the
 * runtime defines can preempt a call the program binds to its own definition. So the link
 * redirects them: the driver (driver/src/prefixed.rs), when the link's objects call one of
 * PREFIXED_WRAPPED's names and its objects or archives define je_malloc, adds for each name NAME
 * the link defines `-Wl,--wrap=NAME` (the program's calls reach `__wrap_NAME`, below),
 * `-Wl,-u,NAME` (the allocator's member is pulled from its archive as the program's own
 * reference would have pulled it natively; `--wrap` turned that reference into one of
 * `__wrap_NAME`) and `-Wl,--defsym=__profcc_real_NAME=__real_NAME` (the allocator's own
 * function). The wrappers do what the malloc family's interposers do (tail path, full path,
 * object map, the allocator analysis's cells and timing) and call the real function.
 *
 * `__profcc_real_NAME` is a hidden weak reference: in every other link it is 0, with no
 * dynamic symbol, GOT entry or relocation (the program's layout and symbols stay as
 * before); `__real_NAME` would make `NAME` itself hidden, and so no longer exported by a
 * program linked with -rdynamic (redis). `--wrap` redirects only references between object
 * files: the allocator's calls inside its own object stay its own. */

#define PREFIXED_REAL __attribute__((weak, visibility("hidden")))
void *__profcc_real_je_malloc(size_t) PREFIXED_REAL;
void *__profcc_real_je_calloc(size_t, size_t) PREFIXED_REAL;
void *__profcc_real_je_realloc(void *, size_t) PREFIXED_REAL;
void __profcc_real_je_free(void *) PREFIXED_REAL;
int __profcc_real_je_posix_memalign(void **, size_t, size_t) PREFIXED_REAL;
void *__profcc_real_je_aligned_alloc(size_t, size_t) PREFIXED_REAL;
void *__profcc_real_je_memalign(size_t, size_t) PREFIXED_REAL;
void *__profcc_real_je_valloc(size_t) PREFIXED_REAL;
void *__profcc_real_je_mallocx(size_t, int) PREFIXED_REAL;
void *__profcc_real_je_rallocx(void *, size_t, int) PREFIXED_REAL;
void __profcc_real_je_dallocx(void *, int) PREFIXED_REAL;
void __profcc_real_je_sdallocx(void *, size_t, int) PREFIXED_REAL;
size_t __profcc_real_je_malloc_usable_size(void *) PREFIXED_REAL;
int __profcc_real_je_mallctl(const char *, void *, size_t *, void *, size_t) PREFIXED_REAL;

/* Whether the link redirected the prefixed allocator's calls here. */
static inline int prefixed_linked(void) { return __profcc_real_je_malloc != 0; }

/* Set while a wrapper files its call: the allocator analysis's usable size of the block
 * (`profcc_usable`) is then the prefixed allocator's. */
__attribute__((tls_model("initial-exec"))) static __thread uint8_t prefixed_op;

#define PREFIXED_RECORD(call, n, kind, op)                                                   \
    do {                                                                                     \
        uint32_t saved = tls.in_rt, outer = nested_call();                                   \
        tls.in_rt = 1;                                                                       \
        struct op_timer t = timing_start(outer, (op), (n));                                  \
        void *p = (call);                                                                    \
        uint64_t c = timing_end(&t);                                                         \
        if (LIKELY(!outer)) {                                                                \
            uint32_t site = LIKELY(p != 0) ? on_alloc(p, (n), (kind), FP()) : NO_SITE;       \
            prefixed_op = 1;                                                                 \
            if (counted(&t)) op_done((op), (n), p, 0, NO_SIZE, c, &t, site, granule((uint64_t)p), 0); \
            prefixed_op = 0;                                                                 \
        }                                                                                    \
        tls.in_rt = saved;                                                                   \
        if (LIKELY(!outer)) tail_arm();                                                      \
        return p;                                                                            \
    } while (0)

__attribute__((noinline)) static void *je_malloc_full(size_t n) {
    PREFIXED_RECORD(__profcc_real_je_malloc(n), n, K_MALLOC, OP_MALLOC);
}
void *__wrap_je_malloc(size_t n) {
    if (LIKELY(tail_alloc(OP_MALLOC, n, FP(), __builtin_return_address(0))))
        __attribute__((musttail)) return __profcc_real_je_malloc(n);
    __attribute__((musttail)) return je_malloc_full(n);
}

__attribute__((noinline)) static void *je_calloc_full(size_t n, size_t m) {
    PREFIXED_RECORD(__profcc_real_je_calloc(n, m), n * m, K_CALLOC, OP_CALLOC);
}
void *__wrap_je_calloc(size_t n, size_t m) {
    size_t bytes;
    if (LIKELY(!__builtin_mul_overflow(n, m, &bytes)) &&
        LIKELY(tail_alloc(OP_CALLOC, bytes, FP(), __builtin_return_address(0))))
        __attribute__((musttail)) return __profcc_real_je_calloc(n, m);
    __attribute__((musttail)) return je_calloc_full(n, m);
}

/* free, dallocx (`how` 1) and sdallocx (2) of p. */
__attribute__((noinline)) static void je_free_full(void *p, int how, size_t size, int flags) {
    uint32_t saved = tls.in_rt, outer = nested_call();
    tls.in_rt = 1;
    struct profcc_obj o;
    uint8_t *g = p ? granule((uint64_t)p) : 0;
    int had = !outer && p && take_obj(p, g, &o);
    if (had) profcc_account_free(&o);
    struct op_timer t = timing_start(outer || !p, OP_FREE, had ? o.size : 0);
    if (how == 0)
        __profcc_real_je_free(p);
    else if (how == 1)
        __profcc_real_je_dallocx(p, flags);
    else
        __profcc_real_je_sdallocx(p, size, flags);
    uint64_t c = timing_end(&t);
    prefixed_op = 1;
    if (t.on) op_done(OP_FREE, had ? o.size : 0, p, 0, NO_SIZE, c, &t, had ? o.site : NO_SITE, g, 0);
    prefixed_op = 0;
    tls.in_rt = saved;
    if (!outer && p) tail_arm();
}
__attribute__((noinline)) static void je_free_plain(void *p) { je_free_full(p, 0, 0, 0); }
void __wrap_je_free(void *p) {
    if (LIKELY(p != 0) && LIKELY(tail_free(OP_FREE, p, FP(), __builtin_return_address(0))))
        __attribute__((musttail)) return __profcc_real_je_free(p);
    __attribute__((musttail)) return je_free_plain(p);
}
__attribute__((noinline)) static void je_dallocx_full(void *p, int flags) { je_free_full(p, 1, 0, flags); }
void __wrap_je_dallocx(void *p, int flags) { __attribute__((musttail)) return je_dallocx_full(p, flags); }
__attribute__((noinline)) static void je_sdallocx_full(void *p, size_t n, int flags) { je_free_full(p, 2, n, flags); }
void __wrap_je_sdallocx(void *p, size_t n, int flags) {
    __attribute__((musttail)) return je_sdallocx_full(p, n, flags);
}

/* realloc (`rallocx`: flags >= 0) of old to n bytes; `fp`: the wrapper's frame. */
static void *je_realloc_impl(void *old, size_t n, int flags, void *fp) {
    uint32_t saved = tls.in_rt, outer = nested_call();
    tls.in_rt = 1;
    struct profcc_obj o;
    uint8_t *go = old ? granule((uint64_t)old) : 0;
    int had = !outer && old && take_obj(old, go, &o);
    struct op_timer t = timing_start(outer, OP_REALLOC, n);
    void *p = flags < 0 ? __profcc_real_je_realloc(old, n) : __profcc_real_je_rallocx(old, n, flags);
    uint64_t c = timing_end(&t);
    if (!outer) {
        uint32_t site = NO_SITE;
        if (!p && n != 0 && old) {
            if (had) profcc_put_back(&o); /* failed: the old block is still the program's */
        } else {
            if (had) profcc_account_free(&o);
            if (p) site = on_alloc(p, n, K_REALLOC, fp);
        }
        prefixed_op = 1;
        if (counted(&t))
            op_done(OP_REALLOC, n, p, old, had ? o.size : NO_SIZE, c, &t, site,
                    p == old ? go : granule((uint64_t)p), go);
        prefixed_op = 0;
    }
    tls.in_rt = saved;
    if (!outer) tail_arm();
    return p;
}
__attribute__((noinline)) static void *je_realloc_full(void *old, size_t n) {
    return je_realloc_impl(old, n, -1, FP());
}
void *__wrap_je_realloc(void *old, size_t n) {
    if (!old && LIKELY(tail_alloc(OP_REALLOC, n, FP(), __builtin_return_address(0))))
        __attribute__((musttail)) return __profcc_real_je_realloc(old, n);
    __attribute__((musttail)) return je_realloc_full(old, n);
}
__attribute__((noinline)) static void *je_rallocx_full(void *old, size_t n, int flags) {
    return je_realloc_impl(old, n, flags & 0x7fffffff, FP());
}
void *__wrap_je_rallocx(void *old, size_t n, int flags) {
    __attribute__((musttail)) return je_rallocx_full(old, n, flags);
}

/* mallocx: an aligned allocation when its flags ask for an alignment (MALLOCX_LG_ALIGN's
 * low six bits). */
__attribute__((noinline)) static void *je_mallocx_full(size_t n, int flags) {
    if (flags & 0x3f) PREFIXED_RECORD(__profcc_real_je_mallocx(n, flags), n, K_MALLOC, OP_ALIGNED);
    PREFIXED_RECORD(__profcc_real_je_mallocx(n, flags), n, K_MALLOC, OP_MALLOC);
}
void *__wrap_je_mallocx(size_t n, int flags) { __attribute__((musttail)) return je_mallocx_full(n, flags); }

__attribute__((noinline)) static int je_posix_memalign_full(void **out, size_t al, size_t n) {
    uint32_t saved = tls.in_rt, outer = nested_call();
    tls.in_rt = 1;
    struct op_timer t = timing_start(outer, OP_ALIGNED, n);
    int rc = __profcc_real_je_posix_memalign(out, al, n);
    uint64_t c = timing_end(&t);
    if (LIKELY(!outer)) {
        void *p = rc == 0 ? *out : 0;
        uint32_t site = p ? on_alloc(p, n, K_POSIX_MEMALIGN, FP()) : NO_SITE;
        prefixed_op = 1;
        if (counted(&t)) op_done(OP_ALIGNED, n, p, 0, NO_SIZE, c, &t, site, granule((uint64_t)p), 0);
        prefixed_op = 0;
    }
    tls.in_rt = saved;
    return rc;
}
int __wrap_je_posix_memalign(void **out, size_t al, size_t n) {
    __attribute__((musttail)) return je_posix_memalign_full(out, al, n);
}

__attribute__((noinline)) static void *je_aligned_alloc_full(size_t al, size_t n) {
    PREFIXED_RECORD(__profcc_real_je_aligned_alloc(al, n), n, K_ALIGNED_ALLOC, OP_ALIGNED);
}
void *__wrap_je_aligned_alloc(size_t al, size_t n) {
    __attribute__((musttail)) return je_aligned_alloc_full(al, n);
}
__attribute__((noinline)) static void *je_memalign_full(size_t al, size_t n) {
    PREFIXED_RECORD(__profcc_real_je_memalign(al, n), n, K_MEMALIGN, OP_ALIGNED);
}
void *__wrap_je_memalign(size_t al, size_t n) { __attribute__((musttail)) return je_memalign_full(al, n); }
__attribute__((noinline)) static void *je_valloc_full(size_t n) {
    PREFIXED_RECORD(__profcc_real_je_valloc(n), n, K_VALLOC, OP_ALIGNED);
}
void *__wrap_je_valloc(size_t n) { __attribute__((musttail)) return je_valloc_full(n); }

/* Not operations: forwarded (the runtime calls the real ones itself). mallctl with the
 * guard set: what jemalloc does inside (its set-up when the program's first call is a
 * mallctl: its mmaps) is the allocator's, not the program's. */
size_t __wrap_je_malloc_usable_size(void *p) {
    __attribute__((musttail)) return __profcc_real_je_malloc_usable_size(p);
}
int __wrap_je_mallctl(const char *name, void *old, size_t *oldlen, void *new_, size_t newlen) {
    uint32_t saved = tls.in_rt;
    tls.in_rt = 1;
    int rc = __profcc_real_je_mallctl(name, old, oldlen, new_, newlen);
    tls.in_rt = saved;
    return rc;
}

/* The usable size of a block the prefixed allocator handed out, while a wrapper files it. */
static inline int prefixed_usable(void *p, size_t *u) {
    if (LIKELY(!prefixed_op)) return 0;
    *u = __profcc_real_je_malloc_usable_size ? __profcc_real_je_malloc_usable_size(p) : 0;
    return 1;
}

/* The profile's `allocator` lines when the link wrapped the prefixed allocator: the program
 * really uses it (its plain malloc calls, libc's own, still reach glibc's and are profiled
 * too). Its object is the executable, its version jemalloc's mallctl("version"); its
 * identifying symbol is named here, since it is in the executable's symbol table only (dlsym
 * finds it only in a -rdynamic link). */
size_t profcc_alloc_ident(void *malloc_fn, void *mallctl, char *buf, size_t cap);
static size_t prefixed_lines(char *buf, size_t cap) {
    uint32_t saved = tls.in_rt;
    tls.in_rt = 1; /* what the identification allocates is not the program's */
    size_t n = profcc_alloc_ident((void *)__profcc_real_je_malloc, (void *)__profcc_real_je_mallctl, buf, cap);
    tls.in_rt = saved;
    static const char sym[] = "sym je_mallctl\n";
    int has = 0; /* a line `sym je_mallctl` (no strstr: the runtime imports no more of libc) */
    for (size_t i = 0; i + sizeof sym - 1 <= n && !has; i++) {
        size_t k = 0;
        while (k < sizeof sym - 1 && buf[i + k] == sym[k]) k++;
        has = k == sizeof sym - 1 && (i == 0 || buf[i - 1] == '\n');
    }
    if (!has && n + sizeof sym < cap) {
        __builtin_memcpy(buf + n, sym, sizeof sym); /* with its NUL */
        n += sizeof sym - 1;
    }
    return n;
}

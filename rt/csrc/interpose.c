/* Interposers of the runtime: the malloc family, operator new/delete, mmap/munmap/mremap and
 * pthread_create, plus the frame-pointer walker.
 *
 * Why C: every entry point takes `__builtin_frame_address(0)` of its own frame (this file is
 * built with -fno-omit-frame-pointer), so the first recorded frame is exactly the return address
 * into the caller of malloc/new, whatever rustc inlines or however it uses rbp. The bookkeeping
 * is Rust (`alloc.rs`, `threads.rs`, `stack.rs`); this file only forwards and guards.
 *
 * Invariants:
 * - The real allocator is reached through glibc's `__libc_*` entry points: no dlsym on the
 *   malloc path, so nothing can recurse. mmap/munmap/mremap use the raw syscall.
 * - `tls.in_rt` is the one re-entrancy guard: while it is set (the runtime itself runs, or a libc
 *   function the runtime called runs) every interposer forwards without recording.
 * - An object is removed from the object map *before* the real free/munmap, so another thread
 *   that gets the same address back cannot have its fresh entry deleted by us.
 * - Every interposer is a weak definition (`#pragma weak` below): a program that brings its own
 *   malloc (a statically linked mimalloc/jemalloc with override) links without duplicate
 *   symbols and keeps its allocator (unprofiled). operator new/delete call the `malloc`/`free`
 *   symbols, like libstdc++'s, so they pair with whichever allocator won the link.
 */
#define _GNU_SOURCE
#pragma GCC diagnostic ignored "-Wunused-parameter" /* operator new/delete take tags they ignore */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);
extern void *__libc_stack_end;

#pragma weak malloc
#pragma weak free
#pragma weak cfree
#pragma weak calloc
#pragma weak realloc
#pragma weak reallocarray
#pragma weak posix_memalign
#pragma weak aligned_alloc
#pragma weak memalign
#pragma weak valloc
#pragma weak pvalloc
#pragma weak malloc_usable_size
#pragma weak _Znwm
#pragma weak _Znam
#pragma weak _ZnwmRKSt9nothrow_t
#pragma weak _ZnamRKSt9nothrow_t
#pragma weak _ZnwmSt11align_val_t
#pragma weak _ZnamSt11align_val_t
#pragma weak _ZnwmSt11align_val_tRKSt9nothrow_t
#pragma weak _ZnamSt11align_val_tRKSt9nothrow_t
#pragma weak _ZdlPv
#pragma weak _ZdaPv
#pragma weak _ZdlPvm
#pragma weak _ZdaPvm
#pragma weak _ZdlPvRKSt9nothrow_t
#pragma weak _ZdaPvRKSt9nothrow_t
#pragma weak _ZdlPvSt11align_val_t
#pragma weak _ZdaPvSt11align_val_t
#pragma weak _ZdlPvmSt11align_val_t
#pragma weak _ZdaPvmSt11align_val_t
#pragma weak _ZdlPvSt11align_val_tRKSt9nothrow_t
#pragma weak _ZdaPvSt11align_val_tRKSt9nothrow_t
#pragma weak mmap
#pragma weak mmap64
#pragma weak munmap
#pragma weak mremap
#pragma weak pthread_create

/* ---- per-thread state (initial-exec TLS: no __tls_get_addr, no malloc) ---- */

struct profcc_tls {
    uint32_t tid_plus1; /* dense thread id + 1; 0 = not registered yet */
    uint32_t in_rt;     /* re-entrancy guard */
    uintptr_t stack_lo; /* bounds of this thread's stack, for the frame-pointer walker */
    uintptr_t stack_hi;
};
__attribute__((tls_model("initial-exec"))) static __thread struct profcc_tls tls;

struct profcc_tls *profcc_tls(void) { return &tls; }

/* ---- Rust side ---- */
enum {
    K_MALLOC = 0, K_CALLOC, K_REALLOC, K_POSIX_MEMALIGN, K_ALIGNED_ALLOC, K_MEMALIGN, K_VALLOC,
    K_PVALLOC, K_NEW, K_NEW_ARRAY, K_MMAP
};
struct profcc_obj { uint64_t addr, size; uint32_t site, tid; };
void profcc_on_alloc(void *p, size_t n, uint32_t kind, void *fp);
int profcc_take(void *p, struct profcc_obj *out);
void profcc_account_free(const struct profcc_obj *o);
void profcc_put_back(const struct profcc_obj *o);
void profcc_on_mmap(void *p, size_t n, void *fp);
void profcc_on_munmap(void *p, size_t n);
void profcc_on_mremap(void *old, size_t old_n, void *p, size_t n);
void *profcc_thread_prepare(void *(*fn)(void *), void *arg, void *fp);
void profcc_thread_started(void *rec, void *(**fn)(void *), void **arg);
void profcc_thread_exiting(void);
void profcc_thread_failed(void *rec);

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define FP() __builtin_frame_address(0)
#define RECORD(p, n, k)                                  \
    do {                                                 \
        if (LIKELY(!tls.in_rt) && LIKELY((p) != 0)) {    \
            tls.in_rt = 1;                               \
            profcc_on_alloc((p), (n), (k), FP());        \
            tls.in_rt = 0;                               \
        }                                                \
    } while (0)

/* Remove and account; forward. */
static inline void forget(void *p) {
    if (UNLIKELY(tls.in_rt) || !p) return;
    tls.in_rt = 1;
    struct profcc_obj o;
    if (profcc_take(p, &o)) profcc_account_free(&o);
    tls.in_rt = 0;
}

/* ---- malloc family ---- */

void *malloc(size_t n) {
    void *p = __libc_malloc(n);
    RECORD(p, n, K_MALLOC);
    return p;
}

void free(void *p) {
    forget(p);
    __libc_free(p);
}

void cfree(void *p) {
    forget(p);
    __libc_free(p);
}

void *calloc(size_t n, size_t m) {
    void *p = __libc_calloc(n, m);
    RECORD(p, n * m, K_CALLOC);
    return p;
}

static void *realloc_impl(void *old, size_t n, void *fp) {
    if (UNLIKELY(tls.in_rt)) return __libc_realloc(old, n);
    struct profcc_obj o;
    int had = 0;
    if (old) {
        tls.in_rt = 1;
        had = profcc_take(old, &o);
        tls.in_rt = 0;
    }
    void *p = __libc_realloc(old, n);
    tls.in_rt = 1;
    if (!p && n != 0 && old) {
        if (had) profcc_put_back(&o); /* failed: the old block is still the program's */
    } else {
        if (had) profcc_account_free(&o);
        if (p) profcc_on_alloc(p, n, K_REALLOC, fp);
    }
    tls.in_rt = 0;
    return p;
}

void *realloc(void *old, size_t n) { return realloc_impl(old, n, FP()); }

void *reallocarray(void *old, size_t n, size_t m) {
    size_t bytes;
    if (__builtin_mul_overflow(n, m, &bytes)) {
        errno = ENOMEM;
        return 0;
    }
    return realloc_impl(old, bytes, FP());
}

int posix_memalign(void **out, size_t al, size_t n) {
    if (al == 0 || (al & (al - 1)) != 0 || al % sizeof(void *) != 0) return EINVAL;
    int saved = errno;
    void *p = __libc_memalign(al, n);
    if (!p) {
        errno = saved;
        return ENOMEM;
    }
    *out = p;
    RECORD(p, n, K_POSIX_MEMALIGN);
    return 0;
}

void *aligned_alloc(size_t al, size_t n) {
    if (al == 0 || (al & (al - 1)) != 0) { /* glibc 2.36 semantics */
        errno = EINVAL;
        return 0;
    }
    void *p = __libc_memalign(al, n);
    RECORD(p, n, K_ALIGNED_ALLOC);
    return p;
}

void *memalign(size_t al, size_t n) {
    void *p = __libc_memalign(al, n);
    RECORD(p, n, K_MEMALIGN);
    return p;
}

void *valloc(size_t n) {
    void *p = __libc_valloc(n);
    RECORD(p, n, K_VALLOC);
    return p;
}

void *pvalloc(size_t n) {
    void *p = __libc_pvalloc(n);
    RECORD(p, n, K_PVALLOC);
    return p;
}

typedef size_t (*usable_fn)(void *);
static usable_fn real_usable;

size_t malloc_usable_size(void *p) {
    if (!p) return 0;
    usable_fn f = __atomic_load_n(&real_usable, __ATOMIC_ACQUIRE);
    if (UNLIKELY(!f)) {
        /* dlsym may allocate: that malloc goes to __libc_malloc, never back here. */
        uint32_t saved = tls.in_rt;
        tls.in_rt = 1;
        f = (usable_fn)dlsym(RTLD_NEXT, "malloc_usable_size");
        tls.in_rt = saved;
        if (!f) { /* glibc chunk header: size with flag bits, minus the header word */
            size_t h = ((size_t *)p)[-1];
            return (h & 2) ? (h & ~(size_t)7) - 2 * sizeof(size_t) : (h & ~(size_t)7) - sizeof(size_t);
        }
        __atomic_store_n(&real_usable, f, __ATOMIC_RELEASE);
    }
    return f(p);
}

/* ---- operator new / delete ---- */

typedef void (*new_handler_fn)(void);
extern new_handler_fn _ZSt15get_new_handlerv(void) __attribute__((weak));
extern void _ZSt17__throw_bad_allocv(void) __attribute__((weak, noreturn));

/* Through the malloc symbol (ours, forwarding without recording while the guard is set, or the
 * program's own). The new_handler loop of [new.delete.single]; nothrow variants return null. */
static inline void *raw_alloc(size_t n, size_t al) {
    uint32_t saved = tls.in_rt;
    tls.in_rt = 1;
    void *p;
    if (al) {
        if (al < sizeof(void *)) al = sizeof(void *);
        if (posix_memalign(&p, al, n) != 0) p = 0;
    } else {
        p = malloc(n);
    }
    tls.in_rt = saved;
    return p;
}

__attribute__((noinline)) static void *new_slow(size_t n, size_t al, int nothrow) {
    for (;;) {
        void *p = raw_alloc(n, al);
        if (p) return p;
        new_handler_fn h = _ZSt15get_new_handlerv ? _ZSt15get_new_handlerv() : 0;
        if (!h) {
            if (nothrow) return 0;
            if (_ZSt17__throw_bad_allocv) _ZSt17__throw_bad_allocv();
            abort();
        }
        h();
    }
}

static inline void *new_impl(size_t n, size_t al, int nothrow) {
    void *p = raw_alloc(n, al);
    if (UNLIKELY(!p)) p = new_slow(n, al, nothrow);
    return p;
}

#define NEW(name, params, n, al, nothrow, kind)     \
    void *name params {                             \
        void *p = new_impl((n), (al), (nothrow));   \
        RECORD(p, (n), (kind));                     \
        return p;                                   \
    }

typedef struct { char c; } nothrow_t; /* std::nothrow_t const& : only its address is passed */

NEW(_Znwm, (size_t n), n, 0, 0, K_NEW)
NEW(_Znam, (size_t n), n, 0, 0, K_NEW_ARRAY)
NEW(_ZnwmRKSt9nothrow_t, (size_t n, const nothrow_t *t), n, 0, 1, K_NEW)
NEW(_ZnamRKSt9nothrow_t, (size_t n, const nothrow_t *t), n, 0, 1, K_NEW_ARRAY)
NEW(_ZnwmSt11align_val_t, (size_t n, size_t al), n, al, 0, K_NEW)
NEW(_ZnamSt11align_val_t, (size_t n, size_t al), n, al, 0, K_NEW_ARRAY)
NEW(_ZnwmSt11align_val_tRKSt9nothrow_t, (size_t n, size_t al, const nothrow_t *t), n, al, 1, K_NEW)
NEW(_ZnamSt11align_val_tRKSt9nothrow_t, (size_t n, size_t al, const nothrow_t *t), n, al, 1, K_NEW_ARRAY)

static inline void raw_free(void *p) {
    uint32_t saved = tls.in_rt;
    tls.in_rt = 1;
    free(p);
    tls.in_rt = saved;
}

#define DELETE(name, params)     \
    void name params {           \
        forget(p);               \
        raw_free(p);             \
    }

DELETE(_ZdlPv, (void *p))
DELETE(_ZdaPv, (void *p))
DELETE(_ZdlPvm, (void *p, size_t n))
DELETE(_ZdaPvm, (void *p, size_t n))
DELETE(_ZdlPvRKSt9nothrow_t, (void *p, const nothrow_t *t))
DELETE(_ZdaPvRKSt9nothrow_t, (void *p, const nothrow_t *t))
DELETE(_ZdlPvSt11align_val_t, (void *p, size_t al))
DELETE(_ZdaPvSt11align_val_t, (void *p, size_t al))
DELETE(_ZdlPvmSt11align_val_t, (void *p, size_t n, size_t al))
DELETE(_ZdaPvmSt11align_val_t, (void *p, size_t n, size_t al))
DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t, (void *p, size_t al, const nothrow_t *t))
DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t, (void *p, size_t al, const nothrow_t *t))

/* ---- mmap family: raw syscalls, never a lazy dlsym ---- */

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
    long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off); /* sets errno, returns -1 */
    void *p = (void *)r;
    if (p != MAP_FAILED && LIKELY(!tls.in_rt)) {
        tls.in_rt = 1;
        profcc_on_mmap(p, len, FP());
        tls.in_rt = 0;
    }
    return p;
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) __attribute__((alias("mmap")));

int munmap(void *addr, size_t len) {
    if (LIKELY(!tls.in_rt)) {
        tls.in_rt = 1;
        profcc_on_munmap(addr, len);
        tls.in_rt = 0;
    }
    return (int)syscall(SYS_munmap, addr, len);
}

void *mremap(void *old, size_t old_len, size_t len, int flags, ...) {
    void *want = 0;
    if (flags & MREMAP_FIXED) {
        va_list ap;
        va_start(ap, flags);
        want = va_arg(ap, void *);
        va_end(ap);
    }
    long r = syscall(SYS_mremap, old, old_len, len, flags, want);
    void *p = (void *)r;
    if (p != MAP_FAILED && LIKELY(!tls.in_rt)) {
        tls.in_rt = 1;
        profcc_on_mremap(old, old_len, p, len);
        tls.in_rt = 0;
    }
    return p;
}

/* ---- threads ---- */

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static create_fn real_create;

/* The real pthread_create, resolved once. dlvsym/dlsym may allocate; those mallocs are forwarded
 * (guard set) and never reach pthread_create, so resolution cannot recurse. */
static create_fn resolve_create(void) {
    create_fn f = __atomic_load_n(&real_create, __ATOMIC_ACQUIRE);
    if (LIKELY(f != 0)) return f;
    uint32_t saved = tls.in_rt;
    tls.in_rt = 1;
    f = (create_fn)dlvsym(RTLD_NEXT, "pthread_create", "GLIBC_2.34");
    if (!f) f = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
    tls.in_rt = saved;
    if (f) __atomic_store_n(&real_create, f, __ATOMIC_RELEASE);
    return f;
}

static void *user_trampoline(void *rec) {
    void *(*fn)(void *);
    void *arg;
    tls.in_rt = 1;
    profcc_thread_started(rec, &fn, &arg);
    tls.in_rt = 0;
    void *ret = fn(arg);
    profcc_thread_exiting();
    return ret;
}

int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg) {
    create_fn real = resolve_create();
    if (UNLIKELY(!real)) return EAGAIN;
    if (UNLIKELY(tls.in_rt)) return real(t, attr, fn, arg);
    tls.in_rt = 1;
    void *rec = profcc_thread_prepare(fn, arg, FP());
    /* glibc's own allocations for the thread (TLS blocks) are not the program's: guard stays on. */
    int rc = rec ? real(t, attr, user_trampoline, rec) : real(t, attr, fn, arg);
    if (rc != 0 && rec) profcc_thread_failed(rec);
    tls.in_rt = 0;
    return rc;
}

struct internal_start { void *(*fn)(void *); void *arg; };

static void *internal_trampoline(void *p) {
    struct internal_start s = *(struct internal_start *)p;
    __libc_free(p);
    tls.in_rt = 1;                  /* a runtime thread never records anything */
    tls.tid_plus1 = 0xffffffffu;    /* threads::INTERNAL + 1 (wraps to the INTERNAL marker) */
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, 0); /* process signals go to the program's threads */
    return s.fn(s.arg);
}

/* Start a detached, unregistered runtime thread with the real pthread_create. 0 on success. */
int profcc_spawn_internal(void *(*fn)(void *), void *arg) {
    create_fn real = resolve_create();
    if (!real) return -1;
    struct internal_start *s = __libc_malloc(sizeof *s);
    if (!s) return -1;
    s->fn = fn;
    s->arg = arg;
    uint32_t saved = tls.in_rt;
    tls.in_rt = 1;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 256 * 1024);
    pthread_t t;
    int rc = real(&t, &a, internal_trampoline, s);
    pthread_attr_destroy(&a);
    tls.in_rt = saved;
    if (rc != 0) __libc_free(s);
    return rc;
}

/* Bounds of the calling thread's stack. `is_main`: use __libc_stack_end (no /proc read). */
void profcc_stack_bounds_self(int is_main, uintptr_t *lo, uintptr_t *hi) {
    *lo = *hi = 0;
    if (is_main) {
        uintptr_t top = ((uintptr_t)__libc_stack_end + 4095) & ~(uintptr_t)4095;
        struct rlimit rl;
        uintptr_t size = 8u << 20;
        if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) size = rl.rlim_cur;
        if (size > (1ul << 30) || rl.rlim_cur == RLIM_INFINITY) size = 1ul << 30;
        *hi = top;
        *lo = top > size ? top - size : 0;
        return;
    }
    pthread_attr_t a;
    if (pthread_getattr_np(pthread_self(), &a) != 0) return;
    void *addr = 0;
    size_t size = 0;
    if (pthread_attr_getstack(&a, &addr, &size) == 0) {
        *lo = (uintptr_t)addr;
        *hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&a);
}

/* ---- frame-pointer walker ---- */

/* Walk the frame-pointer chain starting at `fp`, a frame of one of this file's interposers (so
 * its return address is read without checks). Every further frame pointer must be 8-aligned,
 * strictly above the previous one and below the thread's stack top, and the walk must start on
 * the thread's own stack (not a sigaltstack or coroutine stack): garbage frame pointers from
 * code built without them end the walk, never fault. Returns the number of return addresses. */
__attribute__((noinline)) unsigned profcc_walk(void *start_fp, uint64_t *out, unsigned max) {
    if (max == 0 || !start_fp) return 0;
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    uintptr_t fp = (uintptr_t)start_fp;
    unsigned n = 0;
    out[n++] = ((uintptr_t *)fp)[1];
    uintptr_t lo = tls.stack_lo, hi = tls.stack_hi;
    if (hi == 0 || here < lo || here >= hi || fp < here || fp + 16 > hi) return n;
    uintptr_t prev = fp;
    fp = ((uintptr_t *)fp)[0];
    while (n < max) {
        if (fp <= prev || (fp & 7) != 0 || fp + 16 > hi) break;
        uintptr_t ret = ((uintptr_t *)fp)[1];
        if (ret < 4096 || ret >= (1ul << 47)) break; /* not a user-space code address */
        out[n++] = ret;
        prev = fp;
        fp = ((uintptr_t *)fp)[0];
    }
    return n;
}

/* Walk from the caller of this function (for `stack::capture` from Rust code that has no frame
 * pointers of its own: the walk then starts at the nearest C/C++ frame that has one). */
__attribute__((noinline)) unsigned profcc_walk_here(uint64_t *out, unsigned max) {
    return profcc_walk(__builtin_frame_address(0), out, max);
}

/* ---- initialisation before main, even when no instrumented module and no interposed call
 * triggers it (a program with its own malloc). Priority 101: before every default-priority
 * static constructor, so the exit dump's atexit still runs after their destructors. ---- */
void profcc_ctor_init(void);
__attribute__((constructor(101))) static void profcc_ctor(void) {
    uint32_t saved = tls.in_rt;
    tls.in_rt = 1;
    profcc_ctor_init();
    tls.in_rt = saved;
}

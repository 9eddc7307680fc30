/* Which allocator a malloc function belongs to, as lines of the probe's output format
 * (probe.c's header): `object PATH`, then `sym NAME` for each identifying symbol defined in
 * the same file, then `version KIND TEXT` for each version function there that answered.
 * Shared by the probe and the runtime (rt/build.rs compiles this file too: the runtime records
 * the lines in the profile, the report names the allocator with allocator-probe/src/lib.rs).
 * Calls dladdr, dlsym(RTLD_DEFAULT) and the allocator's own version functions
 * (mallctl("version"), mi_version, tc_version, gnu_get_libc_version): not async-signal-safe.
 * No dlopen: the runtime must not reference it (glibc warns about it in every static link).
 * So a symbol counts only if its global definition (RTLD_DEFAULT's) is in malloc's file: an
 * allocator loaded RTLD_LOCAL, or whose symbols an earlier object also defines, is not named
 * by them. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef int (*ident_mallctl_fn)(const char *, void *, size_t *, void *, size_t);

struct ident_out {
    char *buf;
    size_t cap, len;
};

static void put(struct ident_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct ident_out *o, const char *fmt, ...) {
    if (o->len + 1 >= o->cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->len, o->cap - o->len - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t room = o->cap - o->len - 1;
    o->len += (size_t)n < room ? (size_t)n : room - 1;
    o->buf[o->len++] = '\n';
    o->buf[o->len] = 0;
}

static const char *const IDENT[] = {
    "mallctl",         "je_mallctl",     "mi_version",          "tc_version",
    "MallocExtension_GetNumericProperty", "scalable_malloc", "scalable_msize",
    "TBB_runtime_version", "__TBB_malloc_proxy", "gnu_get_libc_version", NULL};

/* The global definition of `name` if it is in the file whose base is `base`. */
static void *same_file(const char *name, void *base) {
    Dl_info si;
    void *s = dlsym(RTLD_DEFAULT, name);
    return s && dladdr(s, &si) && si.dli_fbase == base ? s : NULL;
}

/* Lines for `malloc_fn` into buf (NUL-terminated, cut at cap); `mallctl` when the caller
 * resolved it otherwise (a static, prefixed jemalloc found by address), else NULL. Returns the
 * length written. */
size_t profcc_alloc_ident(void *malloc_fn, void *mallctl, char *buf, size_t cap) {
    struct ident_out o = {buf, cap, 0};
    if (cap)
        buf[0] = 0;
    Dl_info mi;
    if (!malloc_fn || !dladdr(malloc_fn, &mi)) {
        put(&o, "object ?");
        return o.len;
    }
    const char *path = mi.dli_fname && mi.dli_fname[0] ? mi.dli_fname : "main";
    put(&o, "object %s", path);
    for (int i = 0; IDENT[i]; i++)
        if (same_file(IDENT[i], mi.dli_fbase))
            put(&o, "sym %s", IDENT[i]);
    if (!mallctl)
        mallctl = same_file("mallctl", mi.dli_fbase);
    if (!mallctl)
        mallctl = same_file("je_mallctl", mi.dli_fbase);
    if (mallctl) {
        const char *v = NULL;
        size_t sz = sizeof v;
        if (((ident_mallctl_fn)mallctl)("version", &v, &sz, NULL, 0) == 0 && v)
            put(&o, "version mallctl %s", v);
    }
    void *s;
    if ((s = same_file("mi_version", mi.dli_fbase)))
        put(&o, "version mi_version %d", ((int (*)(void))s)());
    if ((s = same_file("tc_version", mi.dli_fbase))) {
        int ma = 0, mn = 0;
        const char *patch = NULL;
        const char *v = ((const char *(*)(int *, int *, const char **))s)(&ma, &mn, &patch);
        if (v)
            put(&o, "version tc_version %s", v);
    }
    if ((s = same_file("gnu_get_libc_version", mi.dli_fbase)))
        put(&o, "version gnu_get_libc_version %s", ((const char *(*)(void))s)());
    return o.len;
}

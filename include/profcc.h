/* profcc.h: region-of-interest markers (docs/regions.md).
 *
 *   #include <profcc.h>
 *   PROFCC_ROI_BEGIN("stream_triad");
 *   ... the region ...
 *   PROFCC_ROI_END("stream_triad");
 *
 * Built with profcc, each thread's executions and time of every region are in the profile
 * (`profcc report` shows them). Regions nest; a name is the region (the same name at two
 * places is one region). Built with any other compiler, or run without profcc's runtime,
 * the markers do nothing: the two functions are weak references, null when nothing
 * defines them. */
#ifndef PROFCC_H
#define PROFCC_H

#ifdef __cplusplus
extern "C" {
#endif
/* nothrow: C++ calls them, not `invoke`s them, where an exception could unwind. */
__attribute__((weak, nothrow)) void __profcc_roi_begin(const char *name);
__attribute__((weak, nothrow)) void __profcc_roi_end(const char *name);
#ifdef __cplusplus
}
#endif

#define PROFCC_ROI_BEGIN(name)                                                                \
    do {                                                                                      \
        if (__profcc_roi_begin) __profcc_roi_begin(name);                                     \
    } while (0)
#define PROFCC_ROI_END(name)                                                                  \
    do {                                                                                      \
        if (__profcc_roi_end) __profcc_roi_end(name);                                         \
    } while (0)

#endif

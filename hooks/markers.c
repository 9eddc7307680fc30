/* Stand-ins for the marker APIs the regions pass recognises (passes/src/regions.rs): a program
 * that calls LIKWID's, Caliper's or PAPI's region markers without linking the library still
 * links and runs under profcc (the pass has put profcc's own markers beside each call).
 *
 * passes/build.rs compiles this file once per family (-DFAMILY_LIKWID, _CALIPER, _PAPI) into
 * one archive the driver puts last on instrumented links: when the real library is linked, the
 * linker has its definitions before it reads the archive and takes none of these. One object
 * per family, so a program linking one real library never gets another family's stand-ins
 * beside it. */
#if defined(FAMILY_LIKWID)
void likwid_markerInit(void) {}
void likwid_markerThreadInit(void) {}
void likwid_markerNextGroup(void) {}
void likwid_markerClose(void) {}
int likwid_markerRegisterRegion(const char *tag) { (void)tag; return 0; }
int likwid_markerStartRegion(const char *tag) { (void)tag; return 0; }
int likwid_markerStopRegion(const char *tag) { (void)tag; return 0; }
int likwid_markerResetRegion(const char *tag) { (void)tag; return 0; }
#elif defined(FAMILY_CALIPER)
void cali_begin_region(const char *name) { (void)name; }
void cali_end_region(const char *name) { (void)name; }
#elif defined(FAMILY_PAPI)
int PAPI_hl_region_begin(const char *region) { (void)region; return 0; }
int PAPI_hl_region_end(const char *region) { (void)region; return 0; }
int PAPI_hl_read(const char *region) { (void)region; return 0; }
int PAPI_hl_stop(void) { return 0; }
#endif

/* The preloadable probe: loaded into another program (LD_PRELOAD), its constructor measures
 * the malloc that program runs with before the program's main and ends the process. It does
 * nothing unless PROFCC_PROBE_OUT names the file to write the observations to. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int profcc_probe_run(int fd);

__attribute__((constructor)) static void profcc_probe_preloaded(void) {
    const char *out = getenv("PROFCC_PROBE_OUT");
    if (!out || !*out)
        return;
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        _exit(126);
    _exit(profcc_probe_run(fd));
}

/* The standalone probe: measures the malloc it runs with (the system's, or one
 * LD_PRELOAD names) and prints the observations on stdout. */
int profcc_probe_run(int fd);

int main(void) { return profcc_probe_run(1); }

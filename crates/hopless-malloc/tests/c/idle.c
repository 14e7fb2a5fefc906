// Memory back when idle: frees a burst of 1 GiB (small blocks and large ones) and sleeps, calling
// nothing that allocates, so the allocator must give the memory back by itself. Then the same in a
// forked child (whose allocator has no background thread until it needs one).
//
// Prints one line per process: "<who> base <KiB> peak <KiB> after <KiB at each quarter second>...".
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SMALL 2000000
#define SMALL_SIZE 256
#define LARGE 512
#define LARGE_SIZE (1 << 20)
#define SAMPLES 8

static void *small[SMALL];
static void *large[LARGE];

// Resident KiB from /proc/self/statm, read with open and read: nothing that allocates.
static long rss_kib(void) {
    char buf[128];
    int fd = open("/proc/self/statm", O_RDONLY);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    char *p = strchr(buf, ' ');
    return p ? strtol(p + 1, NULL, 10) * (sysconf(_SC_PAGESIZE) / 1024) : -1;
}

static void burst_and_idle(const char *who) {
    long samples[SAMPLES];
    long base = rss_kib();
    for (int i = 0; i < SMALL; i++) {
        small[i] = malloc(SMALL_SIZE);
        memset(small[i], 1, SMALL_SIZE);
    }
    for (int i = 0; i < LARGE; i++) {
        large[i] = malloc(LARGE_SIZE);
        memset(large[i], 1, LARGE_SIZE);
    }
    long peak = rss_kib();
    for (int i = 0; i < SMALL; i++) free(small[i]);
    for (int i = 0; i < LARGE; i++) free(large[i]);
    struct timespec quarter = {0, 250000000};
    for (int i = 0; i < SAMPLES; i++) {
        nanosleep(&quarter, NULL);
        samples[i] = rss_kib();
    }
    // Formatted into a stack buffer only now that the samples are taken.
    char out[512];
    int k = snprintf(out, sizeof out, "%s base %ld peak %ld after", who, base, peak);
    for (int i = 0; i < SAMPLES; i++) k += snprintf(out + k, sizeof out - k, " %ld", samples[i]);
    k += snprintf(out + k, sizeof out - k, "\n");
    if (write(1, out, k) != k) exit(2);
}

int main(void) {
    // The allocator set up and the program's own arrays resident before the baseline.
    free(malloc(16));
    memset(small, 0, sizeof small);
    memset(large, 0, sizeof large);
    burst_and_idle("parent");
    pid_t child = fork();
    if (child < 0) return 3;
    if (child == 0) {
        burst_and_idle("child");
        _exit(0);
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 4;
    return 0;
}

/* fifo-lifo one size at a time: the C-ABI `fifo-lifo-N` pattern (N blocks of a size allocated and
 * their first word written, then the older half freed oldest first and the newer half newest first),
 * over a range of its 16 sizes, so that each size's cost can be told apart.
 *
 *   cc -O2 -o /tmp/fifo_lifo_sizes scripts/repro/fifo_lifo_sizes.c
 *   LD_PRELOAD=target/release/libhopless.so /tmp/fifo_lifo_sizes N OPS [FIRST LAST]
 *
 * N live blocks per size, at least OPS allocations (each with its free), sizes FIRST..LAST-1 of
 * 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096 (all by default).
 * Prints ns per op: the per-size figures of docs/benchmarks.md come from it; under
 * `valgrind --tool=callgrind --trace-children=yes env LD_PRELOAD=...` for instruction counts. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
    static const size_t sizes[16] = {16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096};
    if (argc < 3) {
        fprintf(stderr, "usage: %s N OPS [FIRST LAST]\n", argv[0]);
        return 2;
    }
    size_t n = strtoul(argv[1], NULL, 10);
    long total = atol(argv[2]);
    int lo = argc > 3 ? atoi(argv[3]) : 0, hi = argc > 4 ? atoi(argv[4]) : 16;
    if (n < 2 || lo < 0 || hi > 16 || lo >= hi) {
        fprintf(stderr, "N >= 2, 0 <= FIRST < LAST <= 16\n");
        return 2;
    }
    void **live = calloc(n, sizeof(void *));
    long per = (long)n * (hi - lo), iters = (total + per - 1) / per;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long it = 0; it < iters; it++)
        for (int s = lo; s < hi; s++) {
            for (size_t i = 0; i < n; i++) {
                uint64_t *p = malloc(sizes[s]);
                *p = i;
                live[i] = p;
            }
            for (size_t i = 0; i < n / 2; i++) free(live[i]);
            for (size_t i = n; i > n / 2; i--) free(live[i - 1]);
        }
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.2f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (double)(iters * per));
    free(live);
    return 0;
}

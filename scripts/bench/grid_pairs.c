/* One cell of `hopless bench alloc --c-abi --grid`, as a C program: N blocks of SIZE bytes allocated,
 * then the older half freed oldest first and the newer half newest first, never written, repeated for
 * about PAIRS malloc+free pairs (after a quarter as many to warm up); prints ns per pair. The check that
 * the bench's harness measures what a C program sees: run both under the same LD_PRELOAD.
 *
 *   cc -O2 -o /tmp/grid_pairs scripts/bench/grid_pairs.c
 *   LD_PRELOAD=target/release/libhopless.so /tmp/grid_pairs 16 400 2000000
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void rounds(void **live, size_t size, size_t n, size_t count) {
    for (size_t r = 0; r < count; r++) {
        for (size_t i = 0; i < n; i++) {
            live[i] = malloc(size);
            __asm__ volatile("" : : "r"(live[i]) : "memory"); /* keep the pair: the compiler may drop it */
        }
        for (size_t i = 0; i < n / 2; i++) free(live[i]);
        for (size_t i = n; i > n / 2; i--) free(live[i - 1]);
    }
}

int main(int argc, char **argv) {
    if (argc != 4) return fprintf(stderr, "usage: %s SIZE N PAIRS\n", argv[0]), 2;
    size_t size = strtoul(argv[1], 0, 10), n = strtoul(argv[2], 0, 10), pairs = strtoul(argv[3], 0, 10);
    size_t count = (pairs + n - 1) / n;
    void **live = calloc(n, sizeof *live);
    rounds(live, size, n, count / 4 + 1);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    rounds(live, size, n, count);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.2f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (double)(count * n));
    return 0;
}

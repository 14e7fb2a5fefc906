/* Allocate N blocks of SIZE bytes (the first word of each written), free them all in order, then call
 * malloc_trim(0) twice; prints how long each trim took. Under `strace -f -c -e trace=madvise` it counts
 * the allocator's madvise calls for a mass free and a trim (docs/central-heap.md, "Memory back to the OS").
 *
 *   cc -O2 -o /tmp/free_and_trim scripts/repro/free_and_trim.c
 *   LD_PRELOAD=target/release/libhopless.so strace -f -c -e trace=madvise /tmp/free_and_trim 3000000 100
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s N SIZE\n", argv[0]);
        return 2;
    }
    size_t n = strtoul(argv[1], NULL, 10), size = strtoul(argv[2], NULL, 10);
    if (n == 0 || size < sizeof(long)) {
        fprintf(stderr, "N > 0, SIZE >= %zu\n", sizeof(long));
        return 2;
    }
    void **blocks = malloc(n * sizeof(void *));
    if (!blocks)
        return 1;
    for (size_t i = 0; i < n; i++) {
        blocks[i] = malloc(size);
        if (!blocks[i])
            return 1;
        *(long *)blocks[i] = (long)i;
    }
    for (size_t i = 0; i < n; i++)
        free(blocks[i]);
    for (int round = 1; round <= 2; round++) {
        double t = now();
        malloc_trim(0);
        printf("trim %d: %.1f ms\n", round, (now() - t) * 1e3);
    }
    free(blocks);
    return 0;
}

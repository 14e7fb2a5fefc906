/* The KV write-up's two crashes, replayed in C under LD_PRELOAD=libhopless.so HOPLESS_DEBUG=1:
 *   double: a value freed by the delete path and by the expiry path at once (two threads, one pointer);
 *   uaf:    a reader that keeps using a value another thread has freed (reads poison, then writes).
 * Under debug mode both must stop with a report naming the pointer and its history. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *value;
static void *volatile sink;
static pthread_barrier_t barrier;

static void *delete_path(void *arg) {
    (void)arg;
    pthread_barrier_wait(&barrier);
    free(value);
    return NULL;
}

static void *expire_path(void *arg) {
    (void)arg;
    pthread_barrier_wait(&barrier);
    free(value);
    return NULL;
}

static void *freer(void *arg) {
    (void)arg;
    free(value);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    value = malloc(64);
    memset(value, 'v', 64);
    fprintf(stderr, "victim %p\n", (void *)value);
    if (strcmp(argv[1], "double") == 0) {
        pthread_t a, b;
        pthread_barrier_init(&barrier, NULL, 2);
        pthread_create(&a, NULL, delete_path, NULL);
        pthread_create(&b, NULL, expire_path, NULL);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
    } else {
        pthread_t a;
        pthread_create(&a, NULL, freer, NULL);
        pthread_join(a, NULL);
        /* The reader still holds the pointer: its read sees the poison instead of stale data... */
        uint64_t seen;
        memcpy(&seen, value, 8);
        printf("read: %016llx\n", (unsigned long long)seen);
        fflush(stdout);
        /* ...and its write (say, a reference count) is caught when the block is handed out again. */
        value[5] = 0;
        for (int i = 0; i < 100000; i++) sink = malloc(64);
    }
    printf("not caught\n");
    return 0;
}

/* Exercises every symbol libhopless exports, and glibc's edge cases, from C.
 * Run under LD_PRELOAD=libhopless.so or linked with -lhopless; prints "ok" and exits 0 on success. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dlfcn.h>

void *__libc_malloc(size_t);
void __libc_free(void *);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
void *__libc_valloc(size_t);
void *__libc_pvalloc(size_t);
/* glibc no longer links these for new programs; hopless exports them, so look them up at run time. */
static void (*cfree_fn)(void *);
static int (*posix_memalign_fn)(void **, size_t, size_t);
/* C23's sized frees: glibc 2.36 has neither, so they are looked up too. */
static void (*free_sized_fn)(void *, size_t);
static void (*free_aligned_sized_fn)(void *, size_t, size_t);

static int failures = 0;
#define CHECK(c)                                                              \
    do {                                                                      \
        if (!(c)) {                                                           \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            failures++;                                                       \
        }                                                                     \
    } while (0)

static void fill(unsigned char *p, size_t n, unsigned char tag) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(tag ^ (i * 31));
}
static int same(const unsigned char *p, size_t n, unsigned char tag) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(tag ^ (i * 31))) return 0;
    return 1;
}

static void basics(void) {
    for (size_t n = 0; n <= 70000; n = n < 64 ? n + 1 : n * 2 + 3) {
        unsigned char *p = malloc(n);
        CHECK(p != NULL);
        CHECK(((uintptr_t)p % (n <= 8 ? 8 : 16)) == 0);
        CHECK(malloc_usable_size(p) >= n);
        fill(p, n, 7);
        CHECK(same(p, n, 7));
        free(p);
    }
    free(NULL);
    CHECK(malloc_usable_size(NULL) == 0);

    /* calloc: zeroed, and overflow is ENOMEM */
    unsigned char *z = calloc(1000, 3);
    CHECK(z != NULL);
    for (int i = 0; i < 3000; i++) CHECK(z[i] == 0);
    free(z);
    errno = 0;
    CHECK(calloc(SIZE_MAX / 2, 3) == NULL);
    CHECK(errno == ENOMEM);
    errno = 0;
    CHECK(malloc(SIZE_MAX - 100) == NULL);
    CHECK(errno == ENOMEM);

    /* realloc: NULL, grow, shrink, zero */
    unsigned char *r = realloc(NULL, 10);
    CHECK(r != NULL);
    fill(r, 10, 1);
    r = realloc(r, 100000);
    CHECK(r != NULL && same(r, 10, 1));
    fill(r, 100000, 2);
    r = realloc(r, 2000000);
    CHECK(r != NULL && same(r, 100000, 2));
    r = realloc(r, 50);
    CHECK(r != NULL && same(r, 50, 2));
    CHECK(realloc(r, 0) == NULL); /* glibc: frees, returns NULL */
    errno = 0;
    void *keep = malloc(16);
    CHECK(realloc(keep, SIZE_MAX - 10) == NULL && errno == ENOMEM);
    free(keep);

    /* reallocarray overflow */
    errno = 0;
    CHECK(reallocarray(NULL, SIZE_MAX / 2, 4) == NULL && errno == ENOMEM);
    int *arr = reallocarray(NULL, 100, sizeof(int));
    CHECK(arr != NULL);
    free(arr);

    /* glibc internal names and cfree */
    void *a = __libc_malloc(33);
    a = __libc_realloc(a, 333);
    CHECK(a != NULL);
    __libc_free(a);
    unsigned char *c = __libc_calloc(4, 8);
    CHECK(c != NULL && c[31] == 0);
    CHECK(cfree_fn != NULL);
    if (cfree_fn) cfree_fn(c);

    /* C23 sized frees, of small, medium, large and aligned blocks */
    CHECK(free_sized_fn != NULL && free_aligned_sized_fn != NULL);
    if (free_sized_fn && free_aligned_sized_fn) {
        size_t sizes[] = {0, 24, 3000, 200000, 5 << 20};
        for (int k = 0; k < 5; k++) {
            void *s = malloc(sizes[k]);
            CHECK(s != NULL);
            free_sized_fn(s, sizes[k]);
            void *al = aligned_alloc(4096, sizes[k] + 4096);
            CHECK(al != NULL && (uintptr_t)al % 4096 == 0);
            free_aligned_sized_fn(al, 4096, sizes[k] + 4096);
        }
        free_sized_fn(NULL, 10);
    }
}

static void alignments(void) {
    for (size_t align = 8; align <= 65536; align *= 2) {
        size_t sizes[] = {1, 8, 100, 4096, 5000, 300000};
        for (int k = 0; k < 6; k++) {
            size_t n = sizes[k];
            void *p = NULL;
            int saved = errno = 1234;
            CHECK(posix_memalign(&p, align, n) == 0);
            CHECK(errno == saved); /* unchanged on success */
            CHECK(p && (uintptr_t)p % align == 0);
            CHECK(malloc_usable_size(p) >= n);
            fill(p, n, 3);
            free(p);
            p = aligned_alloc(align, n);
            CHECK(p && (uintptr_t)p % align == 0);
            free(p);
            p = memalign(align, n);
            CHECK(p && (uintptr_t)p % align == 0);
            free(p);
            p = __libc_memalign(align, n);
            CHECK(p && (uintptr_t)p % align == 0);
            free(p);
            if (posix_memalign_fn) {
                CHECK(posix_memalign_fn(&p, align, n) == 0 && (uintptr_t)p % align == 0);
                free(p);
            }
        }
    }
    void *p = NULL;
    CHECK(posix_memalign(&p, 3, 10) == EINVAL);
    CHECK(posix_memalign(&p, 4, 10) == EINVAL); /* not a multiple of sizeof(void*) */
    errno = 0;
    CHECK(aligned_alloc(24, 10) == NULL && errno == EINVAL);
    p = memalign(24, 10); /* glibc rounds up to 32 */
    CHECK(p && (uintptr_t)p % 32 == 0);
    free(p);
    p = valloc(100);
    CHECK(p && (uintptr_t)p % 4096 == 0);
    free(p);
    p = pvalloc(5000);
    CHECK(p && (uintptr_t)p % 4096 == 0 && malloc_usable_size(p) >= 8192);
    free(p);
    /* glibc's internal names of these two: what they return is freed with free(), so they must be
       hopless's too (once, only valloc and pvalloc were, and this free stopped the process). */
    p = __libc_valloc(100);
    CHECK(p && (uintptr_t)p % 4096 == 0 && malloc_usable_size(p) >= 100);
    free(p);
    p = __libc_pvalloc(5000);
    CHECK(p && (uintptr_t)p % 4096 == 0 && malloc_usable_size(p) >= 8192);
    free(p);
}

#define THREADS 8
#define PER 20000
static void *slots[THREADS][PER];

static void *producer(void *arg) {
    long t = (long)arg;
    for (int i = 0; i < PER; i++) {
        size_t n = 1 + (size_t)((i * 7 + t) % 700);
        slots[t][i] = malloc(n);
        fill(slots[t][i], n, (unsigned char)t);
    }
    return NULL;
}

static void *consumer(void *arg) {
    long t = (long)arg;
    long src = (t + 1) % THREADS; /* free another thread's blocks */
    for (int i = 0; i < PER; i++) {
        size_t n = 1 + (size_t)((i * 7 + src) % 700);
        if (!same(slots[src][i], n, (unsigned char)src)) failures++;
        free(slots[src][i]);
    }
    /* and churn a little before exiting */
    for (int i = 0; i < 1000; i++) free(malloc((size_t)i * 3 + 1));
    return NULL;
}

static void threads(void) {
    pthread_t th[THREADS];
    for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, producer, (void *)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
    for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, consumer, (void *)t);
    for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
}

static volatile int spin_stop = 0;
static void *spinner(void *arg) {
    (void)arg;
    while (!spin_stop) free(malloc(64));
    return NULL;
}

static void fork_from_threads(void) {
    pthread_t th[3];
    for (int t = 0; t < 3; t++) pthread_create(&th[t], NULL, spinner, NULL);
    for (int round = 0; round < 20; round++) {
        pid_t pid = fork();
        if (pid == 0) {
            /* the child allocates: no lock may be left held by a thread that is gone */
            for (int i = 0; i < 10000; i++) {
                char *p = malloc((size_t)(i % 2000) + 1);
                if (!p) _exit(2);
                p[0] = 1;
                free(p);
            }
            void *big = malloc(1 << 20);
            free(big);
            _exit(0);
        }
        int status = 0;
        CHECK(waitpid(pid, &status, 0) == pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    spin_stop = 1;
    for (int t = 0; t < 3; t++) pthread_join(th[t], NULL);
}

/* VmRSS in kB. */
static long rss_kb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    CHECK(f != NULL);
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kb) == 1) break;
    fclose(f);
    return kb;
}

/* malloc_trim gives freed memory back: 32 MiB of small blocks, freed, then trimmed. */
static void trim(void) {
    enum { N = 8192 };
    static void *blocks[N];
    for (int i = 0; i < N; i++) {
        blocks[i] = malloc(4000);
        CHECK(blocks[i] != NULL);
        memset(blocks[i], 1, 4000);
    }
    long full = rss_kb();
    for (int i = 0; i < N; i++) free(blocks[i]);
    CHECK(malloc_trim(0) == 1);
    CHECK(malloc_trim(0) == 0); /* nothing left to give */
    long trimmed = rss_kb();
    CHECK(full - trimmed > 16 * 1024); /* at least half of the 32 MiB went back */
}

int main(void) {
    cfree_fn = (void (*)(void *))dlsym(RTLD_DEFAULT, "cfree");
    posix_memalign_fn = (int (*)(void **, size_t, size_t))dlsym(RTLD_DEFAULT, "__posix_memalign");
    free_sized_fn = (void (*)(void *, size_t))dlsym(RTLD_DEFAULT, "free_sized");
    free_aligned_sized_fn = (void (*)(void *, size_t, size_t))dlsym(RTLD_DEFAULT, "free_aligned_sized");
    CHECK(posix_memalign_fn != NULL);
    basics();
    alignments();
    threads();
    fork_from_threads();
    trim();
    if (failures) {
        fprintf(stderr, "%d failures\n", failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}

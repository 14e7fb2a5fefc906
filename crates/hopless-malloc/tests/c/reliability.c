/* Reliability regressions for libhopless.so, one subcommand per case (argv[1], optional argument in
 * argv[2]). Each prints "ok\n" and exits 0 when the allocator behaves; a failed CHECK names itself on
 * stderr and exits 1. The bad-free cases print the bad pointer ("%p") on stdout before the bad free and
 * must die by SIGABRT with hopless's report; if the free returns they print "not caught" and exit 1.
 * Measurements (VmRSS, VmPTE, seconds) go to stderr as "name value" lines for the Rust side.
 * Driven by tests/reliability.rs; run by hand as `LD_PRELOAD=.../libhopless.so ./reliability CASE`. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif

#define CHECK(c)                                                                         \
    do {                                                                                 \
        if (!(c)) {                                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s (errno %d)\n", __FILE__, __LINE__, #c, \
                    errno);                                                              \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

static void *volatile sink;

static unsigned lcg(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return *s;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A field of /proc/self/status in kB ("VmRSS", "VmPTE"); read with read(2), no stdio, no malloc. */
static long status_kb(const char *field) {
    char buf[8192];
    int fd = open("/proc/self/status", O_RDONLY);
    CHECK(fd >= 0);
    ssize_t n = 0, r;
    while (n < (ssize_t)sizeof buf - 1 && (r = read(fd, buf + n, sizeof buf - 1 - (size_t)n)) > 0) n += r;
    close(fd);
    buf[n] = 0;
    size_t len = strlen(field);
    for (char *line = buf; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, field, len) == 0 && line[len] == ':') return strtol(line + len + 1, NULL, 10);
    }
    CHECK(!"field in /proc/self/status");
    return -1;
}

/* Prints the pointer a bad free is about to be given, so the report can be matched against it. */
static void announce(const void *p) {
    printf("%p\n", p);
    fflush(stdout);
}

/* After a bad free that returned: the run fails (exit 1) instead of dying by SIGABRT. */
static int not_caught(void) {
    printf("not caught\n");
    fprintf(stderr, "the bad free was not caught\n");
    return 1;
}

/* ---------------------------------------------------------------------------------------------------
 * 1. large blocks churned through six slots */

static void large_churn_seed(unsigned seed) {
    void *live[6] = {0};
    size_t size[6] = {0};
    unsigned char tag[6] = {0};
    unsigned s = seed;
    for (int step = 0; step < 20000; step++) {
        lcg(&s);
        unsigned k = (s >> 16) % 6;
        if (live[k]) {
            unsigned char *b = live[k];
            CHECK(b[0] == tag[k] && b[size[k] - 1] == (unsigned char)~tag[k]);
            free(live[k]);
        }
        size[k] = ((size_t)256 << 10) + (s >> 8) % (64u << 20);
        unsigned char *b = malloc(size[k]);
        CHECK(b != NULL);
        tag[k] = (unsigned char)(step * 31 + 7);
        b[0] = tag[k];
        b[size[k] - 1] = (unsigned char)~tag[k];
        live[k] = b;
    }
    for (int k = 0; k < 6; k++) {
        if (!live[k]) continue;
        unsigned char *b = live[k];
        CHECK(b[0] == tag[k] && b[size[k] - 1] == (unsigned char)~tag[k]);
        free(live[k]);
    }
}

static int large_churn(const char *arg) {
    if (arg) {
        large_churn_seed((unsigned)strtoul(arg, NULL, 10));
    } else {
        for (unsigned seed = 1; seed <= 8; seed++) large_churn_seed(seed);
    }
    return 0;
}

/* Threads churn large blocks through shared slots (so most frees are cross-thread): malloc, calloc
 * (checked zero), realloc up and down (contents checked), every page written and checked. Cached mappings
 * are trimmed, grown and moved under this, and a moved mapping's old address may be mapped again at once by
 * another thread. */
enum { LT_SLOTS = 24 };
static _Atomic(uintptr_t) lt_slot[LT_SLOTS];

static void lt_fill(unsigned char *p, size_t n, unsigned char tag) {
    memcpy(p, &n, sizeof n);
    p[sizeof n] = tag;
    for (size_t o = 16; o < n; o += 4093) p[o] = tag;
    p[n - 1] = tag;
}

static void lt_check(const unsigned char *p) {
    size_t n;
    memcpy(&n, p, sizeof n);
    unsigned char tag = p[sizeof n];
    for (size_t o = 16; o < n; o += 4093) CHECK(p[o] == tag);
    CHECK(p[n - 1] == tag);
}

static void *lt_worker(void *arg) {
    unsigned s = (unsigned)(uintptr_t)arg * 2654435761u + 1;
    for (int i = 0; i < 700; i++) {
        lcg(&s);
        unsigned k = (s >> 8) % LT_SLOTS;
        size_t n = 200000 + (s >> 4) % (6u << 20);
        unsigned char *p = (unsigned char *)atomic_exchange(&lt_slot[k], 0);
        lcg(&s);
        if (p) {
            lt_check(p);
            if (s % 4 == 0) {
                size_t old;
                memcpy(&old, p, sizeof old);
                unsigned char tag = p[sizeof old];
                p = realloc(p, n);
                CHECK(p != NULL && malloc_usable_size(p) >= n);
                for (size_t o = 16; o < (old < n ? old : n); o += 4093) CHECK(p[o] == tag);
                lt_fill(p, n, tag + 1);
            } else {
                free(p);
                p = NULL;
            }
        }
        if (!p) {
            if (s % 3 == 0) {
                p = calloc(1, n);
                CHECK(p != NULL);
                for (size_t o = 0; o < n; o += 4093) CHECK(p[o] == 0);
                CHECK(p[n - 1] == 0);
            } else {
                p = malloc(n);
                CHECK(p != NULL);
            }
            lt_fill(p, n, (unsigned char)(s >> 24));
        }
        unsigned char *prev = (unsigned char *)atomic_exchange(&lt_slot[k], (uintptr_t)p);
        if (prev) {
            lt_check(prev);
            free(prev);
        }
    }
    return NULL;
}

static int large_threads(void) {
    pthread_t t[4];
    for (uintptr_t i = 0; i < 4; i++) CHECK(pthread_create(&t[i], NULL, lt_worker, (void *)(i + 1)) == 0);
    for (int i = 0; i < 4; i++) CHECK(pthread_join(t[i], NULL) == 0);
    for (int k = 0; k < LT_SLOTS; k++) {
        unsigned char *p = (unsigned char *)lt_slot[k];
        if (p) {
            lt_check(p);
            free(p);
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------------
 * 2. fork: handlers that allocate, registered before / after the first malloc; fork beside busy threads */

static void prep(void) {
    void *volatile s = malloc(1 << 20);
    free(s);
    void *volatile t = malloc(100);
    free(t);
}

static void in_parent(void) {
    void *volatile t = malloc(200);
    free(t);
    void *volatile u = malloc(300000);
    free(u);
}

static void in_child(void) {
    void *volatile t = malloc(50);
    free(t);
    void *volatile u = malloc(2 << 20);
    free(u);
}

/* waitpid with a deadline: a child stuck in the allocator is killed and reported, never waited on forever. */
static void reap(pid_t pid) {
    int status = 0;
    double deadline = now() + 20.0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        CHECK(r >= 0);
        if (r == pid) break;
        if (now() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            fprintf(stderr, "child %d hung (killed)\n", (int)pid);
            exit(1);
        }
        usleep(1000);
    }
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
        fprintf(stderr, "child status 0x%x\n", (unsigned)status);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void fork_some(int times) {
    for (int i = 0; i < times; i++) {
        void *volatile keep = malloc(64 + (size_t)i);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            void *volatile a = malloc(100);
            void *volatile b = malloc(1 << 20);
            if (!a || !b) _exit(3);
            free(a);
            free(b);
            free(keep);
            _exit(0);
        }
        reap(pid);
        free(keep);
    }
}

static int fork_atfork_before(void) {
    CHECK(pthread_atfork(prep, in_parent, in_child) == 0);
    void *volatile p = malloc(100);
    CHECK(p != NULL);
    fork_some(20);
    free(p);
    return 0;
}

static int fork_atfork_after(void) {
    void *volatile p = malloc(100);
    CHECK(p != NULL);
    CHECK(pthread_atfork(prep, in_parent, in_child) == 0);
    fork_some(20);
    free(p);
    return 0;
}

static volatile int stop_busy;

static void *busy(void *arg) {
    unsigned s = (unsigned)(uintptr_t)arg;
    void *slots[64] = {0};
    while (!__atomic_load_n(&stop_busy, __ATOMIC_RELAXED)) {
        unsigned k = (lcg(&s) >> 16) % 64;
        free(slots[k]);
        size_t n = (lcg(&s) >> 8) % 4 == 0 ? (lcg(&s) >> 8) % 400000 : (lcg(&s) >> 8) % 2000;
        slots[k] = malloc(n + 1);
        if (!slots[k]) abort();
        memset(slots[k], 1, n < 64 ? n + 1 : 64);
    }
    for (int k = 0; k < 64; k++) free(slots[k]);
    return NULL;
}

static int fork_threads(void) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++) CHECK(pthread_create(&t[i], NULL, busy, (void *)(uintptr_t)(i + 1)) == 0);
    usleep(20000);
    fork_some(50);
    __atomic_store_n(&stop_busy, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < 4; i++) CHECK(pthread_join(t[i], NULL) == 0);
    return 0;
}

/* ---------------------------------------------------------------------------------------------------
 * 3. many pthread keys created before the first malloc */

#define MAX_KEYS 256
static pthread_key_t keys[MAX_KEYS];
static int nkeys;
static int destructed;

static void key_destructor(void *v) {
    free(v);
    __atomic_fetch_add(&destructed, 1, __ATOMIC_RELAXED);
}

static void use_keys(void) {
    for (int i = 0; i < nkeys; i++) {
        void *v = malloc(16);
        CHECK(v != NULL);
        memset(v, i, 16);
        CHECK(pthread_setspecific(keys[i], v) == 0);
    }
    void *volatile p = malloc(100);
    CHECK(p != NULL);
    memset(p, 3, 100);
    free(p);
}

static void *key_thread(void *arg) {
    (void)arg;
    void *volatile p = malloc(100);
    CHECK(p != NULL);
    memset(p, 4, 100);
    free(p);
    use_keys();
    return NULL;
}

static int many_keys(const char *arg) {
    nkeys = arg ? atoi(arg) : 40;
    CHECK(nkeys > 0 && nkeys <= MAX_KEYS);
    for (int i = 0; i < nkeys; i++) CHECK(pthread_key_create(&keys[i], key_destructor) == 0);
    void *volatile p = malloc(100);
    CHECK(p != NULL);
    memset(p, 1, 100);
    free(p);
    pthread_t t[8];
    for (int i = 0; i < 8; i++) CHECK(pthread_create(&t[i], NULL, key_thread, NULL) == 0);
    for (int i = 0; i < 8; i++) CHECK(pthread_join(t[i], NULL) == 0);
    CHECK(__atomic_load_n(&destructed, __ATOMIC_RELAXED) == 8 * nkeys);
    use_keys();
    return 0;
}

/* ---------------------------------------------------------------------------------------------------
 * 4. double and invalid frees (each must abort with a report), and no false positives */

static int df_immediate(void) {
    char *volatile p = malloc(40);
    CHECK(p != NULL);
    memset(p, 1, 40);
    announce(p);
    free(p);
    free(p);
    return not_caught();
}

static int df_delayed(void) {
    char *volatile p = malloc(40);
    CHECK(p != NULL);
    memset(p, 1, 40);
    announce(p);
    free(p);
    for (int i = 0; i < 200; i++) {
        size_t n = (size_t)(i * 37) % 3000 + 1;
        char *volatile q = malloc(n);
        CHECK(q != NULL);
        q[0] = 1;
        q[n - 1] = 2;
        free(q);
    }
    free(p);
    return not_caught();
}

/* Blocks never written by the program (their first word is hopless's key), freed in another order than
 * they came, past a magazine's capacity (a flush moves the kept blocks down and rewrites their keys),
 * then one of the kept ones freed again. */
static int df_after_shift(void) {
    enum { N = 100 };
    void *b[N];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) CHECK((b[i] = malloc(48)) != NULL);
        for (int i = 0; i < N; i++) free(b[i]);
    }
    announce(b[N - 10]);
    free(b[N - 10]);
    return not_caught();
}

/* Unwritten blocks freed, flushed to their slab (marked), refilled into this thread's magazine and not
 * handed out, while other frees land on top of them: freeing any of the first batch again is caught,
 * wherever it is (its slab, or the refilled part of the magazine). */
static int df_refilled(void) {
    enum { N = 300 };
    static void *b[N], *c[N];
    for (int i = 0; i < N; i++) CHECK((b[i] = malloc(48)) != NULL);
    for (int i = 0; i < N; i++) free(b[i]);
    /* Drain the magazine and take one refill's first block. */
    int got = 0;
    for (; got < 80; got++) CHECK((c[got] = malloc(48)) != NULL);
    /* Free a few of those on top of the refilled ones. */
    for (int i = 0; i < 5; i++) free(c[--got]);
    /* A block of the first batch not handed out again: its second free must be caught. */
    for (int i = 0; i < N; i++) {
        int again = 0;
        for (int j = 0; j < got; j++) again |= c[j] == b[i];
        if (!again) {
            announce(b[i]);
            free(b[i]);
            return not_caught();
        }
    }
    return 2;
}

static int df_interleaved(void) {
    char *volatile p = malloc(40);
    char *volatile q = malloc(40);
    CHECK(p != NULL && q != NULL);
    announce(p);
    free(p);
    free(q);
    free(p);
    return not_caught();
}

static char *volatile shared;
static pthread_barrier_t freed_once, after_second;

static void *free_then_wait(void *arg) {
    (void)arg;
    free(shared);
    pthread_barrier_wait(&freed_once);
    /* Still alive (with its thread cache) while main frees the pointer again. */
    pthread_barrier_wait(&after_second);
    return NULL;
}

static int df_cross_thread(void) {
    shared = malloc(40);
    CHECK(shared != NULL);
    memset(shared, 1, 40);
    announce(shared);
    CHECK(pthread_barrier_init(&freed_once, NULL, 2) == 0);
    CHECK(pthread_barrier_init(&after_second, NULL, 2) == 0);
    pthread_t a;
    CHECK(pthread_create(&a, NULL, free_then_wait, NULL) == 0);
    pthread_barrier_wait(&freed_once);
    free(shared);
    pthread_barrier_wait(&after_second);
    pthread_join(a, NULL);
    return not_caught();
}

static void *free_and_exit(void *arg) {
    (void)arg;
    free(shared);
    return NULL;
}

static int df_after_thread_exit(void) {
    shared = malloc(40);
    CHECK(shared != NULL);
    memset(shared, 1, 40);
    announce(shared);
    pthread_t a;
    CHECK(pthread_create(&a, NULL, free_and_exit, NULL) == 0);
    CHECK(pthread_join(a, NULL) == 0);
    free(shared);
    return not_caught();
}

static int df_sizes(const char *arg) {
    CHECK(arg != NULL);
    size_t n = strtoul(arg, NULL, 10);
    CHECK(n > 0);
    char *volatile p = malloc(n);
    CHECK(p != NULL);
    memset(p, 1, n);
    announce(p);
    free(p);
    free(p);
    return not_caught();
}

static int df_large(void) {
    char *volatile p = malloc(1 << 20);
    CHECK(p != NULL);
    memset(p, 1, 4096);
    announce(p);
    free(p);
    free(p);
    return not_caught();
}

static int invalid_interior(void) {
    char *volatile p = malloc(64);
    CHECK(p != NULL);
    memset(p, 1, 64);
    announce(p + 16);
    free(p + 16);
    return not_caught();
}

static int invalid_stack(void) {
    char buf[64];
    char *volatile b = buf;
    memset(b, 1, 64);
    announce(b);
    free(b);
    return not_caught();
}

static int invalid_metadata(void) {
    char *volatile p = malloc(40);
    CHECK(p != NULL);
    memset(p, 1, 40);
    char *base = (char *)((uintptr_t)p & ~(uintptr_t)((1 << 22) - 1));
    announce(base + 64);
    free(base + 64);
    return not_caught();
}

static int invalid_never_allocated(void) {
    char *volatile p = malloc(48);
    CHECK(p != NULL);
    memset(p, 1, 48);
    announce(p + 48 * 200);
    free(p + 48 * 200);
    return not_caught();
}

/* A mutex-protected queue from a producer thread to a consumer thread that frees what it takes. */
#define QCAP 1024
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    void *items[QCAP];
    size_t sizes[QCAP];
    int head, len, done;
} q = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, {0}, 0, 0, 0};

static void *producer(void *arg) {
    (void)arg;
    unsigned s = 99;
    for (int i = 0; i < 100000; i++) {
        size_t n = (lcg(&s) >> 8) % 2048 + 1;
        unsigned char *b = malloc(n);
        CHECK(b != NULL);
        memset(b, (int)(n & 0xff), n);
        pthread_mutex_lock(&q.mu);
        while (q.len == QCAP) pthread_cond_wait(&q.cv, &q.mu);
        q.items[(q.head + q.len) % QCAP] = b;
        q.sizes[(q.head + q.len) % QCAP] = n;
        q.len++;
        pthread_cond_broadcast(&q.cv);
        pthread_mutex_unlock(&q.mu);
    }
    pthread_mutex_lock(&q.mu);
    q.done = 1;
    pthread_cond_broadcast(&q.cv);
    pthread_mutex_unlock(&q.mu);
    return NULL;
}

static void *consumer(void *arg) {
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&q.mu);
        while (q.len == 0 && !q.done) pthread_cond_wait(&q.cv, &q.mu);
        if (q.len == 0) {
            pthread_mutex_unlock(&q.mu);
            return NULL;
        }
        unsigned char *b = q.items[q.head];
        size_t n = q.sizes[q.head];
        q.head = (q.head + 1) % QCAP;
        q.len--;
        pthread_cond_broadcast(&q.cv);
        pthread_mutex_unlock(&q.mu);
        CHECK(b[0] == (n & 0xff) && b[n - 1] == (n & 0xff));
        free(b);
    }
}

static void fill(unsigned char *b, size_t n, unsigned char tag) {
    for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(tag + i * 13);
}

static int filled(const unsigned char *b, size_t n, unsigned char tag) {
    for (size_t i = 0; i < n; i++)
        if (b[i] != (unsigned char)(tag + i * 13)) return 0;
    return 1;
}

static void *random_worker(void *arg) {
    unsigned s = (unsigned)(uintptr_t)arg * 7919u;
    enum { SLOTS = 128 };
    unsigned char *ptr[SLOTS] = {0};
    size_t size[SLOTS] = {0};
    unsigned char tag[SLOTS] = {0};
    for (int i = 0; i < 200000; i++) {
        unsigned k = (lcg(&s) >> 16) % SLOTS;
        unsigned op = (lcg(&s) >> 16) % 3;
        unsigned r = lcg(&s) >> 8;
        size_t n = r % 32 == 0 ? r % 40000 + 1 : r % 600 + 1;
        if (ptr[k]) CHECK(filled(ptr[k], size[k], tag[k]));
        if (op == 2 && ptr[k]) {
            unsigned char *b = realloc(ptr[k], n);
            CHECK(b != NULL);
            size_t keep = n < size[k] ? n : size[k];
            CHECK(filled(b, keep, tag[k]));
            fill(b, n, tag[k]);
            ptr[k] = b;
            size[k] = n;
        } else if (ptr[k]) {
            free(ptr[k]);
            ptr[k] = NULL;
        } else {
            ptr[k] = malloc(n);
            CHECK(ptr[k] != NULL);
            size[k] = n;
            tag[k] = (unsigned char)i;
            fill(ptr[k], n, tag[k]);
        }
    }
    for (int k = 0; k < SLOTS; k++) {
        if (ptr[k]) CHECK(filled(ptr[k], size[k], tag[k]));
        free(ptr[k]);
    }
    return NULL;
}

static int no_false_positive(void) {
    /* The same block back and forth, never written. */
    static const size_t sizes[] = {1, 8, 24, 40, 100, 1000, 4096, 5000, 100000};
    for (size_t j = 0; j < sizeof sizes / sizeof sizes[0]; j++) {
        for (int i = 0; i < 100000; i++) {
            void *p = malloc(sizes[j]);
            CHECK(p != NULL);
            sink = p;
            free(p);
        }
    }
    /* Blocks whose first 8 bytes are never written, some held while others come and go. */
    void *held[500];
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 500; i++) {
            size_t n = 16 + (size_t)(i % 50) * 8;
            unsigned char *b = malloc(n);
            CHECK(b != NULL);
            memset(b + 8, 0x5a, n - 8);
            held[i] = b;
        }
        for (int i = round % 2; i < 500; i += 2) {
            free(held[i]);
            held[i] = NULL;
        }
        for (int i = 0; i < 500; i++) free(held[i]);
    }
    /* Blocks freed by another thread after passing through a mutex-protected queue. */
    pthread_t pr, co;
    CHECK(pthread_create(&pr, NULL, producer, NULL) == 0);
    CHECK(pthread_create(&co, NULL, consumer, NULL) == 0);
    CHECK(pthread_join(pr, NULL) == 0);
    CHECK(pthread_join(co, NULL) == 0);
    /* Four threads of random malloc / free / realloc with their contents checked. */
    pthread_t t[4];
    for (int i = 0; i < 4; i++) CHECK(pthread_create(&t[i], NULL, random_worker, (void *)(uintptr_t)(i + 1)) == 0);
    for (int i = 0; i < 4; i++) CHECK(pthread_join(t[i], NULL) == 0);
    return 0;
}

/* ---------------------------------------------------------------------------------------------------
 * 5. aligned blocks: many at once, page tables, huge alignments */

static void *noop_thread(void *arg) {
    void *volatile p = malloc(100);
    if (p) memset(p, 1, 100);
    free(p);
    return arg;
}

static int aligned_many(void) {
    enum { N = 66000 };
    void **blocks = calloc(N, sizeof(void *));
    CHECK(blocks != NULL);
    for (int i = 0; i < N; i++) {
        void *p = NULL;
        CHECK(posix_memalign(&p, 8192, 100) == 0);
        CHECK(p != NULL && (uintptr_t)p % 8192 == 0);
        memset(p, i & 0xff, 100);
        blocks[i] = p;
    }
    pthread_t t;
    int rc = pthread_create(&t, NULL, noop_thread, NULL);
    if (rc != 0) fprintf(stderr, "pthread_create: %s\n", strerror(rc));
    CHECK(rc == 0);
    CHECK(pthread_join(t, NULL) == 0);
    char *big = malloc(10 << 20);
    CHECK(big != NULL);
    big[0] = 1;
    big[(10 << 20) - 1] = 1;
    free(big);
    for (int i = 0; i < N; i++) {
        CHECK(((unsigned char *)blocks[i])[99] == (i & 0xff));
        free(blocks[i]);
    }
    free(blocks);
    return 0;
}

static int aligned_pagetables(void) {
    enum { N = 50000 };
    void **blocks = calloc(N, sizeof(void *));
    CHECK(blocks != NULL);
    long before = status_kb("VmPTE");
    for (int i = 0; i < N; i++) {
        void *p = NULL;
        CHECK(posix_memalign(&p, 8192, 64) == 0);
        CHECK(p != NULL && (uintptr_t)p % 8192 == 0);
        memset(p, 1, 64);
        blocks[i] = p;
    }
    long after = status_kb("VmPTE");
    fprintf(stderr, "vmpte_kb_before %ld\nvmpte_kb_after %ld\n", before, after);
    for (int i = 0; i < N; i++) free(blocks[i]);
    free(blocks);
    CHECK(after - before < 20 * 1024);
    return 0;
}

static void check_aligned(unsigned char *p, size_t align, size_t size) {
    CHECK(p != NULL);
    CHECK((uintptr_t)p % align == 0);
    p[0] = 0xa5;
    p[size - 1] = 0x5a;
    CHECK(p[0] == 0xa5 && p[size - 1] == 0x5a);
    CHECK(malloc_usable_size(p) >= size);
    free(p);
}

static int aligned_huge(void) {
    for (int shift = 12; shift <= 28; shift++) {
        size_t align = (size_t)1 << shift;
        size_t sizes[2] = {100, align * 2 + 5};
        for (int j = 0; j < 2; j++) {
            void *p = NULL;
            int rc = posix_memalign(&p, align, sizes[j]);
            if (rc != 0) fprintf(stderr, "posix_memalign(%zu, %zu): %d\n", align, sizes[j], rc);
            CHECK(rc == 0);
            check_aligned(p, align, sizes[j]);
            p = memalign(align, sizes[j]);
            if (!p) fprintf(stderr, "memalign(%zu, %zu) failed\n", align, sizes[j]);
            check_aligned(p, align, sizes[j]);
            /* C11 wants a size that is a multiple of the alignment. */
            size_t asz = align * (size_t)(j + 1);
            p = aligned_alloc(align, asz);
            if (!p) fprintf(stderr, "aligned_alloc(%zu, %zu) failed\n", align, asz);
            check_aligned(p, align, asz);
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------------
 * 6. realloc from 1 byte to 64 MiB in 4 KiB steps, and back */

static unsigned char pattern(size_t i) {
    return (unsigned char)(i ^ (i >> 8) ^ (i >> 16) ^ 0x3c);
}

static void check_pattern(const unsigned char *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (b[i] != pattern(i)) {
            fprintf(stderr, "byte %zu of %zu: %d, expected %d\n", i, n, b[i], pattern(i));
            CHECK(!"contents kept");
        }
    }
}

static int realloc_grow(void) {
    const size_t max = (size_t)64 << 20, step = 4096;
    double t0 = now();
    unsigned char *b = NULL;
    size_t have = 0;
    for (size_t n = 1; n <= max; n = n == 1 ? step : n + step) {
        b = realloc(b, n);
        CHECK(b != NULL);
        for (size_t i = have; i < n; i++) b[i] = pattern(i);
        have = n;
        if ((n & (n - 1)) == 0) check_pattern(b, n);
    }
    check_pattern(b, have);
    double t1 = now();
    fprintf(stderr, "grow_seconds %.3f\n", t1 - t0);
    for (size_t n = max - step; n >= step; n -= step) {
        b = realloc(b, n);
        CHECK(b != NULL);
        CHECK(b[0] == pattern(0) && b[n - 1] == pattern(n - 1) && b[n / 2] == pattern(n / 2));
        if ((n & (n - 1)) == 0) check_pattern(b, n);
    }
    b = realloc(b, 1);
    CHECK(b != NULL && b[0] == pattern(0));
    free(b);
    fprintf(stderr, "shrink_seconds %.3f\n", now() - t1);
    return 0;
}

/* ---------------------------------------------------------------------------------------------------
 * 7. requests that cannot be met fail cleanly */

static int enomem(void) {
    const size_t huge = (size_t)1 << 44;
    errno = 0;
    void *p = malloc(huge);
    CHECK(p == NULL);
    CHECK(errno == ENOMEM);
    errno = 0;
    p = calloc((size_t)1 << 22, (size_t)1 << 22);
    CHECK(p == NULL);
    CHECK(errno == ENOMEM);
    unsigned char *keep = malloc(1000);
    CHECK(keep != NULL);
    for (int i = 0; i < 1000; i++) keep[i] = (unsigned char)i;
    errno = 0;
    void *r = realloc(keep, huge);
    CHECK(r == NULL);
    CHECK(errno == ENOMEM);
    for (int i = 0; i < 1000; i++) CHECK(keep[i] == (unsigned char)i);
    free(keep);
    void *a = (void *)1;
    CHECK(posix_memalign(&a, 64, huge) == ENOMEM);
    /* Still working afterwards. */
    p = malloc(1 << 20);
    CHECK(p != NULL);
    free(p);
    return 0;
}

/* ---------------------------------------------------------------------------------------------------
 * 8. many threads: memory after 2000 at once; a first malloc in the last destructor round */

enum { NTHREADS = 2000 };
static pthread_barrier_t all_alive;

static void *one_block(void *arg) {
    unsigned char *volatile p = malloc(64);
    if (!p) abort();
    memset(p, 7, 64);
    pthread_barrier_wait(&all_alive);
    free(p);
    return arg;
}

static int thread_rss(void) {
    pthread_attr_t attr;
    CHECK(pthread_attr_init(&attr) == 0);
    CHECK(pthread_attr_setstacksize(&attr, 64 << 10) == 0);
    pthread_t *t = malloc(sizeof(pthread_t) * NTHREADS);
    CHECK(t != NULL);
    CHECK(pthread_barrier_init(&all_alive, NULL, NTHREADS + 1) == 0);
    for (int i = 0; i < NTHREADS; i++) {
        int rc = pthread_create(&t[i], &attr, one_block, NULL);
        if (rc != 0) fprintf(stderr, "pthread_create %d: %s\n", i, strerror(rc));
        CHECK(rc == 0);
    }
    pthread_barrier_wait(&all_alive);
    for (int i = 0; i < NTHREADS; i++) CHECK(pthread_join(t[i], NULL) == 0);
    free(t);
    fprintf(stderr, "vmrss_kb %ld\n", status_kb("VmRSS"));
    return 0;
}

/* Short-lived threads, one at a time, while another thread keeps running (a thread per task or per
   connection, in a process that is busy elsewhere): each allocates 64 blocks of 16..3000 bytes, checks
   their contents, frees them, and exits. Prints the time per thread. Every exit and the next thread's
   start are on this path: a page given back with madvise interrupts the busy core (a TLB shootdown),
   and a page read as the zero page and then written costs a fault and another shootdown. */
#define CHURN_THREADS 2000
static atomic_int churn_stop;

static void *churn_spin(void *arg) {
    (void)arg;
    volatile unsigned long x = 0;
    while (!atomic_load_explicit(&churn_stop, memory_order_relaxed)) x++;
    return NULL;
}

static void *churn_body(void *arg) {
    uintptr_t i = (uintptr_t)arg;
    unsigned char *v[64];
    for (int k = 0; k < 64; k++) {
        size_t n = 16 + (i * 7 + (size_t)k * 97) % 3000;
        v[k] = malloc(n);
        if (!v[k]) abort();
        memset(v[k], k, n);
    }
    for (int k = 0; k < 64; k++) {
        size_t n = 16 + (i * 7 + (size_t)k * 97) % 3000;
        for (size_t j = 0; j < n; j += 61)
            if (v[k][j] != (unsigned char)k) return (void *)1;
        free(v[k]);
    }
    return NULL;
}

static int thread_churn(void) {
    pthread_t busy;
    CHECK(pthread_create(&busy, NULL, churn_spin, NULL) == 0);
    double t0 = now();
    for (uintptr_t i = 0; i < CHURN_THREADS; i++) {
        pthread_t t;
        void *bad = NULL;
        CHECK(pthread_create(&t, NULL, churn_body, (void *)i) == 0);
        CHECK(pthread_join(t, &bad) == 0);
        CHECK(bad == NULL);
    }
    double us = (now() - t0) * 1e6 / CHURN_THREADS;
    atomic_store(&churn_stop, 1);
    CHECK(pthread_join(busy, NULL) == 0);
    fprintf(stderr, "us_per_thread %.1f\n", us);
    return 0;
}

/* A real-time thread and an ordinary one on the same core, both allocating and freeing enough to
   overflow their magazines (so both take a class lock often). When the real-time thread wakes while the
   ordinary one holds the lock, it preempts the holder; a lock whose waiters spin and then only yield
   (sched_yield gives the core to threads of the same real-time priority, never to an ordinary one)
   waits forever. Needs CAP_SYS_NICE (root) to make a SCHED_FIFO thread; prints "skip" without it. */
static atomic_int rt_stop;
static atomic_int rt_refused;

static void pin_to_cpu0(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static void *rt_ordinary(void *arg) {
    (void)arg;
    pin_to_cpu0();
    void *v[300];
    while (!atomic_load(&rt_stop)) {
        for (int i = 0; i < 300; i++) {
            v[i] = malloc(48);
            if (!v[i]) abort();
            memset(v[i], 1, 48);
        }
        for (int i = 0; i < 300; i++) free(v[i]);
    }
    return NULL;
}

static void *rt_realtime(void *arg) {
    (void)arg;
    pin_to_cpu0();
    struct sched_param prio = {.sched_priority = 10};
    if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &prio) != 0) {
        atomic_store(&rt_refused, 1);
        return NULL;
    }
    void *v[300];
    for (int round = 0; round < 2000; round++) {
        usleep(100);
        for (int i = 0; i < 300; i++) {
            v[i] = malloc(48);
            if (!v[i]) abort();
            memset(v[i], 2, 48);
        }
        for (int i = 0; i < 300; i++) free(v[i]);
    }
    return NULL;
}

static int realtime_beside_ordinary(void) {
    pthread_t a, b;
    CHECK(pthread_create(&a, NULL, rt_ordinary, NULL) == 0);
    usleep(10000);
    CHECK(pthread_create(&b, NULL, rt_realtime, NULL) == 0);
    CHECK(pthread_join(b, NULL) == 0);
    atomic_store(&rt_stop, 1);
    CHECK(pthread_join(a, NULL) == 0);
    if (atomic_load(&rt_refused)) printf("skip\n");
    return 0;
}

static pthread_key_t late_key;
static int late_mallocs;

static void late_destructor(void *v) {
    uintptr_t round = (uintptr_t)v;
    if (round < 4) {
        /* Rounds 1-3: set the key again, so the destructor is called once more. */
        pthread_setspecific(late_key, (void *)(round + 1));
        return;
    }
    /* Round 4 (PTHREAD_DESTRUCTOR_ITERATIONS): this thread's first allocation. */
    unsigned char *volatile p = malloc(100);
    if (!p) abort();
    memset(p, 9, 100);
    free(p);
    __atomic_fetch_add(&late_mallocs, 1, __ATOMIC_RELAXED);
}

static void *late_body(void *arg) {
    /* No allocation here (no stdio): the first one is in the destructor's last round. */
    pthread_setspecific(late_key, (void *)1);
    return arg;
}

static int tsd_late_round(void) {
    void *volatile warm = malloc(100);
    free(warm);
    CHECK(pthread_key_create(&late_key, late_destructor) == 0);
    pthread_attr_t attr;
    CHECK(pthread_attr_init(&attr) == 0);
    CHECK(pthread_attr_setstacksize(&attr, 64 << 10) == 0);
    long at100 = 0;
    for (int i = 1; i <= NTHREADS; i++) {
        pthread_t t;
        CHECK(pthread_create(&t, &attr, late_body, NULL) == 0);
        CHECK(pthread_join(t, NULL) == 0);
        if (i == 100) at100 = status_kb("VmRSS");
    }
    long at2000 = status_kb("VmRSS");
    fprintf(stderr, "vmrss_kb_after_100 %ld\nvmrss_kb_after_2000 %ld\n", at100, at2000);
    CHECK(__atomic_load_n(&late_mallocs, __ATOMIC_RELAXED) == NTHREADS);
    CHECK(at2000 - at100 < 16 * 1024);
    return 0;
}

/* ---------------------------------------------------------------------------------------------------
 * 9. a foreign page mapped right after a large block, inside the block's 4 MiB slot */

/* Maps single pages at the first 8 page offsets after a 300000-byte block's end (the block is 64 KiB
 * past its 4 MiB-aligned header, so all of them lie in the block's 4 MiB slot); returns how many it got.
 * Aligned to 64 KiB, the block gets a mapping of its own (arenas take alignments up to 8 KiB, and
 * nothing foreign can be mapped inside an arena). */
static int foreign_pages_after_large(char *pages[8]) {
    char *p = memalign(65536, 300000);
    CHECK(p != NULL);
    memset(p, 1, 300000);
    sink = p;
    uintptr_t end = (uintptr_t)p + ((300000 + 4095) & ~(uintptr_t)4095);
    int got = 0;
    for (int k = 0; k < 8; k++) {
        void *want = (void *)(end + (uintptr_t)k * 4096);
        void *q = mmap(want, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                       -1, 0);
        if (q == want) pages[got++] = q;
        else if (q != MAP_FAILED) munmap(q, 4096); /* an old kernel took the address as a hint */
    }
    return got;
}

static int foreign_in_slot(void) {
    char *pages[8];
    int n = foreign_pages_after_large(pages);
    if (n == 0) {
        printf("skip\n");
        return 0;
    }
    int bad = 0;
    for (int i = 0; i < n; i++) {
        size_t u = malloc_usable_size(pages[i]);
        if (u != 0) {
            fprintf(stderr, "malloc_usable_size(%p) = %zu\n", (void *)pages[i], u);
            bad = 1;
        }
    }
    CHECK(!bad);
    return 0;
}

static int foreign_free_in_slot(void) {
    char *pages[8];
    int n = foreign_pages_after_large(pages);
    if (n == 0) {
        printf("skip\n");
        return 0;
    }
    announce(pages[n - 1]);
    free(pages[n - 1]);
    return not_caught();
}

/* ---------------------------------------------------------------------------------------------------
 * 10. under HOPLESS_DEBUG=1, a stack pointer given to free */

static int debug_foreign_free(void) { return invalid_stack(); }

/* --------------------------------------------------------------------------------------------------- */

/* More threads alive at once than there are thread-cache ids (509): every cache beyond works without
 * one. Each thread fills and checks batches larger than a magazine, in both free orders, then frees a
 * neighbour's block while all are alive. */
#define MANY 600
static pthread_barrier_t all_alive;
static void *volatile many_blocks[MANY];

static void *many_worker(void *arg) {
    long id = (long)arg;
    unsigned s = (unsigned)id * 7919u + 1u;
    void *blk[160];
    size_t sz[160];
    for (int r = 0; r < 12; r++) {
        int n = 100 + (r % 3) * 30;
        for (int i = 0; i < n; i++) {
            sz[i] = 8 + (lcg(&s) >> 16) % 256;
            blk[i] = malloc(sz[i]);
            CHECK(blk[i] != NULL);
            memset(blk[i], (int)(i + id), sz[i]);
        }
        for (int i = 0; i < n; i++)
            for (size_t k = 0; k < sz[i]; k++) CHECK(((unsigned char *)blk[i])[k] == (unsigned char)(i + id));
        if (r & 1)
            for (int i = 0; i < n; i++) free(blk[i]);
        else
            for (int i = n - 1; i >= 0; i--) free(blk[i]);
    }
    unsigned char *mine = malloc(64);
    CHECK(mine != NULL);
    memset(mine, (int)id, 64);
    many_blocks[id] = mine;
    pthread_barrier_wait(&all_alive);
    unsigned char *theirs = many_blocks[(id + 1) % MANY];
    for (int k = 0; k < 64; k++) CHECK(theirs[k] == (unsigned char)((id + 1) % MANY));
    pthread_barrier_wait(&all_alive);
    free(theirs);
    return NULL;
}

static int many_threads(void) {
    CHECK(pthread_barrier_init(&all_alive, NULL, MANY) == 0);
    pthread_t t[MANY];
    pthread_attr_t small;
    CHECK(pthread_attr_init(&small) == 0);
    CHECK(pthread_attr_setstacksize(&small, 256 << 10) == 0);
    for (long i = 0; i < MANY; i++) CHECK(pthread_create(&t[i], &small, many_worker, (void *)i) == 0);
    for (int i = 0; i < MANY; i++) CHECK(pthread_join(t[i], NULL) == 0);
    return 0;
}

/* A double free by a thread whose cache got no id (every id taken by a live thread). */
static pthread_barrier_t hold_ids, have_ids;
static void *hold_an_id(void *arg) {
    (void)arg;
    sink = malloc(32);
    free(sink);
    pthread_barrier_wait(&have_ids); /* every holder has its cache (and id) before the double free */
    pthread_barrier_wait(&hold_ids); /* never released: held until the process ends */
    return NULL;
}

static void *double_free_without_id(void *arg) {
    (void)arg;
    char *p = malloc(48);
    CHECK(p != NULL);
    memset(p, 1, 48);
    announce(p);
    free(p);
    free(p);
    return NULL;
}

static int df_no_id(void) {
    CHECK(pthread_barrier_init(&hold_ids, NULL, MANY + 1) == 0);
    CHECK(pthread_barrier_init(&have_ids, NULL, MANY + 1) == 0);
    pthread_t t[MANY];
    pthread_attr_t small;
    CHECK(pthread_attr_init(&small) == 0);
    CHECK(pthread_attr_setstacksize(&small, 256 << 10) == 0);
    for (long i = 0; i < MANY; i++) CHECK(pthread_create(&t[i], &small, hold_an_id, NULL) == 0);
    pthread_barrier_wait(&have_ids);
    pthread_t d;
    CHECK(pthread_create(&d, &small, double_free_without_id, NULL) == 0);
    CHECK(pthread_join(d, NULL) == 0);
    return not_caught();
}

// ---------------------------------------------------------------------------------------------------------
// The thread's remembered segment (free's fast path): frees spread over many segments from many threads,
// thread-specific-data destructors that allocate and free after the allocator's own exit hook, and a
// forked child freeing the parent's blocks.

#define SEG_SLOTS 100000
static void *seg_shared[SEG_SLOTS];
static pthread_key_t seg_early, seg_late;

static void seg_dtor(void *v) {
    free(v);
    for (int i = 0; i < 300; i++) {
        char *p = malloc(16 + (i * 37) % 3000);
        if (!p) abort();
        memset(p, i, 16);
        void *q = malloc(200000);
        if (!q) abort();
        free(p);
        free(q);
        free(NULL);
        // a block of the shared array: another segment, allocated by another thread
        void *o = __atomic_exchange_n(&seg_shared[(i * 7919) % SEG_SLOTS], NULL, __ATOMIC_ACQ_REL);
        if (o) free(o);
    }
    static __thread int rounds;
    if (rounds++ < 2) pthread_setspecific(seg_early, malloc(64));
}

static uint64_t seg_rng(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void *seg_worker(void *arg) {
    uint64_t s = (uint64_t)(uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
    pthread_setspecific(seg_early, malloc(32));
    pthread_setspecific(seg_late, malloc(48));
    for (int i = 0; i < 60000; i++) {
        size_t k = seg_rng(&s) % SEG_SLOTS;
        uint64_t *p = __atomic_exchange_n(&seg_shared[k], NULL, __ATOMIC_ACQ_REL);
        if (p) {
            if (p[0] != (uint64_t)k) {
                fprintf(stderr, "block %zu holds %llu\n", k, (unsigned long long)p[0]);
                abort();
            }
            free(p);
        }
        size_t sz = 8 + seg_rng(&s) % 1024;
        if (seg_rng(&s) % 97 == 0) sz = 100000 + seg_rng(&s) % 300000;
        uint64_t *q = malloc(sz);
        if (!q) abort();
        q[0] = k;
        void *old = __atomic_exchange_n(&seg_shared[k], q, __ATOMIC_ACQ_REL);
        if (old) free(old);
    }
    return NULL;
}

static int segments_threads_fork(void) {
    CHECK(pthread_key_create(&seg_early, seg_dtor) == 0);
    free(malloc(10)); // the allocator's own exit hook is registered between the two keys
    CHECK(pthread_key_create(&seg_late, seg_dtor) == 0);
    for (int k = 0; k < SEG_SLOTS; k++) {
        uint64_t *q = malloc(8 + (k * 131) % 2048); // about 100 MB over many segments
        CHECK(q != NULL);
        q[0] = k;
        seg_shared[k] = q;
    }
    for (int round = 0; round < 2; round++) {
        pthread_t t[12];
        for (int i = 0; i < 12; i++)
            CHECK(pthread_create(&t[i], NULL, seg_worker, (void *)(uintptr_t)(1 + i + round * 12)) == 0);
        for (int i = 0; i < 12; i++) CHECK(pthread_join(t[i], NULL) == 0);
        pid_t pid = fork();
        CHECK(pid >= 0);
        if (pid == 0) {
            for (int k = 0; k < SEG_SLOTS; k++) {
                uint64_t *q = seg_shared[k];
                if (q) {
                    if (q[0] != (uint64_t)k) _exit(3);
                    free(q);
                    seg_shared[k] = NULL;
                }
            }
            for (int k = 0; k < 50000; k++) free(malloc(k % 4000));
            _exit(0);
        }
        int st;
        CHECK(waitpid(pid, &st, 0) == pid);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    for (int k = 0; k < SEG_SLOTS; k++) free(seg_shared[k]);
    return 0;
}

// A double free whose block is in another segment than the thread's last free.
static int df_other_segment(void) {
    enum { N = 60000 };
    static char *a[N];
    for (int i = 0; i < N; i++) {
        a[i] = malloc(200); // about 12 MB: several segments
        CHECK(a[i] != NULL);
        memset(a[i], 1, 200);
    }
    CHECK(((uintptr_t)a[0] >> 22) != ((uintptr_t)a[N - 1] >> 22));
    announce(a[0]);
    free(a[0]);
    free(a[N - 1]);
    free(a[0]);
    return not_caught();
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s CASE [ARG]\n", argv[0]);
        return 2;
    }
    const char *c = argv[1], *arg = argc > 2 ? argv[2] : NULL;
    int rc;
    if (!strcmp(c, "large_churn")) rc = large_churn(arg);
    else if (!strcmp(c, "large_threads")) rc = large_threads();
    else if (!strcmp(c, "fork_atfork_before")) rc = fork_atfork_before();
    else if (!strcmp(c, "fork_atfork_after")) rc = fork_atfork_after();
    else if (!strcmp(c, "fork_threads")) rc = fork_threads();
    else if (!strcmp(c, "many_keys")) rc = many_keys(arg);
    else if (!strcmp(c, "df_immediate")) rc = df_immediate();
    else if (!strcmp(c, "df_delayed")) rc = df_delayed();
    else if (!strcmp(c, "df_after_shift")) rc = df_after_shift();
    else if (!strcmp(c, "df_refilled")) rc = df_refilled();
    else if (!strcmp(c, "df_interleaved")) rc = df_interleaved();
    else if (!strcmp(c, "df_cross_thread")) rc = df_cross_thread();
    else if (!strcmp(c, "df_after_thread_exit")) rc = df_after_thread_exit();
    else if (!strcmp(c, "df_sizes")) rc = df_sizes(arg);
    else if (!strcmp(c, "df_large")) rc = df_large();
    else if (!strcmp(c, "invalid_interior")) rc = invalid_interior();
    else if (!strcmp(c, "invalid_stack")) rc = invalid_stack();
    else if (!strcmp(c, "invalid_metadata")) rc = invalid_metadata();
    else if (!strcmp(c, "invalid_never_allocated")) rc = invalid_never_allocated();
    else if (!strcmp(c, "no_false_positive")) rc = no_false_positive();
    else if (!strcmp(c, "aligned_many")) rc = aligned_many();
    else if (!strcmp(c, "aligned_pagetables")) rc = aligned_pagetables();
    else if (!strcmp(c, "aligned_huge")) rc = aligned_huge();
    else if (!strcmp(c, "realloc_grow")) rc = realloc_grow();
    else if (!strcmp(c, "enomem")) rc = enomem();
    else if (!strcmp(c, "thread_rss")) rc = thread_rss();
    else if (!strcmp(c, "thread_churn")) rc = thread_churn();
    else if (!strcmp(c, "realtime_beside_ordinary")) rc = realtime_beside_ordinary();
    else if (!strcmp(c, "tsd_late_round")) rc = tsd_late_round();
    else if (!strcmp(c, "foreign_in_slot")) rc = foreign_in_slot();
    else if (!strcmp(c, "foreign_free_in_slot")) rc = foreign_free_in_slot();
    else if (!strcmp(c, "debug_foreign_free")) rc = debug_foreign_free();
    else if (!strcmp(c, "many_threads")) rc = many_threads();
    else if (!strcmp(c, "df_no_id")) rc = df_no_id();
    else if (!strcmp(c, "segments_threads_fork")) rc = segments_threads_fork();
    else if (!strcmp(c, "df_other_segment")) rc = df_other_segment();
    else {
        fprintf(stderr, "unknown case %s\n", c);
        return 2;
    }
    if (rc == 0) printf("ok\n");
    return rc;
}

/* glibc's introspection calls (mallinfo2, mallinfo, malloc_stats, malloc_info, mallopt) answered from
 * hopless's counts, checked against what the program allocated and frees.
 *
 *   api basic     the counts follow 1000 blocks of 4 KiB and a 10 MiB block in and out; the reports'
 *                 text agrees with mallinfo2; mallinfo saturates; prints "ok"
 *   api mallopt   mallopt's answers and malloc_info's to bad arguments, printed for a comparison
 *                 with glibc's (the test runs this without hopless too)
 *   api threads   the calls from several threads while others allocate and free; prints "ok"
 *   api empty     malloc_stats and mallinfo2 before anything is allocated
 *   api extension (built with -DWITH_HOPLESS_H, linked) every call of hopless.h, and hopless_stats
 *                 and the stats table against mallinfo2; prints "ok"
 *
 * Runs preloaded (LD_PRELOAD=libhopless.so) and linked (-lhopless). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef WITH_HOPLESS_H
#include <hopless.h>
#endif

#define CHECK(c)                                                                                     \
    do {                                                                                             \
        if (!(c)) {                                                                                  \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                   \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

/* Blocks the compiler cannot see freed unused (it may drop a malloc/free pair it can see). */
static void *volatile blocks[1000];
static void *volatile big;

static void show(const char *what, struct mallinfo2 m) {
    fprintf(stderr,
            "%s: arena %zu ordblks %zu smblks %zu hblks %zu hblkhd %zu fsmblks %zu uordblks %zu fordblks "
            "%zu keepcost %zu\n",
            what, m.arena, m.ordblks, m.smblks, m.hblks, m.hblkhd, m.fsmblks, m.uordblks, m.fordblks,
            m.keepcost);
}

/* What holds for any snapshot, even one taken while other threads allocate. */
static void check_shape(struct mallinfo2 m) {
    CHECK(m.usmblks == 0);
    CHECK(m.fordblks == (m.arena > m.uordblks ? m.arena - m.uordblks : 0));
    CHECK(m.hblkhd >= m.hblks * (256 * KIB));
    CHECK(m.fsmblks >= m.smblks * 8);
    CHECK(m.uordblks < ((size_t)1 << 46)); /* no count went below zero and wrapped */
    CHECK(m.arena < ((size_t)1 << 46));
}

static size_t diff(size_t a, size_t b) { return a > b ? a - b : b - a; }

/* stderr's text while `f` runs, in a buffer of `cap` bytes; returns its length. */
static size_t capture_stderr(void (*f)(void), char *buf, size_t cap) {
    FILE *tmp = tmpfile();
    CHECK(tmp != NULL);
    fflush(stderr);
    int saved = dup(2);
    CHECK(saved >= 0 && dup2(fileno(tmp), 2) == 2);
    f();
    CHECK(dup2(saved, 2) == 2);
    close(saved);
    CHECK(fseek(tmp, 0, SEEK_SET) == 0);
    size_t n = fread(buf, 1, cap - 1, tmp);
    buf[n] = 0;
    fclose(tmp);
    return n;
}

static struct mallinfo2 stats_at;
static void stats_now(void) {
    stats_at = mallinfo2();
    malloc_stats();
}

/* malloc_stats prints glibc's lines, with the numbers mallinfo2 gives for the same state. */
static void check_malloc_stats(void) {
    static char out[4096], want[4096];
    capture_stderr(stats_now, out, sizeof out);
    unsigned long regions = 0, bytes = 0;
    const char *tail = strstr(out, "max mmap regions = ");
    CHECK(tail != NULL && sscanf(tail, "max mmap regions = %lu\nmax mmap bytes   = %lu", &regions, &bytes) == 2);
    snprintf(want, sizeof want,
             "Arena 0:\nsystem bytes     = %10zu\nin use bytes     = %10zu\nTotal (incl. mmap):\n"
             "system bytes     = %10zu\nin use bytes     = %10zu\nmax mmap regions = %10lu\n"
             "max mmap bytes   = %10lu\n",
             stats_at.arena, stats_at.uordblks, stats_at.arena + stats_at.hblkhd,
             stats_at.uordblks + stats_at.hblkhd, regions, bytes);
    if (strcmp(out, want) != 0) {
        fprintf(stderr, "malloc_stats wrote:\n%s\nexpected:\n%s\n", out, want);
        exit(1);
    }
    CHECK(regions >= 1 && bytes >= 10 * MIB); /* the 10 MiB block was in use once */
}

/* malloc_info writes glibc's XML, whose totals are mallinfo2's for the same state. */
static void check_malloc_info(void) {
    char *xml = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&xml, &len); /* its buffer is malloc'd while malloc_info writes */
    CHECK(f != NULL);
    CHECK(malloc_info(1, f) == EINVAL); /* glibc returns the error number */
    CHECK(malloc_info(-1, f) == EINVAL);
    CHECK(malloc_info(0, NULL) == EINVAL);
    fflush(f);
    CHECK(len == 0);
    struct mallinfo2 m = mallinfo2();
    CHECK(malloc_info(0, f) == 0);
    CHECK(fclose(f) == 0);
    CHECK(strncmp(xml, "<malloc version=\"1\">\n<heap nr=\"0\">\n<sizes>\n", 40) == 0);
    CHECK(len > 10 && strcmp(xml + len - 10, "</malloc>\n") == 0);
    size_t sizes = 0, counted = 0, fast_n = 0, fast_b = 0, rest_n = 0, rest_b = 0, mmap_n = 0, mmap_b = 0,
           current = 0, lines = 0;
    int in_heap = 0;
    for (char *line = strtok(xml, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        size_t a, b, c, d;
        lines++;
        if (sscanf(line, "  <size from=\"%zu\" to=\"%zu\" total=\"%zu\" count=\"%zu\"/>", &a, &b, &c, &d) == 4) {
            CHECK(a <= b && c == b * d && d > 0);
            sizes++;
            counted += d;
        } else if (sscanf(line, "<total type=\"fast\" count=\"%zu\" size=\"%zu\"/>", &a, &b) == 2) {
            fast_n = a, fast_b = b;
        } else if (sscanf(line, "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>", &a, &b) == 2) {
            rest_n = a, rest_b = b;
        } else if (sscanf(line, "<total type=\"mmap\" count=\"%zu\" size=\"%zu\"/>", &a, &b) == 2) {
            mmap_n = a, mmap_b = b;
        } else if (sscanf(line, "<system type=\"current\" size=\"%zu\"/>", &a) == 1) {
            current = a;
        } else if (strcmp(line, "<heap nr=\"0\">") == 0) {
            in_heap++;
        } else {
            CHECK(strncmp(line, "<system type=\"max\"", 18) == 0 || strncmp(line, "<aspace ", 8) == 0 ||
                  strcmp(line, "<sizes>") == 0 || strcmp(line, "</sizes>") == 0 ||
                  strcmp(line, "</heap>") == 0 || strcmp(line, "<malloc version=\"1\">") == 0 ||
                  strcmp(line, "</malloc>") == 0);
        }
    }
    CHECK(in_heap == 1 && lines >= 18);
    CHECK(fast_n == m.smblks && fast_b == m.fsmblks && rest_n == m.ordblks);
    CHECK(rest_b + fast_b == m.fordblks);
    CHECK(mmap_n == m.hblks && mmap_b == m.hblkhd && current == m.arena);
    CHECK(counted == fast_n + rest_n);
    CHECK(sizes > 0);
    free(xml);
}

static int basic(void) {
    struct mallinfo2 m0 = mallinfo2();
    check_shape(m0);
    for (int i = 0; i < 1000; i++) {
        blocks[i] = malloc(4 * KIB);
        CHECK(blocks[i] != NULL);
        memset(blocks[i], i, 4 * KIB);
    }
    struct mallinfo2 m1 = mallinfo2();
    show("1000 x 4 KiB", m1);
    check_shape(m1);
    /* Exactly the blocks handed out: those the magazines hold are not counted. */
    CHECK(m1.uordblks - m0.uordblks == 1000 * 4 * KIB);
    CHECK(m1.arena >= m0.arena + 1000 * 4 * KIB);
    CHECK(m1.hblks == m0.hblks && m1.hblkhd == m0.hblkhd);

    big = malloc(10 * MIB);
    CHECK(big != NULL);
    memset(big, 1, 10 * MIB);
    struct mallinfo2 m2 = mallinfo2();
    show("and 10 MiB", m2);
    check_shape(m2);
    CHECK(m2.hblks == m1.hblks + 1);
    CHECK(m2.hblkhd - m1.hblkhd >= 10 * MIB && m2.hblkhd - m1.hblkhd <= 10 * MIB + 64 * KIB);
    /* As in glibc, the large block is in hblkhd alone: uordblks + hblkhd is everything in use. */
    CHECK(diff(m2.uordblks, m1.uordblks) <= 4 * KIB);
    CHECK(m2.arena + m2.hblkhd >= m1.arena + m1.hblkhd + 10 * MIB);

    /* mallinfo is mallinfo2 in ints, where they fit. */
    struct mallinfo2 a = mallinfo2();
    struct mallinfo i = mallinfo();
    CHECK((size_t)i.arena == a.arena && (size_t)i.uordblks == a.uordblks && (size_t)i.hblkhd == a.hblkhd);
    CHECK((size_t)i.hblks == a.hblks && (size_t)i.fordblks == a.fordblks && (size_t)i.smblks == a.smblks);

    check_malloc_stats();
    check_malloc_info();

    for (int i = 0; i < 1000; i++)
        free(blocks[i]);
    struct mallinfo2 m3 = mallinfo2();
    show("4 KiB blocks freed", m3);
    check_shape(m3);
    /* A free may start hopless's background thread, for which libc allocates a little (its DTV). */
    CHECK(m3.uordblks <= m2.uordblks - 1000 * 4 * KIB + 4 * KIB);
    CHECK(m3.uordblks >= m2.uordblks - 1000 * 4 * KIB);
    /* Held and free now (in magazines, free in their slabs, or their slabs in the pools), or gone
     * back to the OS. */
    CHECK(m3.fordblks + (m2.arena > m3.arena ? m2.arena - m3.arena : 0) >= 1000 * 4 * KIB);
    free(big);
    struct mallinfo2 m4 = mallinfo2();
    show("10 MiB freed", m4);
    check_shape(m4);
    CHECK(m4.hblks == m0.hblks && m4.hblkhd == m0.hblkhd);
    CHECK(diff(m4.uordblks, m0.uordblks) <= 64 * KIB); /* stdio's buffers at most */

    malloc_trim(0);
    struct mallinfo2 m5 = mallinfo2();
    show("trimmed", m5);
    check_shape(m5);
    CHECK(m5.keepcost == 0 && m5.smblks == 0);
    CHECK(m5.arena + m5.hblkhd < m2.arena + m2.hblkhd);

    /* Past INT_MAX, mallinfo's ints saturate (glibc's wrap). */
    void *volatile huge = malloc((size_t)3 << 30);
    if (huge != NULL) {
        struct mallinfo2 h2 = mallinfo2();
        struct mallinfo h = mallinfo();
        CHECK(h2.hblkhd >= (size_t)3 << 30 && h2.uordblks < (size_t)1 << 30);
        CHECK(h.hblkhd == INT_MAX && (size_t)h.uordblks == h2.uordblks);
        CHECK(h.hblks == (int)h2.hblks && h.usmblks == 0);
        free(huge);
    } else {
        fprintf(stderr, "3 GiB not available: mallinfo's saturation not checked\n");
    }
    printf("ok\n");
    return 0;
}

static int options(void) {
    static const int params[] = {M_MXFAST, 2, 3, 4, M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD, M_MMAP_MAX,
                                 M_CHECK_ACTION, M_PERTURB, M_ARENA_TEST, M_ARENA_MAX, 0, 5, -9, 12345,
                                 INT_MIN, INT_MAX};
    static const int values[] = {-1, 0, 1, 64, 160, 161, 1 << 20, 32 << 20, (32 << 20) + 1, 64 << 20,
                                 INT_MAX, INT_MIN};
    for (size_t p = 0; p < sizeof params / sizeof *params; p++) {
        printf("mallopt(%d, ...):", params[p]);
        for (size_t v = 0; v < sizeof values / sizeof *values; v++)
            printf(" %d", mallopt(params[p], values[v]));
        printf("\n");
    }
    FILE *null = fopen("/dev/null", "w");
    CHECK(null != NULL);
    errno = 0;
    int r = malloc_info(1, null);
    printf("malloc_info(1, f) = %d, errno %d\n", r, errno);
    errno = 0;
    r = malloc_info(INT_MIN, null);
    printf("malloc_info(INT_MIN, f) = %d, errno %d\n", r, errno);
    fclose(null);
    return 0;
}

/* Threads that allocate and free (small, medium and large blocks) while others read the counts. */
static volatile int stop;

static void *churn(void *arg) {
    unsigned seed = (unsigned)(size_t)arg;
    void *held[256] = {0};
    while (!stop) {
        for (int i = 0; i < 256; i++) {
            seed = seed * 1103515245u + 12345u;
            size_t size = (seed >> 8) % 8 == 0 ? 300 * KIB + (seed >> 16) % (64 * KIB) : (seed >> 12) % 5000 + 1;
            free(held[i]);
            held[i] = malloc(size);
            CHECK(held[i] != NULL);
        }
    }
    for (int i = 0; i < 256; i++)
        free(held[i]);
    return NULL;
}

static void *watch(void *arg) {
    FILE *null = (FILE *)arg;
    long n = 0;
    while (!stop) {
        check_shape(mallinfo2());
        struct mallinfo i = mallinfo();
        CHECK(i.uordblks >= 0 && i.arena >= 0 && i.fordblks >= 0);
        if (++n % 16 == 0)
            CHECK(malloc_info(0, null) == 0);
    }
    return NULL;
}

static int threads(void) {
    struct mallinfo2 before = mallinfo2();
    FILE *null = fopen("/dev/null", "w");
    CHECK(null != NULL);
    pthread_t t[7];
    for (size_t i = 0; i < 4; i++)
        CHECK(pthread_create(&t[i], NULL, churn, (void *)(i + 1)) == 0);
    for (size_t i = 4; i < 7; i++)
        CHECK(pthread_create(&t[i], NULL, watch, null) == 0);
    usleep(500 * 1000);
    stop = 1;
    for (size_t i = 0; i < 7; i++)
        CHECK(pthread_join(t[i], NULL) == 0);
    fclose(null);
    struct mallinfo2 after = mallinfo2();
    show("before", before);
    show("after", after);
    /* The churning threads freed everything and exited (their magazines went back to the slabs). */
    CHECK(after.hblks == before.hblks && after.hblkhd == before.hblkhd);
    CHECK(diff(after.uordblks, before.uordblks) <= 64 * KIB);
    printf("ok\n");
    return 0;
}

#ifdef WITH_HOPLESS_H
/* hopless_stats and mallinfo2 of one state (nothing allocated between them) agree. */
static void check_stats_agree(void) {
    struct mallinfo2 m = mallinfo2();
    struct hopless_stats s;
    CHECK(hopless_stats(&s, sizeof s) == sizeof s && s.size == sizeof s);
    CHECK(s.bytes_in_use == m.uordblks + m.hblkhd && s.bytes_held == m.arena + m.hblkhd);
    CHECK(s.bytes_cached == m.fsmblks);
    CHECK(s.large_bytes_in_use == m.hblkhd && s.large_blocks_in_use == m.hblks);
    CHECK(s.bytes_held == s.slab_bytes + s.free_slab_bytes + s.large_bytes_in_use + s.large_cached_bytes);
    CHECK(s.large_peak_blocks >= s.large_blocks_in_use && s.large_peak_bytes >= s.large_bytes_in_use);
}

static struct hopless_stats table_at;
static void table_now(void) {
    CHECK(hopless_stats(&table_at, sizeof table_at) == sizeof table_at);
    hopless_print_stats();
}

static size_t in_use(void) {
    struct hopless_stats s;
    CHECK(hopless_stats(&s, sizeof s) == sizeof s);
    return s.bytes_in_use;
}

/* Back to `before`, but for what libc allocates (its DTV) when a free starts hopless's background
 * thread. */
static void check_back_to(size_t before) {
    size_t now = in_use();
    CHECK(now >= before && now <= before + 4 * KIB);
}

static int extension(void) {
    /* The versioned struct: as much as both sides know, nothing past it. */
    struct {
        struct hopless_stats s;
        size_t later[4];
    } wide;
    memset(&wide, 0xab, sizeof wide);
    CHECK(hopless_stats(&wide.s, sizeof wide) == sizeof wide.s && wide.s.size == sizeof wide.s);
    for (size_t i = 0; i < 4; i++)
        CHECK(wide.later[i] == (size_t)0xabababababababab);
    struct hopless_stats s;
    memset(&s, 0xab, sizeof s);
    CHECK(hopless_stats(&s, sizeof(size_t)) == sizeof(size_t) && s.size == sizeof(size_t));
    CHECK(s.bytes_in_use == (size_t)0xabababababababab);
    CHECK(hopless_stats(&s, 2 * sizeof(size_t)) == 2 * sizeof(size_t) && s.bytes_held == (size_t)0xabababababababab);
    CHECK(hopless_stats(&s, sizeof(size_t) - 1) == 0 && s.size == 2 * sizeof(size_t));
    CHECK(hopless_stats(NULL, sizeof s) == 0);
    check_stats_agree();

    /* A batch of 500 blocks of 100 bytes: one class, counted exactly. */
    static void *out[1000];
    size_t before = in_use();
    CHECK(hopless_malloc_batch(100, out, 500) == 500);
    size_t usable = hopless_usable_size(out[0]);
    CHECK(usable >= 100 && usable == malloc_usable_size(out[0]));
    for (size_t i = 0; i < 500; i++) {
        CHECK(out[i] != NULL && (size_t)out[i] % 16 == 0 && hopless_usable_size(out[i]) == usable);
        memset(out[i], (int)i, 100);
        for (size_t j = 0; j < i; j += 97)
            CHECK(out[j] != out[i]);
    }
    CHECK(in_use() - before == 500 * usable);
    check_stats_agree();
    hopless_free_batch(out, 500);
    check_back_to(before);

    /* Any blocks in one batch free: sizes of every kind, from every call, and null entries. */
    size_t n = 0;
    out[n++] = malloc(1);
    out[n++] = NULL;
    out[n++] = calloc(10, 300);
    out[n++] = malloc(100 * KIB);
    out[n++] = malloc(3 * MIB);
    out[n++] = realloc(malloc(10), 5000);
    CHECK(posix_memalign(&out[n++], 4096, 50) == 0);
    CHECK(hopless_malloc_batch(0, out + n, 3) == 3); /* malloc(0)'s blocks */
    CHECK(out[n] != out[n + 1] && hopless_usable_size(out[n]) >= 1);
    n += 3;
    CHECK(hopless_malloc_batch(MIB, out + n, 4) == 4); /* large blocks, in a batch too */
    n += 4;
    for (size_t i = 0; i < n; i++)
        CHECK(i == 1 || out[i] != NULL);
    CHECK(in_use() > before + 7 * MIB);
    hopless_free_batch(out, n);
    check_back_to(before);
    check_stats_agree();

    /* Bad arguments. */
    errno = 0;
    CHECK(hopless_malloc_batch(16, out, 0) == 0 && errno == 0);
    CHECK(hopless_malloc_batch(16, NULL, 5) == 0 && errno == EINVAL);
    errno = 0;
    CHECK(hopless_malloc_batch((size_t)-1, out, 2) == 0 && errno == ENOMEM);
    errno = 0;
    CHECK(hopless_malloc_batch((size_t)1 << 62, out, 2) == 0 && errno == ENOMEM);
    hopless_free_batch(NULL, 10);
    hopless_free_batch(out, 0);
    int local = 0;
    CHECK(hopless_usable_size(NULL) == 0 && hopless_usable_size(&local) == 0);

    /* Huge pages on and off for what comes next. */
    hopless_set_huge_pages(1);
    void *volatile big2 = malloc(8 * MIB);
    CHECK(big2 != NULL);
    memset(big2, 3, 8 * MIB);
    free(big2);
    hopless_set_huge_pages(0);

    /* Trim: nothing free is kept (one thread: its cache is the only one). */
    hopless_trim();
    CHECK(hopless_stats(&s, sizeof s) == sizeof s);
    CHECK(s.free_slab_bytes == 0 && s.large_cached_bytes == 0 && s.bytes_cached == 0);
    CHECK(s.segments > 0 && s.thread_caches >= 1);

    /* The stats table's totals are hopless_stats's. */
    static char table[64 * 1024];
    capture_stderr(table_now, table, sizeof table);
    const char *held = strstr(table, "\nheld: ");
    CHECK(strstr(table, "alloc_fast") != NULL && held != NULL);
    size_t h, slabs, free_slabs, large, cached, handed, mags;
    CHECK(sscanf(held, "\nheld: %zu B (slabs %zu B, free slabs %zu B, large %zu B in use and %zu B cached); "
                       "%zu B handed out, %zu B in magazines",
                 &h, &slabs, &free_slabs, &large, &cached, &handed, &mags) == 7);
    CHECK(h == table_at.bytes_held && slabs == table_at.slab_bytes && free_slabs == table_at.free_slab_bytes);
    CHECK(large == table_at.large_bytes_in_use && cached == table_at.large_cached_bytes);
    CHECK(handed == table_at.bytes_in_use && mags == table_at.bytes_cached);
    printf("ok\n");
    return 0;
}
#endif

#ifdef WITH_HOPLESS_H
/* The memory limit: HOPLESS_LIMIT (16 MiB, set by the test) refuses what would pass it with ENOMEM and
 * nothing before; hopless_set_limit moves it; lifted, the same requests go through. */
static int limit(void) {
    struct hopless_stats s;
    CHECK(hopless_limit() == 16 * MIB);
    errno = 0;
    void *volatile too_big = malloc(32 * MIB);
    CHECK(too_big == NULL && errno == ENOMEM);
    /* 1 MiB blocks until the limit: each success within it, the refusal one the next block needed. */
    static void *blocks[64];
    int n = 0;
    for (; n < 64; n++) {
        /* Read before: a refusal may follow a trim (this thread's, or the background thread's after
         * it), which only lowers the count. */
        struct hopless_stats before;
        CHECK(hopless_stats(&before, sizeof before) == sizeof before);
        errno = 0;
        blocks[n] = malloc(MIB);
        CHECK(hopless_stats(&s, sizeof s) == sizeof s);
        if (blocks[n] == NULL) {
            CHECK(errno == ENOMEM && before.limit_held_bytes + MIB > s.limit);
            break;
        }
        CHECK(s.limit_held_bytes <= s.limit);
        memset(blocks[n], 5, MIB);
    }
    CHECK(n >= 12 && n < 16 && s.limit == 16 * MIB && s.limit_refusals >= 2);
    /* calloc, realloc and posix_memalign at the limit fail the same way and leave their block. */
    errno = 0;
    CHECK(calloc(MIB, 2) == NULL && errno == ENOMEM);
    void *grown = realloc(blocks[0], 8 * MIB);
    CHECK(grown == NULL && errno == ENOMEM && ((unsigned char *)blocks[0])[MIB - 1] == 5);
    void *aligned = NULL;
    CHECK(posix_memalign(&aligned, 4096, 2 * MIB) == ENOMEM && aligned == NULL);
    /* Raised, the same request goes through. */
    hopless_set_limit(64 * MIB);
    CHECK(hopless_limit() == 64 * MIB);
    too_big = malloc(32 * MIB);
    CHECK(too_big != NULL);
    free(too_big);
    /* Lifted. */
    hopless_set_limit(0);
    CHECK(hopless_limit() == 0 && hopless_stats(&s, sizeof s) == sizeof s && s.limit == 0);
    for (int i = 0; i < n; i++)
        free(blocks[i]);
    printf("ok\n");
    return 0;
}
#endif

#ifdef WITH_HOPLESS_H
/* The heap profile from C: started with a 4 KiB interval, 2000 blocks of 1000 B kept from
 * keep_for_profile, the dump written to $PROF_PATH (read back by the test); a bad path is an error
 * number, in errno too. */
__attribute__((noinline)) static void keep_for_profile(void **blocks, int n) {
    for (int i = 0; i < n; i++) {
        blocks[i] = malloc(1000);
        memset(blocks[i], 7, 1000);
    }
}

static int profile(void) {
    static void *blocks[2000];
    hopless_prof_start(4096);
    keep_for_profile(blocks, 2000);
    errno = 0;
    CHECK(hopless_prof_dump(NULL) == EINVAL && errno == EINVAL);
    errno = 0;
    CHECK(hopless_prof_dump("/nonexistent/dir/heap.pb.gz") == ENOENT && errno == ENOENT);
    const char *path = getenv("PROF_PATH");
    CHECK(path != NULL && hopless_prof_dump(path) == 0);
    hopless_prof_stop();
    for (int i = 0; i < 2000; i++) {
        CHECK(((unsigned char *)blocks[i])[999] == 7);
        free(blocks[i]);
    }
    printf("ok\n");
    return 0;
}
#endif

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "empty") == 0) {
        malloc_stats(); /* before anything else: nothing allocated yet, or very little */
        struct mallinfo2 m = mallinfo2();
        check_shape(m);
        printf("uordblks %zu arena %zu\n", m.uordblks, m.arena);
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "basic") == 0)
        return basic();
    if (argc > 1 && strcmp(argv[1], "mallopt") == 0)
        return options();
    if (argc > 1 && strcmp(argv[1], "threads") == 0)
        return threads();
#ifdef WITH_HOPLESS_H
    if (argc > 1 && strcmp(argv[1], "extension") == 0)
        return extension();
    if (argc > 1 && strcmp(argv[1], "limit") == 0)
        return limit();
    if (argc > 1 && strcmp(argv[1], "profile") == 0)
        return profile();
#endif
    fprintf(stderr, "usage: %s basic|mallopt|threads|empty|extension\n", argv[0]);
    return 2;
}

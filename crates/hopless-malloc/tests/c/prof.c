/* A program for the heap profile's tests, built -O2 -g without frame pointers (as distributions build
 * programs), run under LD_PRELOAD with HOPLESS_PROF=1. What it keeps until exit comes from named
 * functions, so that the profile and the leak report can be checked against them:
 *   leak     leak_small_blocks: 1000 blocks of 4 KiB; leak_big_blocks: 10 of 1 MiB; churn: 200000
 *            blocks freed at once (in the allocation profile, not in use)
 *   threads  8 threads each keep 1 MiB from thread_leak (256 blocks of 4 KiB) and exit; 1000 short
 *            threads allocate and free
 *   fork     leak_small_blocks, then a child keeps 2 MiB from child_leak and exits (its own profile,
 *            through HOPLESS_PROF_DUMP's %p)
 *   signal   leak_small_blocks, then raise(SIGUSR2): HOPLESS_PROF_SIGNAL=USR2 writes PATH.1 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *kept[4096];
static int nkept;

static void keep(void *p) {
    if (!p) { fprintf(stderr, "out of memory\n"); exit(1); }
    memset(p, 1, 64);
    kept[nkept++ % 4096] = p;
}

__attribute__((noinline)) void leak_small_blocks(void) {
    for (int i = 0; i < 1000; i++) keep(malloc(4096));
}

__attribute__((noinline)) void leak_big_blocks(void) {
    for (int i = 0; i < 10; i++) keep(malloc(1 << 20));
}

__attribute__((noinline)) void churn(void) {
    for (int i = 0; i < 200000; i++) {
        char *p = malloc(100 + i % 900);
        ((volatile char *)p)[0] = 1;
        free(p);
    }
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) void thread_leak(void) {
    for (int i = 0; i < 256; i++) {
        void *p = malloc(4096);
        pthread_mutex_lock(&lock);
        keep(p);
        pthread_mutex_unlock(&lock);
    }
}

static void *leaker(void *arg) { (void)arg; thread_leak(); return NULL; }
static void *short_lived(void *arg) { (void)arg; free(malloc(1000)); return NULL; }

__attribute__((noinline)) void child_leak(void) {
    for (int i = 0; i < 512; i++) keep(malloc(4096));
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "leak";
    if (!strcmp(mode, "leak")) {
        leak_small_blocks();
        leak_big_blocks();
        churn();
    } else if (!strcmp(mode, "threads")) {
        pthread_t t[8];
        for (int i = 0; i < 8; i++) pthread_create(&t[i], NULL, leaker, NULL);
        for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
        for (int i = 0; i < 1000; i++) {
            pthread_t s;
            pthread_create(&s, NULL, short_lived, NULL);
            pthread_join(s, NULL);
        }
    } else if (!strcmp(mode, "fork")) {
        leak_small_blocks();
        pid_t pid = fork();
        if (pid == 0) {
            child_leak();
            exit(0);
        }
        int status;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) { fprintf(stderr, "child failed\n"); return 1; }
        printf("child %d\n", (int)pid);
    } else if (!strcmp(mode, "signal")) {
        leak_small_blocks();
        raise(SIGUSR2);
        leak_big_blocks();
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    printf("pid %d\n", (int)getpid());
    return 0;
}

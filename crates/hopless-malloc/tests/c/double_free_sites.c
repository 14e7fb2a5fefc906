// A double free whose report must name both functions that freed: built -O2 -g without frame
// pointers (as distributions build programs), run with HOPLESS_DEBUG=1. The functions are static: no
// dynamic symbol names them, only the file's symbol table.
#include <stdlib.h>
#include <string.h>

// Written by each function, so the compiler cannot fold the two into one.
static volatile int last_release;

__attribute__((noinline)) static void release_the_request(void *p) {
    last_release = 1;
    free(p);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void release_the_request_again(void *p) {
    last_release = 2;
    free(p);
    __asm__ volatile("" ::: "memory");
}

int main(void) {
    char *volatile p = malloc(64);
    memset(p, 1, 64);
    release_the_request(p);
    // Other traffic between the two frees, so the first one is found in the ring, not merely last.
    for (int i = 0; i < 20; i++) free(malloc(32 + i));
    release_the_request_again(p);
    return 0;
}

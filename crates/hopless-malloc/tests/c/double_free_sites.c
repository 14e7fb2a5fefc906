// A double free whose report must name both functions that freed: built -O2 -g without frame
// pointers (as distributions build programs) and -rdynamic (so dladdr can name the program's own
// functions), run with HOPLESS_DEBUG=1.
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) void release_the_request(void *p) {
    free(p);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void release_the_request_again(void *p) {
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

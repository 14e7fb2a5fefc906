/* hopless.h: hopless's own calls in libhopless.so, beside the C malloc family it exports.
 *
 * Link with -lhopless (pkg-config --cflags --libs hopless). Every block these calls hand out is an
 * ordinary malloc block: free, realloc and malloc_usable_size take it, and hopless_free_batch takes
 * any block. The library also answers glibc's introspection calls from its own counts: mallinfo2,
 * mallinfo (each int saturating at INT_MAX), malloc_stats, malloc_info and mallopt (accepted, no
 * effect), declared in <malloc.h>.
 *
 * Thread safety: every call may be made from any thread at any time. C89 and C++ clean. */
#ifndef HOPLESS_H
#define HOPLESS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Allocates n blocks of size bytes each (aligned as malloc aligns them) into out[0..n): from the
 * calling thread's cache first, the rest from the central heap with one lock hold per batch.
 * Returns how many were allocated, fewer than n only when memory ran out (errno is then ENOMEM and
 * out past the count is unspecified). A size of 0 gives 1-byte blocks, as malloc(0) does. A null out
 * with n > 0 returns 0 with errno EINVAL. */
size_t hopless_malloc_batch(size_t size, void **out, size_t n);

/* Frees blocks[0..n): any hopless blocks of any sizes (from hopless_malloc_batch or any allocation
 * call), each as free() would; null entries are skipped, a null blocks frees nothing. A pointer that
 * is not a live hopless block is reported and stops the process, as free() does. */
void hopless_free_batch(void **blocks, size_t n);

/* The usable size of a block (at least what was asked for), as malloc_usable_size: 0 for NULL or a
 * pointer hopless did not hand out. */
size_t hopless_usable_size(void *p);

/* Returns the calling thread's cached blocks to the central heap, then gives every fully free slab
 * and every cached large-block page back to the OS (malloc_trim(0) does the same). */
void hopless_trim(void);

/* Nonzero: transparent huge pages for every segment, arena and large mapping reserved from now on;
 * zero: none. The default (HOPLESS_HUGE_PAGES unset) asks for them only for dense regions of heaps
 * past 64 MiB. */
void hopless_set_huge_pages(int on);

/* The memory limit, in bytes (0: none; HOPLESS_LIMIT=4g sets it at start). What counts is what the
 * program's blocks occupy: every slab a size class holds (64 KiB or 512 KiB) and the usable bytes of
 * every large block in use; free memory kept for reuse and hopless's own metadata do not. An
 * allocation that would pass it returns NULL with errno ENOMEM, after the calling thread's cache was
 * flushed and the heap trimmed. A limit below what is held refuses every request for new memory until
 * enough is freed. */
void hopless_set_limit(size_t bytes);
size_t hopless_limit(void);

/* Sampled heap profiling (HOPLESS_PROF=1 turns it on at start). hopless_prof_start samples one
 * allocation per `interval` bytes allocated on average (0: the default, 512 KiB), from now on; each
 * sampled block is remembered with its call stack until it is freed. hopless_prof_dump writes the
 * profile to `path` in pprof's format (a gzip'd protobuf: `hopless prof FILE`, `go tool pprof`): what
 * is in use and what was allocated since the start, by call stack. It returns 0, or an error number
 * (also in errno), and allocates nothing. hopless_prof_stop takes no more samples. */
void hopless_prof_start(size_t interval);
void hopless_prof_stop(void);
int hopless_prof_dump(const char *path);

/* One snapshot of hopless's counts. All sizes in bytes. Read without stopping other threads: while
 * they allocate, the fields are each a moment old and not of one instant.
 *
 * Versioned by its first field: fields are only ever added at the end, and hopless_stats fills as
 * much of the struct as both the caller and the library know. */
struct hopless_stats {
    size_t size;                /* bytes of this struct hopless_stats filled in */
    size_t bytes_in_use;        /* blocks handed to the program and not freed (small, medium, large);
                                   mallinfo2's uordblks */
    size_t bytes_cached;        /* free blocks in threads' caches (mallinfo2's fsmblks) */
    size_t bytes_held;          /* held for blocks: slabs, free slabs kept, large blocks in use and
                                   free large pages kept (mallinfo2's arena) */
    size_t slab_bytes;          /* slabs the size classes hold (blocks in use, cached, free) */
    size_t free_slab_bytes;     /* free slabs kept resident, waiting to go back to the OS */
    size_t large_bytes_in_use;  /* large blocks (above 256 KiB) in use (mallinfo2's hblkhd) */
    size_t large_blocks_in_use; /* how many (mallinfo2's hblks) */
    size_t large_cached_bytes;  /* free large-block pages kept for reuse */
    size_t large_peak_bytes;    /* the most large bytes ever in use at once */
    size_t large_peak_blocks;   /* the most large blocks ever in use at once */
    size_t segments;            /* 4 MiB slab segments reserved from the OS */
    size_t purged_slabs;        /* slabs given back to the OS so far */
    size_t thread_caches;       /* thread caches made so far */
    size_t limit;               /* the memory limit (0: none) */
    size_t limit_held_bytes;    /* what counts against it (whether or not one is set) */
    size_t limit_refusals;      /* requests it refused */
};

/* Fills *out with a snapshot, at most size bytes of it: pass sizeof(struct hopless_stats). Sets
 * out->size to the bytes filled, the smaller of size and the library's own struct (a program built
 * against an older header gets its fields; one built against a newer header gets those the library
 * knows, the rest left as they were). Returns the bytes filled; 0, writing nothing, for a null out or
 * a size too small for the size field. */
size_t hopless_stats(struct hopless_stats *out, size_t size);

/* Writes the per-class statistics table to stderr, without allocating. */
void hopless_print_stats(void);

#ifdef __cplusplus
}
#endif

#endif /* HOPLESS_H */

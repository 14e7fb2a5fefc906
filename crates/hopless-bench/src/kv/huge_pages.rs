//! `hopless bench kv --huge-pages`: each allocator with its own switch for transparent huge pages turned
//! on, so that the comparison stays like with like. The kernel's setting here is `madvise` (Debian's
//! default): a region gets huge pages only when its allocator asks. Without `--huge-pages` the variables
//! are removed from the child's environment, so each allocator runs with its own default.

/// The environment variable and value that turn on `allocator`'s own huge-page option.
pub fn option(allocator: &str) -> Option<(&'static str, &'static str)> {
    match allocator {
        // glibc 2.35+: `madvise(MADV_HUGEPAGE)` on what it takes from the kernel.
        "system" => Some(("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1")),
        // tikv-jemallocator builds jemalloc with the `_rjem_` prefix, which its conf variable carries.
        "jemalloc" => Some(("_RJEM_MALLOC_CONF", "thp:always")),
        // The `mimalloc` crate builds mimalloc 3, whose `allow_thp` is on by default on Linux: its arenas
        // get huge pages either way (`MIMALLOC_ALLOW_LARGE_OS_PAGES` would add `MAP_HUGETLB` tries,
        // which need pages the administrator reserved). Said here so the table says what ran.
        "mimalloc" => Some(("MIMALLOC_ALLOW_THP", "1")),
        "hopless" => Some(("HOPLESS_HUGE_PAGES", "1")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::TARGETS;

    #[test]
    fn every_configuration_has_its_allocators_switch() {
        for t in TARGETS {
            assert!(option(t.allocator).is_some(), "{}", t.spec());
        }
    }
}

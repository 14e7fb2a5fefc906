//! The leak report at exit (`HOPLESS_PROF_LEAKS=1`): what the sampled blocks still in use say is
//! left, the biggest sites first, each with its call stack named as the checked modes' reports name
//! theirs (the module's symbol table, through `dladdr`). Written to standard error without allocating.

use super::table::{Site, Tables};
use crate::report::{write_frame, Msg};

/// Sites shown at most.
const SHOWN: usize = 10;
/// Frames shown per site at most.
const FRAMES_SHOWN: usize = 8;

/// Writes the report of `t` to standard error.
pub fn report(t: &Tables) {
    let (mut bytes, mut blocks, mut sites) = (0u64, 0u64, 0u64);
    for s in t.sites().filter(|s| s.live_bytes > 0) {
        bytes += s.live_bytes;
        blocks += s.live_blocks;
        sites += 1;
    }
    let mut m = Msg::new();
    m.str("hopless profile: ");
    if sites == 0 {
        m.str("no sampled block is still in use at exit\n").emit();
        return;
    }
    m.str("about ")
        .dec(bytes)
        .str(" bytes in ")
        .dec(blocks.div_ceil(super::sampler::BLOCK_SCALE))
        .str(" blocks still in use at exit (estimated from samples), from ")
        .dec(sites)
        .str(" call sites; the biggest:\n")
        .emit();
    // The biggest sites, by repeated selection: no room to sort in, and few are shown.
    let mut last: Option<(u64, usize)> = None;
    for _ in 0..SHOWN {
        let mut best: Option<(u64, usize, &Site)> = None;
        for s in t.sites() {
            let key = (s.live_bytes, s as *const Site as usize);
            let below_last = last.is_none_or(|l| key < l);
            if s.live_bytes > 0 && below_last && best.is_none_or(|b| key > (b.0, b.1)) {
                best = Some((key.0, key.1, s));
            }
        }
        let Some((b, at, s)) = best else { break };
        last = Some((b, at));
        write_site(s);
    }
}

fn write_site(s: &Site) {
    let mut m = Msg::new();
    m.str("  ")
        .dec(s.live_bytes)
        .str(" bytes in ")
        .dec(s.live_blocks.div_ceil(super::sampler::BLOCK_SCALE))
        .str(" blocks, allocated from:");
    for (i, &pc) in s
        .frames
        .get(..s.depth)
        .unwrap_or_default()
        .iter()
        .take(FRAMES_SHOWN)
        .enumerate()
    {
        write_frame(&mut m, i as u64, pc, pc);
    }
    if s.depth == 0 {
        m.str("\n    (no call stack: sampled before the unwinder was found, or the table of sites was full)");
    }
    m.str("\n").emit();
}

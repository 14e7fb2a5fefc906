//! The allocator a store allocates through ([`KvAlloc`]): any `allocator_api2` allocator, with the batch
//! call hopless has.

use core::alloc::Layout;
use core::ptr::NonNull;

use allocator_api2::alloc::Allocator;

/// The allocator a store allocates through: any `Allocator`, with an optional batch call (hopless has one).
pub trait KvAlloc: Allocator + Clone + Send + Sync + 'static {
    /// Fills `out` with blocks of `layout`; false (and nothing allocated) on failure.
    fn allocate_batch(&self, layout: Layout, out: &mut [NonNull<u8>]) -> bool {
        for i in 0..out.len() {
            match self.allocate(layout) {
                Ok(p) => out[i] = p.cast(),
                Err(_) => {
                    for p in &out[..i] {
                        // SAFETY: allocated just above with `layout`.
                        unsafe { self.deallocate(*p, layout) };
                    }
                    return false;
                }
            }
        }
        true
    }
}

impl KvAlloc for hopless::Hopless {
    fn allocate_batch(&self, layout: Layout, out: &mut [NonNull<u8>]) -> bool {
        if layout.size() == 0 {
            return false;
        }
        let mut raw = [core::ptr::null_mut::<u8>(); 64];
        let mut done = 0;
        while done < out.len() {
            let n = (out.len() - done).min(raw.len());
            let got = self.alloc_batch(layout, &mut raw[..n]);
            for (o, &p) in out[done..done + got].iter_mut().zip(&raw[..got]) {
                *o = NonNull::new(p).expect("alloc_batch returns non-null blocks");
            }
            done += got;
            if got < n {
                // SAFETY: the blocks allocated so far came from alloc_batch with `layout`.
                unsafe {
                    let ptrs: Vec<*mut u8> = out[..done].iter().map(|p| p.as_ptr()).collect();
                    self.free_batch(layout, &ptrs);
                }
                return false;
            }
        }
        true
    }
}

impl KvAlloc for allocator_api2::alloc::Global {}

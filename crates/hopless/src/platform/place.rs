//! What an address is in the process: its module (`dladdr`: path and load address), its function (the
//! module file's symbol table through `elf_symbols`, or else the nearest symbol the module exports), and
//! whether it lies in hopless's own library. Call stacks (`stack`, `unwind`) and reports name their
//! frames with it; nothing here allocates.

/// What `dladdr` says of an address: its module's path and load address, and the nearest symbol
/// at or below it that the module exports (name and address), if any.
pub struct Place {
    pub module: &'static [u8],
    pub base: usize,
    pub symbol: Option<(&'static [u8], usize)>,
}

/// Names `pc` (see [`Place`]); `None` when no loaded module holds it.
pub fn place_of(pc: usize) -> Option<Place> {
    if cfg!(miri) {
        return None;
    }
    // SAFETY: an all-zero `Dl_info` is a valid value to hand `dladdr`, which fills it.
    let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
    // SAFETY: `dladdr` only reads the address as a number and writes `info`; it allocates nothing.
    if unsafe { libc::dladdr(pc as *const libc::c_void, &mut info) } == 0 {
        return None;
    }
    let text = |p: *const libc::c_char| {
        // SAFETY: a non-null name `dladdr` gives is a NUL-terminated string of a loaded module, which
        // stays while the module is loaded (the report using it ends the process).
        (!p.is_null()).then(|| unsafe { core::ffi::CStr::from_ptr(p) }.to_bytes())
    };
    Some(Place {
        module: text(info.dli_fname).unwrap_or(b"?"),
        base: info.dli_fbase.addr(),
        symbol: text(info.dli_sname).map(|name| (name, info.dli_saddr.addr())),
    })
}

/// The function that holds `pc`, named from its module's own symbol table when the file has one (a
/// program's static functions too: `platform::elf_symbols`), else the nearest symbol `dladdr` found;
/// with the function's start. The program's own file is read through `/proc/self/exe` (the path the
/// loader recorded may be relative to a directory the program has left).
pub fn function_of(at: &Place, pc: usize) -> Option<(&'static [u8], usize)> {
    // SAFETY: getauxval has no preconditions; AT_ENTRY is the program's entry point (or 0).
    let entry = unsafe { libc::getauxval(libc::AT_ENTRY) } as usize;
    let path: &[u8] = match place_of(entry) {
        Some(p) if p.base == at.base => b"/proc/self/exe",
        _ => at.module,
    };
    super::elf_symbols::function_at(path, at.base, pc).or(at.symbol)
}

/// Whether `pc` lies in the module that holds this function: hopless's own frames, to leave out of a
/// report when hopless is a library of its own (`libhopless.so`). False when hopless is linked into
/// the program itself (a Rust program's `#[global_allocator]`): its frames are then the program's.
pub fn in_own_library(pc: usize) -> bool {
    let here = place_of(in_own_library as fn(usize) -> bool as usize);
    // SAFETY: getauxval has no preconditions; AT_ENTRY is the program's entry point (or 0).
    let program = place_of(unsafe { libc::getauxval(libc::AT_ENTRY) } as usize);
    match (here, program, place_of(pc)) {
        (Some(h), Some(p), Some(at)) => h.base != p.base && at.base == h.base,
        _ => false,
    }
}

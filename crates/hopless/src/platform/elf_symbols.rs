//! Names a code address from its module's own symbol table (`.symtab` in the file on disk): a program's
//! static functions, which `dladdr` cannot name (it reads only the exported symbols), are there unless
//! the file was stripped. For fatal reports only: the file is mapped read-only and left mapped (the
//! process is about to stop), nothing is allocated, every offset read from the file is checked against
//! its length.
//!
//! 64-bit little-endian ELF only (x86-64 and aarch64 Linux).

use core::ffi::c_void;

/// `SHT_SYMTAB`, `STT_FUNC`, `ET_EXEC` (ELF's constants).
const SHT_SYMTAB: u32 = 2;
const STT_FUNC: u8 = 2;
const ET_EXEC: u16 = 2;
/// Sizes of an `Elf64_Shdr` and an `Elf64_Sym`.
const SHDR: usize = 64;
const SYM: usize = 24;

/// The function of the file at `path` (a module loaded at `base`) that holds the code address `pc`,
/// with the function's start as an address: `None` when the file cannot be read, is not a 64-bit ELF
/// file, has no symbol table, or no function there holds `pc`.
pub fn function_at(path: &[u8], base: usize, pc: usize) -> Option<(&'static [u8], usize)> {
    if cfg!(miri) {
        return None;
    }
    let file = map_file(path)?;
    // Symbol values are addresses in an executable of fixed position, offsets from the load address
    // in a shared object or a position-independent executable.
    let fixed = u16_at(file, 16)? == ET_EXEC;
    let at = if fixed { pc } else { pc.checked_sub(base)? };
    let shoff = usize::try_from(u64_at(file, 0x28)?).ok()?;
    let shentsize = usize::from(u16_at(file, 0x3a)?);
    let shnum = usize::from(u16_at(file, 0x3c)?);
    if shentsize != SHDR {
        return None;
    }
    for i in 0..shnum {
        let sh = shoff.checked_add(i.checked_mul(SHDR)?)?;
        if u32_at(file, sh + 4)? != SHT_SYMTAB {
            continue;
        }
        let (syms, size) = (u64_at(file, sh + 0x18)?, u64_at(file, sh + 0x20)?);
        let link = usize::try_from(u32_at(file, sh + 0x28)?).ok()?;
        let strtab = shoff.checked_add(link.checked_mul(SHDR)?)?;
        let (strs, strs_size) = (u64_at(file, strtab + 0x18)?, u64_at(file, strtab + 0x20)?);
        let strs = file.get(usize::try_from(strs).ok()?..)?;
        let strs = strs.get(..usize::try_from(strs_size).ok()?)?;
        let table = file.get(usize::try_from(syms).ok()?..)?;
        let table = table.get(..usize::try_from(size).ok()?)?;
        for sym in table.chunks_exact(SYM) {
            let info = *sym.get(4)?;
            let value = usize::try_from(u64_at(sym, 8)?).ok()?;
            let len = usize::try_from(u64_at(sym, 16)?).ok()?;
            if info & 0xf != STT_FUNC || at < value || at - value >= len {
                continue;
            }
            let name = strs.get(usize::try_from(u32_at(sym, 0)?).ok()?..)?;
            let end = name.iter().position(|&b| b == 0)?;
            let start = if fixed { value } else { base.checked_add(value)? };
            return Some((name.get(..end)?, start));
        }
    }
    None
}

/// The whole file at `path`, mapped read-only for the rest of the process.
fn map_file(path: &[u8]) -> Option<&'static [u8]> {
    let mut z = [0u8; 512];
    if path.len() >= z.len() || path.contains(&0) {
        return None;
    }
    for (d, &c) in z.iter_mut().zip(path) {
        *d = c;
    }
    // SAFETY: `z` is a NUL-terminated path (checked above: shorter than the buffer, no NUL inside, the
    // rest zero); `st` is written by `fstat`; the mapping is of the whole file, read-only and private,
    // and the descriptor is closed once it is made (the mapping keeps the file). Nothing else of ours is
    // touched, and nothing allocates.
    unsafe {
        let fd = libc::open(z.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let mut st: libc::stat = core::mem::zeroed();
        let len = if libc::fstat(fd, &mut st) == 0 {
            usize::try_from(st.st_size).unwrap_or(0)
        } else {
            0
        };
        let p = if len >= 64 {
            libc::mmap(
                core::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                fd,
                0,
            )
        } else {
            libc::MAP_FAILED
        };
        libc::close(fd);
        if p == libc::MAP_FAILED {
            return None;
        }
        let file = core::slice::from_raw_parts(p.cast::<u8>().cast_const(), len);
        // A 64-bit little-endian ELF file.
        (file.get(..6) == Some(b"\x7fELF\x02\x01"))
            .then_some(file)
            .or_else(|| {
                libc::munmap(p.cast::<c_void>(), len);
                None
            })
    }
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        b.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(
        b.get(at..at.checked_add(8)?)?.try_into().ok()?,
    ))
}

// glibc only: a static musl binary has no dynamic section, so `dladdr` knows no module in it.
#[cfg(all(test, not(miri), target_env = "gnu"))]
mod tests {
    /// This test binary's own functions, looked up in its file.
    #[test]
    fn names_a_function_of_the_test_binary_from_its_file() {
        #[inline(never)]
        fn a_function_with_a_name() -> usize {
            core::hint::black_box(7)
        }
        let pc = a_function_with_a_name as fn() -> usize as usize;
        let at = super::super::place::place_of(pc).expect("dladdr knows the test binary");
        let (name, start) =
            super::function_at(b"/proc/self/exe", at.base, pc).expect("the test binary has a symbol table");
        let name = core::str::from_utf8(name).unwrap();
        assert!(name.contains("a_function_with_a_name"), "{name}");
        assert_eq!(start, pc);
        assert!(super::function_at(b"/nonexistent", at.base, pc).is_none());
        assert!(super::function_at(b"/proc/self/status", at.base, pc).is_none());
    }
}

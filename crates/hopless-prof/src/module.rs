//! One module (an executable or shared library) of the profiled process, opened from disk: its
//! loadable segments, to turn a file offset into the address the debug info speaks of, and its DWARF
//! and symbol tables, to turn that address into frames.

use std::fs::File;
use std::path::{Path, PathBuf};

use addr2line::Loader;
use object::{Object, ObjectSegment, ReadCache};

use crate::frame::Frame;

/// A loadable segment (ELF `PT_LOAD`): where its bytes are in the file and where it wants to be.
struct Segment {
    file_offset: u64,
    file_size: u64,
    address: u64,
}

/// A module file, opened for symbolization.
pub struct Module {
    segments: Vec<Segment>,
    /// DWARF (inlined frames included) and the symbol tables: the module's own, or its separate debug
    /// file's when the system has one under `/usr/lib/debug/.build-id`.
    loader: Loader,
}

impl Module {
    /// Opens the module at `path`. With a nonempty `build_id` (hex) the file must carry the same GNU
    /// build-id note: a rebuilt file would put other code at the profile's addresses.
    pub fn open(path: &Path, build_id: &str) -> Result<Module, String> {
        let file = File::open(path).map_err(|e| e.to_string())?;
        // Reads only what it is asked for (the headers), not the whole file.
        let cache = ReadCache::new(file);
        let object = object::File::parse(&cache).map_err(|e| format!("not an object file ({e})"))?;
        if !build_id.is_empty() {
            let found = object.build_id().ok().flatten().map(hex).unwrap_or_default();
            if !found.eq_ignore_ascii_case(build_id) {
                return Err(format!(
                    "its build id is {} where the profile's is {build_id} (rebuilt since?)",
                    if found.is_empty() { "missing" } else { &found }
                ));
            }
        }
        let segments = object
            .segments()
            .map(|s| {
                let (file_offset, file_size) = s.file_range();
                Segment {
                    file_offset,
                    file_size,
                    address: s.address(),
                }
            })
            .collect();
        let debug = separate_debug_file(build_id);
        let loader = Loader::new(debug.as_deref().unwrap_or(path)).map_err(|e| e.to_string())?;
        Ok(Module { segments, loader })
    }

    /// The address in the module's own address space (as its debug info and symbols use) of the byte
    /// at `offset` in its file, when a loadable segment holds that byte.
    pub fn address(&self, offset: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|s| offset >= s.file_offset && offset - s.file_offset < s.file_size)
            .map(|s| s.address.wrapping_add(offset - s.file_offset))
    }

    /// The frames at `address` (from [`Module::address`]), innermost inlined frame first, the function
    /// that holds them last; empty when neither the DWARF nor a symbol table knows the address.
    pub fn frames(&self, address: u64) -> Vec<Frame> {
        let mut frames = Vec::new();
        if let Ok(mut iter) = self.loader.find_frames(address) {
            while let Ok(Some(f)) = iter.next() {
                let function = f
                    .function
                    .as_ref()
                    .and_then(|n| n.demangle().ok())
                    .map(|n| n.into_owned());
                let location = f.location.as_ref();
                frames.push(Frame {
                    function: function.unwrap_or_default(),
                    file: location.and_then(|l| l.file).map(str::to_owned),
                    line: location.and_then(|l| l.line),
                });
            }
        }
        let symbol = self
            .loader
            .find_symbol(address)
            .map(|s| addr2line::demangle_auto(s.into(), None).into_owned());
        let Some(symbol) = symbol else {
            frames.retain(|f| !f.function.is_empty());
            return frames;
        };
        // No DWARF for the address: the symbol table's name is all there is.
        let Some(outermost) = frames.last_mut() else {
            return vec![Frame::named(symbol)];
        };
        // The outermost frame is the function the symbol names. Line-tables-only DWARF (Rust's
        // `debug = "line-tables-only"`) names it without its path (`set` for `Store::set`): the
        // symbol's name, when it ends in the same one, says which.
        if outermost.function.is_empty() || same_function(&outermost.function, &symbol) {
            outermost.function = symbol;
        }
        frames.retain(|f| !f.function.is_empty());
        frames
    }
}

/// Whether a DWARF name (`grow_one<u8>`, `{closure#0}`) is the last segment of a demangled symbol
/// name (`alloc::raw_vec::RawVec<T,A>::grow_one`, `app::main::{{closure}}`).
fn same_function(dwarf: &str, symbol: &str) -> bool {
    if dwarf == symbol {
        return true;
    }
    if dwarf.starts_with("{closure") {
        return symbol.ends_with("{{closure}}");
    }
    let name = dwarf.split('<').next().unwrap_or(dwarf);
    !name.is_empty() && symbol.strip_suffix(name).is_some_and(|path| path.ends_with("::"))
}

/// The separate debug file the distribution installs for this build id, when there is one.
fn separate_debug_file(build_id: &str) -> Option<PathBuf> {
    if build_id.len() < 3 || !build_id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let id = build_id.to_ascii_lowercase();
    let path = PathBuf::from(format!(
        "/usr/lib/debug/.build-id/{}/{}.debug",
        &id[..2],
        &id[2..]
    ));
    path.is_file().then_some(path)
}

/// Bytes as lowercase hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

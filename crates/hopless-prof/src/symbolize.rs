//! Locations to frames. A location that already carries lines is read as it is; otherwise its runtime
//! address goes through its mapping to a file offset, through the module file's segments to an address
//! in the module, and through the module's DWARF or symbols to frames. Each module file opens once.

use std::collections::HashMap;
use std::path::Path;

use crate::frame::Frame;
use crate::module::Module;
use crate::proto::{Function, Location, Mapping, Profile};

/// Symbolizes one profile's locations, keeping each module it opens.
pub struct Symbolizer<'p> {
    profile: &'p Profile,
    mappings: HashMap<u64, &'p Mapping>,
    functions: HashMap<u64, &'p Function>,
    /// By (filename, build id): the module, or why it could not be opened.
    modules: HashMap<(String, String), Result<Module, String>>,
}

impl<'p> Symbolizer<'p> {
    pub fn new(profile: &'p Profile) -> Symbolizer<'p> {
        Symbolizer {
            profile,
            mappings: profile.mapping.iter().map(|m| (m.id, m)).collect(),
            functions: profile.function.iter().map(|f| (f.id, f)).collect(),
            modules: HashMap::new(),
        }
    }

    /// The location's frames, innermost first; never empty. A frame whose module cannot be read is
    /// named `module+0xOFFSET` (the offset in the module's file), one without a mapping `0xADDRESS`.
    pub fn frames(&mut self, location: &Location) -> Vec<Frame> {
        if !location.line.is_empty() {
            return self.recorded(location);
        }
        let unknown = || vec![Frame::named(format!("{:#x}", location.address))];
        let Some(&mapping) = self.mappings.get(&location.mapping_id) else {
            return unknown();
        };
        let Some(offset) = location
            .address
            .checked_sub(mapping.memory_start)
            .and_then(|d| d.checked_add(mapping.file_offset))
        else {
            return unknown();
        };
        let filename = self.string(mapping.filename).to_owned();
        if filename.is_empty() {
            return unknown();
        }
        let build_id = self.string(mapping.build_id).to_owned();
        let module = self
            .modules
            .entry((filename.clone(), build_id))
            .or_insert_with_key(|(f, b)| Module::open(Path::new(f), b));
        let frames = match module {
            Ok(m) => m.address(offset).map(|a| m.frames(a)).unwrap_or_default(),
            Err(_) => Vec::new(),
        };
        if frames.is_empty() {
            let base = filename.rsplit('/').next().unwrap_or(&filename);
            return vec![Frame::named(format!("{base}+{offset:#x}"))];
        }
        frames
    }

    /// The modules that could not be opened, each with why: their frames are named `module+0xOFFSET`.
    pub fn unreadable(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .modules
            .iter()
            .filter_map(|((file, _), m)| m.as_ref().err().map(|e| format!("{file}: {e}")))
            .collect();
        out.sort();
        out
    }

    /// The frames the profile itself records for the location.
    fn recorded(&self, location: &Location) -> Vec<Frame> {
        location
            .line
            .iter()
            .map(|line| {
                let f = self.functions.get(&line.function_id);
                let name = f.map_or("", |f| match self.string(f.name) {
                    "" => self.string(f.system_name),
                    name => name,
                });
                let file = f.map_or("", |f| self.string(f.filename));
                Frame {
                    function: if name.is_empty() {
                        format!("{:#x}", location.address)
                    } else {
                        name.to_owned()
                    },
                    file: (!file.is_empty()).then(|| file.to_owned()),
                    line: u32::try_from(line.line).ok().filter(|&l| l > 0),
                }
            })
            .collect()
    }

    /// A string of the profile's table; "" for an index out of range (the reader checks them all).
    fn string(&self, i: i64) -> &'p str {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.profile.string_table.get(i))
            .map_or("", String::as_str)
    }
}

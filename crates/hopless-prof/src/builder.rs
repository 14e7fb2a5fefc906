//! Building a profile in memory: strings interned, ids handed out in order. The tests write their
//! profiles with it; a profiler can write its own with it too.

use std::collections::HashMap;

use crate::proto::{Function, Line, Location, Mapping, Profile, Sample, ValueType};

/// hopless's heap-profile sample types, in the order its samples carry their values.
pub const HOPLESS_SAMPLE_TYPES: [(&str, &str); 4] = [
    ("alloc_objects", "count"),
    ("alloc_space", "bytes"),
    ("inuse_objects", "count"),
    ("inuse_space", "bytes"),
];

/// A profile under construction.
pub struct Builder {
    profile: Profile,
    strings: HashMap<String, i64>,
}

impl Builder {
    /// An empty profile whose samples carry these `(type, unit)` values, the last one the default.
    pub fn new(sample_types: &[(&str, &str)]) -> Builder {
        let mut b = Builder {
            profile: Profile::default(),
            strings: HashMap::new(),
        };
        b.string("");
        for &(ty, unit) in sample_types {
            let t = ValueType {
                r#type: b.string(ty),
                unit: b.string(unit),
            };
            b.profile.default_sample_type = t.r#type;
            b.profile.sample_type.push(t);
        }
        b
    }

    /// An empty profile laid out as hopless's heap profiles are: [`HOPLESS_SAMPLE_TYPES`],
    /// `inuse_space` the default, a `space`/`bytes` period of `period` bytes, and the comment.
    pub fn hopless_heap(period: i64) -> Builder {
        let mut b = Builder::new(&HOPLESS_SAMPLE_TYPES);
        b.profile.period_type = Some(ValueType {
            r#type: b.string("space"),
            unit: b.string("bytes"),
        });
        b.profile.period = period;
        let comment = b.string("hopless heap profile");
        b.profile.comment.push(comment);
        b
    }

    /// The string's index in the string table, adding it when new.
    pub fn string(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = self.profile.string_table.len() as i64;
        self.profile.string_table.push(s.to_owned());
        self.strings.insert(s.to_owned(), i);
        i
    }

    /// Adds a mapping of `[start, limit)` from `filename` at `file_offset`; returns its id.
    pub fn mapping(
        &mut self,
        start: u64,
        limit: u64,
        file_offset: u64,
        filename: &str,
        build_id: &str,
    ) -> u64 {
        let id = self.profile.mapping.len() as u64 + 1;
        let m = Mapping {
            id,
            memory_start: start,
            memory_limit: limit,
            file_offset,
            filename: self.string(filename),
            build_id: self.string(build_id),
        };
        self.profile.mapping.push(m);
        id
    }

    /// Adds an unsymbolized location at the runtime `address` in mapping `mapping_id` (0: none).
    pub fn location(&mut self, mapping_id: u64, address: u64) -> u64 {
        self.symbolized_location(mapping_id, address, &[])
    }

    /// Adds a location already symbolized: `lines` as (function id, line), innermost first.
    pub fn symbolized_location(&mut self, mapping_id: u64, address: u64, lines: &[(u64, i64)]) -> u64 {
        let id = self.profile.location.len() as u64 + 1;
        self.profile.location.push(Location {
            id,
            mapping_id,
            address,
            line: lines
                .iter()
                .map(|&(function_id, line)| Line { function_id, line })
                .collect(),
        });
        id
    }

    /// Adds a function named `name`, defined in `filename`; returns its id.
    pub fn function(&mut self, name: &str, filename: &str) -> u64 {
        let id = self.profile.function.len() as u64 + 1;
        let f = Function {
            id,
            name: self.string(name),
            system_name: self.string(name),
            filename: self.string(filename),
            start_line: 0,
        };
        self.profile.function.push(f);
        id
    }

    /// Adds a sample: its stack as location ids, innermost first, and one value per sample type.
    pub fn sample(&mut self, location_id: &[u64], value: &[i64]) {
        self.profile.sample.push(Sample {
            location_id: location_id.to_vec(),
            value: value.to_vec(),
        });
    }

    /// Sets when the profile was taken.
    pub fn time_nanos(&mut self, t: i64) {
        self.profile.time_nanos = t;
    }

    /// The profile.
    pub fn finish(self) -> Profile {
        self.profile
    }
}

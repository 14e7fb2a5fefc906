//! A profile read for one sample type: every sample as its symbolized stack and its value.

use std::collections::HashMap;

use crate::error::Error;
use crate::frame::Frame;
use crate::proto::Profile;
use crate::symbolize::Symbolizer;

/// The sample types `--sample` knows by a short name.
const SHORT_NAMES: [(&str, &str); 2] = [("inuse", "inuse_space"), ("alloc", "alloc_space")];

/// The samples of one sample type, symbolized.
pub struct Stacks {
    /// The sample type (`inuse_space`).
    pub sample_type: String,
    /// Its unit (`bytes`, `count`).
    pub unit: String,
    /// Each sample with a nonzero value, in the profile's order.
    pub samples: Vec<Stack>,
    /// The sum of all the samples' values.
    pub total: i64,
    /// The profile's comments.
    pub comments: Vec<String>,
    /// The sampling period and its unit, when the profile gives one.
    pub period: Option<(i64, String)>,
    /// The modules that could not be read, each with why.
    pub unreadable: Vec<String>,
}

/// One sample: its frames, innermost first (inlined frames before the function they are inlined in),
/// and its value.
pub struct Stack {
    pub frames: Vec<Frame>,
    pub value: i64,
}

impl Stacks {
    /// Symbolizes `profile`'s samples of the type `sample` (a name or short name), or of its default
    /// sample type, else its last.
    pub fn new(profile: &Profile, sample: Option<&str>) -> Result<Stacks, Error> {
        let string = |i: i64| {
            usize::try_from(i)
                .ok()
                .and_then(|i| profile.string_table.get(i))
                .cloned()
                .unwrap_or_default()
        };
        let index = sample_type_index(profile, sample)?;
        let ty = profile
            .sample_type
            .get(index)
            .ok_or_else(|| Error::Invalid("no sample types".into()))?;
        let mut symbolizer = Symbolizer::new(profile);
        let mut located: HashMap<u64, Vec<Frame>> = HashMap::new();
        for l in &profile.location {
            located.insert(l.id, symbolizer.frames(l));
        }
        let drop = drop_frames(&string(profile.drop_frames));
        let mut samples = Vec::new();
        let mut total = 0i64;
        for s in &profile.sample {
            let value = s.value.get(index).copied().unwrap_or(0);
            if value == 0 {
                continue;
            }
            total = total.saturating_add(value);
            let mut frames: Vec<Frame> = s
                .location_id
                .iter()
                .flat_map(|id| located.get(id).into_iter().flatten().cloned())
                .collect();
            if let Some(re) = &drop {
                // The outermost frame that matches goes, with everything it called.
                if let Some(i) = frames.iter().rposition(|f| re.is_match(&f.function)) {
                    frames.drain(..=i);
                }
            }
            // The allocator's own code inlined into the program's function (a Rust program built with
            // LTO), whose debug info gives bare names (`alloc_small`) that no pattern can tell apart:
            // known by its source files instead.
            let own = frames.iter().take_while(|f| in_allocator(f)).count();
            if own < frames.len() {
                frames.drain(..own);
            }
            samples.push(Stack { frames, value });
        }
        Ok(Stacks {
            sample_type: string(ty.r#type),
            unit: string(ty.unit),
            samples,
            total,
            comments: profile.comment.iter().map(|&c| string(c)).collect(),
            period: profile
                .period_type
                .as_ref()
                .filter(|_| profile.period > 0)
                .map(|t| (profile.period, string(t.unit))),
            unreadable: symbolizer.unreadable(),
        })
    }
}

/// Whether `f` is code of the hopless allocator crate itself, by its source file: in this repository
/// (`crates/hopless/src/`) or as a dependency from crates.io (`hopless-X.Y.Z/src/`).
fn in_allocator(f: &Frame) -> bool {
    let Some(file) = f.file.as_deref() else {
        return false;
    };
    if file.contains("crates/hopless/src/") {
        return true;
    }
    file.split('/').any(|part| {
        part.strip_prefix("hopless-")
            .is_some_and(|v| v.split('.').count() == 3 && v.split('.').all(|n| n.parse::<u32>().is_ok()))
    }) && file.contains("/src/")
}

/// The profile's `drop_frames` as a regular expression matching a whole name; `None` when it has none
/// or it does not compile (then nothing is dropped, as pprof does).
fn drop_frames(pattern: &str) -> Option<regex::Regex> {
    if pattern.is_empty() {
        return None;
    }
    regex::Regex::new(&format!("^(?:{pattern})$")).ok()
}

/// The index in `sample_type` of the type named `sample` (or its short name), else of the default.
fn sample_type_index(profile: &Profile, sample: Option<&str>) -> Result<usize, Error> {
    let name = |i: i64| {
        usize::try_from(i)
            .ok()
            .and_then(|i| profile.string_table.get(i))
            .map_or("", String::as_str)
    };
    let types = &profile.sample_type;
    let Some(asked) = sample else {
        let default = types
            .iter()
            .position(|t| profile.default_sample_type != 0 && t.r#type == profile.default_sample_type);
        return Ok(default.unwrap_or(types.len().saturating_sub(1)));
    };
    let full = SHORT_NAMES
        .iter()
        .find(|(short, _)| *short == asked)
        .map_or(asked, |(_, full)| *full);
    types
        .iter()
        .position(|t| name(t.r#type) == full)
        .ok_or_else(|| Error::NoSampleType {
            asked: asked.to_owned(),
            available: types.iter().map(|t| name(t.r#type).to_owned()).collect(),
        })
}

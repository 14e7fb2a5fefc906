//! The tables a report is made of: functions by flat and cumulative value, and whole stacks
//! (allocation sites) by value.

use std::collections::{HashMap, HashSet};

use crate::frame::Frame;
use crate::stacks::Stacks;

/// A function's share of the profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionRow {
    pub name: String,
    /// The value of the samples whose innermost frame is this function: what it allocated itself.
    pub flat: i64,
    /// The value of the samples with this function anywhere in their stack (once per stack, however
    /// often it recurs): what it and everything it calls allocated.
    pub cum: i64,
}

/// A distinct stack and the value of all the samples with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SiteRow {
    /// Innermost first.
    pub frames: Vec<Frame>,
    pub value: i64,
}

/// Every function, by flat value (largest first), then cumulative value, then name.
pub fn by_flat(stacks: &Stacks) -> Vec<FunctionRow> {
    let mut rows = functions(stacks);
    rows.sort_by(|a, b| (b.flat, b.cum, &a.name).cmp(&(a.flat, a.cum, &b.name)));
    rows
}

/// Every function, by cumulative value (largest first), then flat value, then name.
pub fn by_cum(stacks: &Stacks) -> Vec<FunctionRow> {
    let mut rows = functions(stacks);
    rows.sort_by(|a, b| (b.cum, b.flat, &a.name).cmp(&(a.cum, a.flat, &b.name)));
    rows
}

/// Every distinct stack (frames with their lines), by value (largest first).
pub fn sites(stacks: &Stacks) -> Vec<SiteRow> {
    let mut values: HashMap<&[Frame], i64> = HashMap::new();
    for s in &stacks.samples {
        let v = values.entry(&s.frames).or_default();
        *v = v.saturating_add(s.value);
    }
    let mut rows: Vec<SiteRow> = values
        .into_iter()
        .map(|(frames, value)| SiteRow {
            frames: frames.to_vec(),
            value,
        })
        .collect();
    rows.sort_by(|a, b| (b.value, &a.frames).cmp(&(a.value, &b.frames)));
    rows
}

fn functions(stacks: &Stacks) -> Vec<FunctionRow> {
    let mut rows: HashMap<&str, FunctionRow> = HashMap::new();
    let mut seen = HashSet::new();
    for s in &stacks.samples {
        seen.clear();
        for (depth, f) in s.frames.iter().enumerate() {
            let row = rows.entry(&f.function).or_insert_with(|| FunctionRow {
                name: f.function.clone(),
                flat: 0,
                cum: 0,
            });
            if depth == 0 {
                row.flat = row.flat.saturating_add(s.value);
            }
            if seen.insert(f.function.as_str()) {
                row.cum = row.cum.saturating_add(s.value);
            }
        }
    }
    rows.into_values().collect()
}

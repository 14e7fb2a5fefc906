//! Brendan Gregg's folded stacks (`outer;...;inner value`, a line per distinct stack), the input of
//! flamegraph.pl, inferno and speedscope.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::stacks::Stacks;

/// The samples as folded stacks, outermost frame first, by function name; stacks that fold to the same
/// line are summed, and the lines sorted.
pub fn folded(stacks: &Stacks) -> String {
    let mut lines: BTreeMap<String, i64> = BTreeMap::new();
    for s in &stacks.samples {
        let mut key = String::new();
        for (i, f) in s.frames.iter().rev().enumerate() {
            if i > 0 {
                key.push(';');
            }
            // `;` separates frames and the last space the value: neither may break a name apart.
            key.extend(f.function.chars().map(|c| match c {
                ';' => ':',
                '\n' | '\r' => ' ',
                c => c,
            }));
        }
        if key.is_empty() {
            key.push_str("[no stack]");
        }
        let v = lines.entry(key).or_default();
        *v = v.saturating_add(s.value);
    }
    let mut out = String::new();
    for (stack, value) in lines {
        let _ = writeln!(out, "{stack} {value}");
    }
    out
}

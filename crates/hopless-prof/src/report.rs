//! The text report `hopless prof` prints: what the profile is, its total, the top functions by flat and
//! by cumulative value (pprof's `-top` columns), and the top allocation sites as whole stacks.

use std::fmt::Write;

use crate::stacks::Stacks;
use crate::top::{self, FunctionRow};
use crate::units;

/// The report of `stacks`, each table cut to its `n` largest rows; `source` names the profile.
pub fn text(stacks: &Stacks, source: &str, n: usize) -> String {
    let mut out = String::new();
    header(&mut out, stacks, source);
    let flat = top::by_flat(stacks);
    let cum = top::by_cum(stacks);
    let noun = plural(flat.len(), "function", "functions");
    let _ = writeln!(
        out,
        "\nTop {} of {noun} by flat (allocated in the function itself):",
        n.min(flat.len())
    );
    functions(&mut out, stacks, &flat[..n.min(flat.len())]);
    let _ = writeln!(
        out,
        "\nTop {} of {noun} by cum (allocated in the function or in what it calls):",
        n.min(cum.len())
    );
    functions(&mut out, stacks, &cum[..n.min(cum.len())]);
    sites(&mut out, stacks, n);
    out
}

fn header(out: &mut String, stacks: &Stacks, source: &str) {
    let _ = writeln!(out, "File: {source}");
    for c in stacks.comments.iter().filter(|c| !c.is_empty()) {
        let _ = writeln!(out, "Comment: {c}");
    }
    let _ = write!(out, "Type: {} ({})", stacks.sample_type, stacks.unit);
    if let Some((period, unit)) = &stacks.period {
        let _ = write!(out, ", sampled every {} on average", units::value(*period, unit));
    }
    let _ = writeln!(
        out,
        "\nTotal: {} in {}",
        units::value(stacks.total, &stacks.unit),
        plural(stacks.samples.len(), "sample", "samples")
    );
    if !stacks.unreadable.is_empty() {
        let _ = writeln!(
            out,
            "Note: {} could not be read; {} frames are named module+0xOFFSET (the offset in the file):",
            plural(stacks.unreadable.len(), "module", "modules"),
            if stacks.unreadable.len() == 1 {
                "its"
            } else {
                "their"
            }
        );
        for u in &stacks.unreadable {
            let _ = writeln!(out, "  {u}");
        }
    }
}

/// pprof's `-top` table: flat, flat%, sum%, cum, cum%, name.
fn functions(out: &mut String, stacks: &Stacks, rows: &[FunctionRow]) {
    let unit = &stacks.unit;
    let cells: Vec<(String, String)> = rows
        .iter()
        .map(|r| (units::value(r.flat, unit), units::value(r.cum, unit)))
        .collect();
    let w = cells
        .iter()
        .map(|(f, c)| f.len().max(c.len()))
        .max()
        .unwrap_or(0)
        .max(4);
    let _ = writeln!(
        out,
        "{:>w$} {:>6} {:>6} {:>w$} {:>6}  function",
        "flat", "flat%", "sum%", "cum", "cum%"
    );
    let mut sum = 0i64;
    for (r, (flat, cum)) in rows.iter().zip(&cells) {
        sum = sum.saturating_add(r.flat);
        let _ = writeln!(
            out,
            "{flat:>w$} {:>6} {:>6} {cum:>w$} {:>6}  {}",
            units::percent(r.flat, stacks.total),
            units::percent(sum, stacks.total),
            units::percent(r.cum, stacks.total),
            r.name
        );
    }
}

/// The `n` largest sites, each as its value and its frames, one a line, innermost first.
fn sites(out: &mut String, stacks: &Stacks, n: usize) {
    let rows = top::sites(stacks);
    let shown = &rows[..n.min(rows.len())];
    let _ = writeln!(
        out,
        "\nTop {} of {} by {} (whole stacks, innermost frame first):",
        shown.len(),
        plural(rows.len(), "allocation site", "allocation sites"),
        stacks.sample_type
    );
    let values: Vec<String> = shown
        .iter()
        .map(|r| units::value(r.value, &stacks.unit))
        .collect();
    let w = values.iter().map(String::len).max().unwrap_or(0);
    let rank = shown.len().to_string().len() + 1;
    for (i, (r, v)) in shown.iter().zip(&values).enumerate() {
        let _ = writeln!(
            out,
            "{:>rank$} {v:>w$} {:>6}",
            format!("#{}", i + 1),
            units::percent(r.value, stacks.total)
        );
        for f in &r.frames {
            let _ = match f.source() {
                Some(src) => writeln!(out, "{:rank$}   {}  {src}", "", f.function),
                None => writeln!(out, "{:rank$}   {}", "", f.function),
            };
        }
    }
}

/// "1 sample", "2 samples".
fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

//! `--svg`: the top functions as a horizontal bar chart, largest on top, drawn with plotters (SVG, or
//! PNG when the path ends in `.png`). plotters measures text with a TrueType font, loaded from the
//! system's DejaVu Sans.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{register_font, FontStyle};

use crate::error::Error;
use crate::frame::short_function;
use crate::stacks::Stacks;
use crate::top::FunctionRow;
use crate::units;

const FONT_PATHS: [&str; 3] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

/// The longest function label, in characters, before it is cut.
const LABEL_CHARS: usize = 72;
const BAR_HEIGHT: u32 = 26;
const WIDTH: u32 = 1200;

/// Draws `rows` (functions, largest first) by their flat value to `path`; rows of no flat value are
/// left out.
pub fn functions(path: &Path, stacks: &Stacks, rows: &[FunctionRow]) -> Result<(), Error> {
    ensure_font().map_err(Error::Chart)?;
    let rows: Vec<&FunctionRow> = rows.iter().filter(|r| r.flat > 0).collect();
    let height = 150 + BAR_HEIGHT * rows.len().max(1) as u32;
    let png = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("png"));
    let result = if png {
        draw(
            BitMapBackend::new(path, (WIDTH, height)).into_drawing_area(),
            stacks,
            &rows,
        )
    } else {
        draw(
            SVGBackend::new(path, (WIDTH, height)).into_drawing_area(),
            stacks,
            &rows,
        )
    };
    result.map_err(|e| Error::Chart(format!("{}: {e}", path.display())))
}

/// The axis's unit for values up to `max`: bytes as B, KiB, MiB or GiB (so its ticks fall on round
/// numbers of that unit), anything else as itself. Returns (divisor, unit name).
fn axis_unit(max: i64, unit: &str) -> (f64, String) {
    if unit != "bytes" {
        return (1.0, unit.to_owned());
    }
    let mut divisor = 1.0;
    for name in ["B", "KiB", "MiB", "GiB"] {
        if (max as f64) < divisor * 1024.0 || name == "GiB" {
            return (divisor, name.to_owned());
        }
        divisor *= 1024.0;
    }
    (divisor, "GiB".into())
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    stacks: &Stacks,
    rows: &[&FunctionRow],
) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(err)?;
    let unit = stacks.unit.as_str();
    let title = format!(
        "Heap profile: top {} functions by {} (flat)",
        rows.len(),
        stacks.sample_type
    );
    let root = root
        .titled(&title, ("sans-serif", 22).into_font().color(&BLACK))
        .map_err(err)?;
    let label_font = ("sans-serif", 13).into_font();
    let labels: Vec<String> = rows
        .iter()
        .map(|r| short_function(&r.name, LABEL_CHARS))
        .collect();
    let mut label_width = 0;
    for l in &labels {
        label_width = label_width.max(
            root.estimate_text_size(l, &label_font.clone().into_text_style(&root))
                .map_err(err)?
                .0,
        );
    }
    let n = rows.len();
    let max = rows.iter().map(|r| r.flat).max().unwrap_or(0).max(1);
    let (divisor, axis_unit) = axis_unit(max, unit);
    let caption = format!(
        "total {}; flat: allocated in the function itself, not in what it calls",
        units::value(stacks.total, unit)
    );
    let mut chart = ChartBuilder::on(&root)
        .caption(
            caption,
            ("sans-serif", 14).into_font().color(&RGBColor(90, 90, 90)),
        )
        .margin(16)
        .margin_right(40)
        .x_label_area_size(44)
        .y_label_area_size((label_width + 16).min(WIDTH * 3 / 5))
        // Room after the largest bar for its value. A segmented 0..k has k + 1 rows.
        .build_cartesian_2d(
            0.0..max as f64 / divisor * 1.2,
            (0..n.saturating_sub(1)).into_segmented(),
        )
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(RGBColor(238, 238, 238))
        .bold_line_style(RGBColor(215, 215, 215))
        .x_desc(format!("{} ({axis_unit})", stacks.sample_type))
        .x_labels(8)
        .x_label_formatter(&|v| {
            if v.fract().abs() < 1e-9 {
                format!("{v:.0}")
            } else {
                format!("{v:.1}")
            }
        })
        .y_labels(n)
        .y_label_formatter(&|y| match y {
            // Row 0 is the largest and sits at the top: the axis counts up from the bottom.
            SegmentValue::CenterOf(i) if *i < n => labels[n - 1 - i].clone(),
            _ => String::new(),
        })
        .label_style(label_font.clone())
        .axis_desc_style(("sans-serif", 14))
        .draw()
        .map_err(err)?;
    let color = |i: usize| {
        // From a deep orange for the largest to a pale one, as a flame graph colours its frames.
        let t = if n > 1 { i as f64 / (n - 1) as f64 } else { 0.0 };
        RGBColor(
            230 - (20.0 * t) as u8,
            95 + (90.0 * t) as u8,
            30 + (60.0 * t) as u8,
        )
    };
    chart
        .draw_series(rows.iter().enumerate().map(|(i, r)| {
            let y = n - 1 - i;
            let v = r.flat as f64 / divisor;
            let mut bar = Rectangle::new(
                [(0.0, SegmentValue::Exact(y)), (v, SegmentValue::Exact(y + 1))],
                color(i).filled(),
            );
            bar.set_margin(4, 4, 0, 0);
            bar
        }))
        .map_err(err)?;
    let value_style = label_font
        .color(&RGBColor(50, 50, 50))
        .pos(Pos::new(HPos::Left, VPos::Center));
    chart
        .draw_series(rows.iter().enumerate().map(|(i, r)| {
            let at = (r.flat as f64 / divisor, SegmentValue::CenterOf(n - 1 - i));
            let text = format!(
                "{}  {}",
                units::value(r.flat, unit),
                units::percent(r.flat, stacks.total)
            );
            EmptyElement::at(at) + Text::new(text, (6, 0), value_style.clone())
        }))
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

fn ensure_font() -> Result<(), String> {
    static DONE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        let bytes = FONT_PATHS
            .iter()
            .find_map(|p| std::fs::read(p).ok())
            .ok_or("no DejaVu Sans font found (apt-get install fonts-dejavu-core)")?;
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        register_font("sans-serif", FontStyle::Normal, bytes).map_err(|_| "the font did not load".to_string())
    })
    .clone()
}

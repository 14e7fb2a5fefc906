//! PNG bar charts of benchmark results (plotters, bitmap backend; text drawn with a TrueType font loaded
//! from the system's DejaVu Sans, as plotters' bitmap backend needs one).

use std::path::Path;

use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

const FONT_PATHS: [&str; 3] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

fn ensure_font() -> Result<(), String> {
    static DONE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        let bytes = FONT_PATHS
            .iter()
            .find_map(|p| std::fs::read(p).ok())
            .ok_or("no DejaVu Sans font found (apt-get install fonts-dejavu-core)")?;
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        register_font("sans-serif", FontStyle::Normal, bytes).map_err(|_| "font did not load".to_string())
    })
    .clone()
}

/// One bar chart per metric, side by side: `bars[i] = (label, values per metric)`.
pub fn bars(path: &Path, title: &str, metrics: &[&str], bars: &[(String, Vec<f64>)]) -> Result<(), String> {
    ensure_font()?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    let width = 420 * metrics.len() as u32;
    let root = BitMapBackend::new(path, (width, 460)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let root = root
        .titled(title, ("sans-serif", 22))
        .map_err(|e| e.to_string())?;
    let panels = root.split_evenly((1, metrics.len()));
    let palette = [
        RGBColor(120, 120, 120),
        RGBColor(200, 120, 40),
        RGBColor(60, 110, 190),
        RGBColor(30, 160, 90),
        RGBColor(150, 80, 170),
    ];
    for (m, (panel, metric)) in panels.iter().zip(metrics).enumerate() {
        let max = bars.iter().map(|b| b.1[m]).fold(0.0f64, f64::max).max(1e-9) * 1.15;
        let mut chart = ChartBuilder::on(panel)
            .caption(*metric, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(70)
            .y_label_area_size(70)
            .build_cartesian_2d((0..bars.len()).into_segmented(), 0.0..max)
            .map_err(|e| e.to_string())?;
        let labels: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(bars.len())
            .x_label_formatter(&|x| match x {
                SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .x_label_style(("sans-serif", 12))
            .y_label_formatter(&|v| {
                if *v >= 1e6 {
                    format!("{:.1}M", v / 1e6)
                } else if *v >= 1e4 {
                    format!("{:.0}k", v / 1e3)
                } else if *v >= 1e3 {
                    format!("{:.1}k", v / 1e3)
                } else {
                    format!("{v:.0}")
                }
            })
            .draw()
            .map_err(|e| e.to_string())?;
        chart
            .draw_series(bars.iter().enumerate().map(|(i, b)| {
                let c = palette[i % palette.len()];
                let mut r = Rectangle::new(
                    [
                        (SegmentValue::Exact(i), 0.0),
                        (SegmentValue::Exact(i + 1), b.1[m]),
                    ],
                    c.filled(),
                );
                r.set_margin(0, 0, 8, 8);
                r
            }))
            .map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn writes_a_png_or_says_why_not() {
        let dir = std::env::temp_dir().join(format!("hopless-chart-{}", std::process::id()));
        let path = dir.join("c.png");
        let r = super::bars(
            &path,
            "test",
            &["ops/s", "p99 ns"],
            &[("a".into(), vec![1e6, 300.0]), ("b".into(), vec![2e6, 200.0])],
        );
        match r {
            Ok(()) => {
                let bytes = std::fs::read(&path).unwrap();
                assert_eq!(&bytes[1..4], b"PNG");
            }
            Err(e) => assert!(e.contains("font"), "{e}"),
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}

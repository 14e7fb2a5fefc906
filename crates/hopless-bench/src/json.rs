//! Writing results as a JSON file: the shape every `--json` shares, `{"results": [...]}`, or a bench's
//! own document.

use std::path::Path;

use serde::Serialize;

#[derive(Serialize)]
struct Results<'a, T> {
    results: &'a [T],
}

/// Writes `{"results": [...]}` to `path`.
pub fn write_results<T: Serialize>(path: &Path, results: &[T]) -> std::io::Result<()> {
    write(path, &Results { results })
}

/// Writes `doc`, pretty-printed, to `path`, creating its directory if need be.
pub fn write<T: Serialize>(path: &Path, doc: &T) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(dir)?;
        }
    }
    let text = serde_json::to_string_pretty(doc).map_err(std::io::Error::other)?;
    std::fs::write(path, text + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_have_the_documented_shape() {
        #[derive(Serialize)]
        struct Row {
            workload: &'static str,
            rounds: Vec<f64>,
        }
        let dir = std::env::temp_dir().join(format!("hopless-json-{}", std::process::id()));
        let path = dir.join("sub").join("out.json");
        let rows = [Row {
            workload: "pair-16",
            rounds: vec![1.4, 1.5, 1.7],
        }];
        write_results(&path, &rows).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.ends_with("}\n"), "{text}");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["results"][0]["workload"], "pair-16");
        assert_eq!(v["results"][0]["rounds"][2], 1.7);
        std::fs::remove_dir_all(dir).unwrap();
    }
}

//! A frame of a symbolized stack, and the short forms of its names that the report and chart print.

/// One frame: a function, and where in it when the debug info says.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Frame {
    /// The function's name, demangled; `module+0xOFFSET` or `0xADDRESS` when it could not be found.
    pub function: String,
    /// The source file, as the debug info gives it.
    pub file: Option<String>,
    /// The line in `file`.
    pub line: Option<u32>,
}

impl Frame {
    /// A frame known by its name alone.
    pub fn named(function: impl Into<String>) -> Frame {
        Frame {
            function: function.into(),
            file: None,
            line: None,
        }
    }

    /// `file:line` shortened by [`short_file`], or `None` without a file.
    pub fn source(&self) -> Option<String> {
        let file = short_file(self.file.as_deref()?);
        Some(match self.line {
            Some(line) => format!("{file}:{line}"),
            None => file.to_owned(),
        })
    }
}

/// A source path from its crate or project directory on: what comes after the directory above the last
/// `src/` (`hopless-kv/src/store/write.rs`), else the last two components.
pub fn short_file(path: &str) -> &str {
    if let Some(i) = path.rfind("/src/") {
        let start = path[..i].rfind('/').map_or(0, |j| j + 1);
        return &path[start..];
    }
    match path.rmatch_indices('/').nth(1) {
        Some((i, _)) => &path[i + 1..],
        None => path,
    }
}

/// A function name cut to at most `max` characters for a chart's label: long names keep their end,
/// where the method and its type are, behind an ellipsis.
pub fn short_function(name: &str, max: usize) -> String {
    let n = name.chars().count();
    if n <= max {
        return name.to_owned();
    }
    let tail: String = name.chars().skip(n + 1 - max).collect();
    format!("…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_shortened_to_their_crate() {
        assert_eq!(
            short_file("/work/main/crates/hopless-kv/src/store/write.rs"),
            "hopless-kv/src/store/write.rs"
        );
        assert_eq!(short_file("/usr/include/stdlib.h"), "include/stdlib.h");
        assert_eq!(short_file("main.c"), "main.c");
    }

    #[test]
    fn long_names_keep_their_end() {
        assert_eq!(short_function("a::b", 10), "a::b");
        let s = short_function("alloc::raw_vec::RawVec<T,A>::grow_one", 12);
        assert_eq!(s.chars().count(), 12);
        assert!(s.ends_with("::grow_one"), "{s}");
    }
}

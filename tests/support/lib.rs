//! Helpers shared by the end-to-end tests in `tests/`: where the fixtures live and how a fixture
//! records the verdict it must get.

use std::path::{Path, PathBuf};

/// The folder holding the CUDA fixtures.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join("fixtures")
}

/// The expectation a fixture states about itself in a comment line:
/// `// expect: <verdict>` and optionally `// expect-finding: <kind> [array=NAME] [line=N]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expectation {
    /// kernel name → verdict (`race-free`, `racy`, `divergent`, `unknown`, `unsupported`).
    /// A bare `// expect: V` applies to every kernel of the file (key `*`).
    pub verdicts: Vec<(String, String)>,
}

/// Parses `// expect: racy` or `// expect: kernel_name=racy` lines.
pub fn read_expectation(text: &str) -> Expectation {
    let mut verdicts = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("// expect:") {
            for item in rest.split_whitespace() {
                match item.split_once('=') {
                    Some((k, v)) => verdicts.push((k.to_string(), v.to_string())),
                    None => verdicts.push(("*".to_string(), item.to_string())),
                }
            }
        }
    }
    Expectation { verdicts }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_expectations() {
        let e = read_expectation("// expect: racy\n// expect: k2=race-free\n__global__ void k(){}");
        assert_eq!(
            e.verdicts,
            vec![("*".into(), "racy".into()), ("k2".into(), "race-free".into())]
        );
    }
}

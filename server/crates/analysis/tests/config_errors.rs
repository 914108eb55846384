//! Every kind of `cudarace.toml` error, as the CLI shows it (codespan-reporting, no colors): the
//! file, the line with the offending part, and what is allowed. One snapshot per case.

use cudarace_analysis::render::{config_error, HumanOptions};
use cudarace_analysis::Config;
use std::path::Path;

fn rendered(text: &str) -> String {
    let err = Config::parse(Path::new("proj/cudarace.toml"), text)
        .expect_err("the configuration is invalid");
    // The one-line form names the file and line too.
    assert!(
        err.to_string()
            .starts_with(&format!("proj/cudarace.toml:{}: ", err.line())),
        "{err}"
    );
    config_error(&err, &HumanOptions { color: false })
}

macro_rules! config_error_case {
    ($name:ident, $text:expr) => {
        #[test]
        fn $name() {
            insta::assert_snapshot!(stringify!($name), rendered($text));
        }
    };
}

config_error_case!(unknown_top_level_key, "fail_on = \"error\"\n");
config_error_case!(
    unknown_key_in_launch,
    "[launch]\nblock-dim = [64]\nblok-dim = [32]\n"
);
config_error_case!(
    unknown_key_in_kernel,
    "[[kernel]]\nname = \"k\"\nthreads = 3\n"
);
config_error_case!(kernel_without_name, "[[kernel]]\nblock-dim = [32]\n");
config_error_case!(empty_kernel_name, "[[kernel]]\nname = \"\"\n");
config_error_case!(bad_kernel_glob, "[[kernel]]\nname = \"reduce[\"\n");
config_error_case!(block_too_large, "[launch]\nblock-dim = [64, 64]\n");
config_error_case!(block_dimension_limit, "[launch]\nblock-dim = [1, 1, 128]\n");
config_error_case!(zero_size, "[launch]\ngrid-dim = [0]\n");
config_error_case!(too_many_sizes, "[launch]\ngrid-dim = [1, 2, 3, 4]\n");
config_error_case!(grid_too_large, "[launch]\ngrid-dim = [1, 70000]\n");
config_error_case!(size_of_wrong_type, "[launch]\nblock-dim = \"256\"\n");
config_error_case!(negative_size, "[launch]\nblock-dim = [-4]\n");
config_error_case!(bad_level, "[severity]\ndata-race = \"loud\"\n");
config_error_case!(
    bad_level_in_table,
    "[severity]\nbarrier-divergence = { definite = \"error\", possible = \"maybe\" }\n"
);
config_error_case!(
    unknown_confidence,
    "[severity]\ndata-race = { certain = \"error\" }\n"
);
config_error_case!(unknown_severity_key, "[severity]\nwarp-race = \"error\"\n");
config_error_case!(level_of_wrong_type, "[severity]\nunverified = 3\n");
config_error_case!(bad_fail_on, "fail-on = \"never\"\n");
config_error_case!(bad_define, "[frontend]\ndefine = [\"TILE=16\", \"2X=1\"]\n");
config_error_case!(bad_exclude_glob, "exclude = [\"vendor/[\"]\n");
config_error_case!(zero_timeout, "[solver]\ntimeout-ms = 0\n");
config_error_case!(unknown_solver_key, "[solver]\nrlimit = 5\n");
config_error_case!(same_value_not_a_bool, "allow-same-value-writes = \"yes\"\n");
config_error_case!(toml_syntax_error, "[launch\nblock-dim = [64]\n");

#[test]
fn unreadable_file() {
    let err = Config::load(Path::new("/nonexistent/cudarace.toml")).unwrap_err();
    assert!(
        err.message
            .starts_with("cannot read the configuration file"),
        "{err}"
    );
    let text = config_error(&err, &HumanOptions { color: false });
    assert!(text.contains("/nonexistent/cudarace.toml"), "{text}");
}

#[test]
fn discovery_walks_up_from_the_file() {
    let dir = std::env::temp_dir().join(format!("cudarace-config-{}", std::process::id()));
    let deep = dir.join("a/b/c");
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(dir.join("a/cudarace.toml"), "").unwrap();
    let file = deep.join("k.cu");
    std::fs::write(&file, "").unwrap();
    assert_eq!(Config::discover(&file), Some(dir.join("a/cudarace.toml")));
    // The nearest one wins.
    std::fs::write(dir.join("a/b/cudarace.toml"), "").unwrap();
    assert_eq!(Config::discover(&file), Some(dir.join("a/b/cudarace.toml")));
    let _ = std::fs::remove_dir_all(&dir);
}

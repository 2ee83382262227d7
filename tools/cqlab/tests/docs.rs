//! docs/cli.md against the CLI it describes: a section for every
//! subcommand, the one exit-code table, every waypoint, and the known-bug
//! variants (which `race --variant` must accept and the firmware crate
//! must build).

use clap::CommandFactory;

fn docs() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/cli.md")).expect("docs/cli.md")
}

#[test]
fn every_subcommand_has_a_section() {
    let headings: Vec<String> = docs().lines().filter(|l| l.starts_with("### ")).map(String::from).collect();
    let mut missing = Vec::new();
    for top in cqlab::Cli::command().get_subcommands().filter(|c| !c.is_hide_set()) {
        let leaves: Vec<String> = if top.has_subcommands() {
            top.get_subcommands()
                .filter(|c| !c.is_hide_set())
                .map(|c| format!("{} {}", top.get_name(), c.get_name()))
                .collect()
        } else {
            vec![top.get_name().to_owned()]
        };
        for leaf in leaves {
            if !headings.iter().any(|h| h.contains(&leaf)) {
                missing.push(leaf);
            }
        }
    }
    assert!(missing.is_empty(), "docs/cli.md has no section for: {missing:?}");
}

#[test]
fn the_exit_code_table_is_the_clis() {
    let docs = docs();
    for code in 0..=6 {
        assert!(docs.contains(&format!("\n| {code} |")), "docs/cli.md: no row for exit status {code}");
    }
    assert!(!docs.contains("\n| 7 |"), "docs/cli.md lists a status the CLI does not have");
    let help = cqlab::Cli::command().render_long_help().to_string();
    for part in
        ["0 success", "1 the run failed", "2 usage error", "3 hang", "4 device error", "5 mismatch", "6 incomplete"]
    {
        assert!(help.contains(part), "cqlab --help lacks {part:?}");
    }
}

#[test]
fn every_waypoint_is_in_the_glossary() {
    let docs = docs();
    // Every waypoint but the power-on word (no label).
    for wp in cqlab_abi::waypoint::Waypoint::ALL.iter().filter_map(|w| w.label()).filter(|l| !l.is_empty()) {
        assert!(docs.contains(&format!("`{wp}`")), "docs/cli.md: waypoint {wp} is missing from the glossary");
    }
}

#[test]
fn the_known_bug_variants_are_the_firmwares_and_race_takes_them() {
    let cargo =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../device-kernels/Cargo.toml")).unwrap();
    let variants: Vec<&str> = cargo.lines().filter_map(|l| l.strip_prefix("bug-")?.split_whitespace().next()).collect();
    assert_eq!(variants.len(), 6, "{variants:?}");
    let docs = docs();
    let help = cqlab::Cli::command().find_subcommand_mut("race").unwrap().render_long_help().to_string();
    for v in variants.iter().copied().chain(["none"]) {
        assert!(docs.contains(&format!("`{v}`")), "docs/cli.md: variant {v} is missing");
        assert!(help.contains(v), "race --help does not name {v}");
        let argv = ["cqlab", "race", "--variant", v].map(std::ffi::OsString::from);
        assert_eq!(cqlab::check(argv), cqlab::Verdict::Runs, "race --variant {v}");
    }
}

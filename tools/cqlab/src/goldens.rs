//! tt-metal's pgm_dispatch goldens beside `cqlab bench dispatch`: one data
//! file (`data/pgm-dispatch-goldens.json`, built in) of the published
//! per-program times, each with its case name and the run it came from, and
//! the rule that pairs a measured point with the case of the same shape.
//!
//! The work is not equal, and the rows say so: tt-metal's cases run a
//! kernel on every processor of a core (BRISC, NCRISC, three TRISCs), cqlab
//! runs one, on BRISC; the grids are each chip's own.

use serde::Deserialize;

/// The built-in goldens.
const GOLDENS: &str = include_str!("../data/pgm-dispatch-goldens.json");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[allow(dead_code)]
    about: String,
    source: String,
    /// Each environment's chip and provenance (kept as written).
    environments: std::collections::BTreeMap<String, Environment>,
    goldens: Vec<Golden>,
}

#[derive(Deserialize)]
struct Environment {
    arch: String,
}

/// One published case and the point shape it pairs with.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct Golden {
    pub environment: String,
    /// `wormhole` or `blackhole`.
    pub arch: String,
    /// tt-metal's benchmark case.
    pub case: String,
    /// The `bench dispatch` axis it belongs to (for readers of the file:
    /// pairing goes by shape).
    #[allow(dead_code)]
    pub axis: String,
    /// `all` or `one`.
    pub cores: String,
    pub kernel_bytes: u32,
    pub unique_args: u32,
    pub common_args: u32,
    pub kernel_cycles: u32,
    pub trace: bool,
    pub golden_us: f64,
    /// The golden file it is in.
    pub file: String,
    /// What the case does beyond its axis (e.g. circular buffers).
    #[serde(default)]
    pub note: Option<String>,
}

/// A measured point's shape, as far as a golden can match it (the axis it
/// was measured for does not matter: the full-grid 256 B point of the
/// binary-size axis is the base case).
#[derive(Clone, Copy)]
pub struct Shape<'a> {
    pub arch: &'a str,
    pub one_core: bool,
    /// The binary's size where the point varies it (a padded kernel of the
    /// binary-size axis): the golden of that size. Otherwise tt-metal's
    /// 256 B case, the size every other axis of pgm_dispatch runs.
    pub kernel_bytes: Option<u32>,
    /// Resident kernels only: tt-metal's cases run one program repeatedly.
    pub cached: bool,
    pub unique_args: u32,
    pub common_args: u32,
    pub kernel_cycles: u32,
    pub trace: bool,
    pub cqs: u8,
}

/// The goldens and where they come from.
pub struct Goldens {
    pub source: String,
    goldens: Vec<Golden>,
}

impl Goldens {
    /// The built-in file (checked by a test): each golden's environment is
    /// listed, for the golden's arch.
    pub fn builtin() -> Goldens {
        let f: File = serde_json::from_str(GOLDENS).expect("data/pgm-dispatch-goldens.json parses");
        for g in &f.goldens {
            let arch = f.environments.get(&g.environment).map(|e| e.arch.as_str());
            assert_eq!(arch, Some(g.arch.as_str()), "pgm-dispatch-goldens.json: {}", g.case);
        }
        Goldens { source: f.source, goldens: f.goldens }
    }

    /// The golden of `s`'s shape, if tt-metal publishes one.
    pub fn find(&self, s: &Shape) -> Option<&Golden> {
        if !s.cached || s.cqs != 1 {
            return None;
        }
        let cores = if s.one_core { "one" } else { "all" };
        self.goldens.iter().find(|g| {
            g.arch == s.arch
                && g.cores == cores
                && g.trace == s.trace
                && g.unique_args == s.unique_args
                && g.common_args == s.common_args
                && g.kernel_cycles == s.kernel_cycles
                && g.kernel_bytes == s.kernel_bytes.unwrap_or(256)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_goldens_parse_and_name_their_environments() {
        let f = Goldens::builtin();
        assert!(f.source.contains("pgm_dispatch"), "{}", f.source);
        assert!(!f.goldens.is_empty());
        for g in &f.goldens {
            assert!(["wormhole", "blackhole"].contains(&g.arch.as_str()), "{}", g.case);
            assert!(["all", "one"].contains(&g.cores.as_str()), "{}", g.case);
            assert!(g.golden_us > 0.0 && g.golden_us.is_finite(), "{}", g.case);
            // pgm_dispatch.json runs every case traced, pgm_dispatch_no_trace.json none.
            assert_eq!(g.trace, g.file == "pgm_dispatch.json", "{}", g.case);
            assert_eq!(g.case.contains("_no_trace"), !g.trace, "{}", g.case);
        }
    }

    #[test]
    fn a_point_pairs_with_the_case_of_its_shape_only() {
        let g = Goldens::builtin();
        let base = Shape {
            arch: "blackhole",
            one_core: false,
            kernel_bytes: None,
            cached: true,
            unique_args: 0,
            common_args: 0,
            kernel_cycles: 0,
            trace: true,
            cqs: 1,
        };
        let found = g.find(&base).expect("Blackhole's traced full grid");
        assert_eq!((found.kernel_bytes, found.trace, found.cores.as_str()), (256, true, "all"));
        assert!(g.find(&Shape { cached: false, ..base }).is_none(), "an upload every program is not tt-metal's case");
        assert!(g.find(&Shape { cqs: 2, ..base }).is_none());
        let sized = g.find(&Shape { kernel_bytes: Some(4096), ..base }).expect("the 4 KiB case");
        assert_eq!(sized.kernel_bytes, 4096);
        assert!(g.find(&Shape { kernel_bytes: Some(3000), ..base }).is_none(), "no case of that size");
        assert!(g.find(&Shape { arch: "grayskull", ..base }).is_none());
    }
}

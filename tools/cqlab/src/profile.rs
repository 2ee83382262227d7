//! Statistical firmware profiles (`cqlab bench dispatch --profile`): the
//! embedded simulator samples chosen cores' PCs at the end of every
//! scheduling slice (`Chip::set_pc_sampling`), and each PC is named by the
//! function of that core's firmware ELF that holds it. A sample stands for
//! its slice's device time (200 cycles by default, less where a host step
//! cut the slice short), so a function's cycles are its share of the
//! core's time, to within a few slices.
//! A core parked by fast-forward in a polling loop is sampled at the loop's
//! head: waits show as the function that waits.

use crate::chip::CoreName;
use anyhow::{Context, Result};
use cqlab_abi::noc::Coord;
use cqlab_driver::Device;
use object::{Object, ObjectSymbol, SymbolKind};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One function's share of a core's device time.
#[derive(Clone, Debug, serde::Serialize)]
pub struct FunctionShare {
    /// The tile (translated coordinates; its BRISC is sampled): `{"x", "y"}`
    /// in JSON, as every JSON output names a core.
    pub core: Coord,
    /// The core as `--profile` names it (`prefetcher0`, `worker1.2`).
    pub name: String,
    pub function: String,
    /// Device cycles of the samples that found the core in this function.
    pub cycles: u64,
    /// Of the core's sampled cycles, 0..=1.
    pub share: f64,
}

/// Cores to profile, as one option value.
#[derive(Clone, Debug)]
pub struct Cores(pub Vec<CoreName>);

/// Parses `prefetcher0,dispatcher0,worker1.2`.
pub fn parse_cores(spec: &str) -> Result<Cores, String> {
    spec.split(',')
        .map(|name| {
            CoreName::parse(name.trim())
                .ok_or_else(|| format!("--profile {name}: a core is prefetcherQ, dispatcherQ or workerC.R"))
        })
        .collect::<Result<_, _>>()
        .map(Cores)
}

/// Starts sampling the BRISCs of `cores` (dropping earlier samples).
pub fn start(dev: &mut Device, cores: &[Coord]) -> Result<()> {
    let cores: Vec<_> = cores.iter().map(|&c| cqlab_driver::CoreId::brisc(c)).collect();
    let Some(sim) = dev.backend().introspect() else {
        anyhow::bail!("--profile needs the embedded simulator");
    };
    Ok(sim.set_pc_sampling(&cores)?)
}

/// Function tables of the firmware ELFs read so far, by path: each ELF is
/// read once per run, however many points are profiled.
#[derive(Default)]
pub struct Symbols(BTreeMap<PathBuf, Vec<Function>>);

/// Stops sampling and names the samples by function: per core, most
/// cycles first.
pub fn take(dev: &mut Device, symbols: &mut Symbols) -> Result<Vec<FunctionShare>> {
    let Some(sim) = dev.backend().introspect() else {
        anyhow::bail!("--profile needs the embedded simulator");
    };
    let samples = sim.pc_samples()?;
    sim.set_pc_sampling(&[])?;
    let symbols = &mut symbols.0;
    let mut by_function: BTreeMap<(cqlab_driver::CoreId, String), u64> = BTreeMap::new();
    let mut per_core: BTreeMap<cqlab_driver::CoreId, u64> = BTreeMap::new();
    for (core, pc, cycles) in samples {
        let name = match dev.firmware_elf(core) {
            Some(elf) => {
                if !symbols.contains_key(&elf) {
                    let table = functions(&elf)?;
                    symbols.insert(elf.clone(), table);
                }
                function_at(&symbols[&elf], pc)
            }
            None => format!("pc {pc:#x}"),
        };
        *by_function.entry((core, name)).or_default() += cycles;
        *per_core.entry(core).or_default() += cycles;
    }
    let mut out: Vec<FunctionShare> = by_function
        .into_iter()
        .map(|((core, function), cycles)| FunctionShare {
            core: core.tile,
            name: CoreName::of(dev.chip(), core.tile).map_or_else(|| core.to_string(), |n| n.to_string()),
            function,
            cycles,
            share: cycles as f64 / per_core[&core] as f64,
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name).then(b.cycles.cmp(&a.cycles)).then(a.function.cmp(&b.function)));
    Ok(out)
}

/// A function of a firmware ELF: [start, end) and its demangled name.
struct Function {
    start: u64,
    end: u64,
    name: String,
}

fn functions(elf: &Path) -> Result<Vec<Function>> {
    let bytes = std::fs::read(elf).with_context(|| format!("reading {} for its symbols", elf.display()))?;
    let file = object::File::parse(&*bytes).with_context(|| format!("{}: not an ELF", elf.display()))?;
    let mut v: Vec<Function> = file
        .symbols()
        .filter(|s| s.kind() == SymbolKind::Text && s.size() > 0)
        .filter_map(|s| {
            let name = s.name().ok()?;
            Some(Function {
                start: s.address(),
                end: s.address() + s.size(),
                name: format!("{:#}", rustc_demangle::demangle(name)),
            })
        })
        .collect();
    v.sort_by_key(|f| f.start);
    Ok(v)
}

/// The function holding `pc`, or where it lies when none does (kernel
/// text a worker runs from its slots has no symbols in the worker ELF).
fn function_at(table: &[Function], pc: u32) -> String {
    let pc = pc as u64;
    let i = table.partition_point(|f| f.start <= pc);
    match i.checked_sub(1).map(|i| &table[i]) {
        Some(f) if pc < f.end => f.name.clone(),
        _ => {
            let kernels = cqlab_abi::memory_map::KERNEL_TEXT;
            if (kernels.base as u64..kernels.end() as u64).contains(&pc) {
                "(kernel text)".into()
            } else {
                format!("pc {pc:#x}")
            }
        }
    }
}

//! What the pytest suite (`device-sim/libttsim/pytest`) drives through
//! tt-umd, computed here from `cqlab-abi` so Python writes no number the
//! ABI owns: `cargo xtask libttsim` writes it beside each library as
//! `fixtures.json`.
//!
//! - `boot`: boot one compute tile's worker firmware as docs/chips.md
//!   section 5 says (the five images, the `NocMap`, BRISC's reset `jal` at
//!   L1 0, `SOFT_RESET_0` releasing BRISC) and what each core's alive
//!   record must then say.
//! - `dma_probe` ([`DmaProbe`]): a hand-assembled BRISC program (`cqlab_sim::niu_asm`, as
//!   tt-metal's dataflow API drives the NIU) that writes `len` bytes of its
//!   L1 to host memory through the PCIe tile, waits for the ack, reads them
//!   back from host memory into another L1 buffer, then stores a flag and
//!   spins: a round trip through the host's DMA callbacks.
//!
//! Both are for the board the library runs by default (no
//! `CQLAB_TTSIM_BOARD`, no harvesting).

use crate::device::Device;
use crate::error::ApiError;
use crate::settings::Settings;
use cqlab_abi::arch::niu::counter;
use cqlab_abi::arch::tensix::{self, Processor};
use cqlab_abi::arch::{Arch, Noc};
use cqlab_abi::boot::reset_jal;
use cqlab_abi::firmware::FirmwareId;
use cqlab_abi::mailbox::{self, AliveRecord, ALIVE_MAGIC};
use cqlab_abi::memory_map::{firmware_entry, ENTRY_POINT, RESET_JAL, USER};
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::soc::{ChipLayout, LayoutError};
use cqlab_abi::ABI_VERSION;
use cqlab_sim::asm::{jal, li, sw, to_bytes};
use cqlab_sim::niu_asm::NiuAsm;
use serde_json::{json, Value};
use std::mem::offset_of;
use std::path::Path;

/// Host-memory offset the probe writes and reads (inside tt-umd's channel 0).
pub const PROBE_HOST_OFFSET: u64 = 0x1000;
/// Bytes it moves.
pub const PROBE_LEN: u32 = 64;
/// The value it stores at its flag when done.
pub const PROBE_DONE: u32 = 0xD0A7_D0E5;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn coords(layout: &ChipLayout, noc0: Coord) -> Value {
    let t = layout.tile(noc0).expect("a tile of the layout");
    json!({ "noc0": [t.noc0.x, t.noc0.y], "translated": [t.translated.x, t.translated.y] })
}

/// The boot recipe of the first compute tile.
fn boot(layout: &ChipLayout, firmware_dir: &Path) -> Result<Value, LayoutError> {
    let placement = layout.placement(1)?;
    let map = layout.noc_map(&placement)?;
    let tile = placement.compute[0];
    let translated = layout.tile(tile).expect("a compute tile").translated;
    let images: Vec<Value> = Processor::ALL
        .iter()
        .map(|&p| {
            let id = FirmwareId::worker(p);
            json!({
                "processor": p.name(),
                "elf": firmware_dir.join(id.name()),
                "entry": firmware_entry(p),
                "alive_addr": match p { Processor::Brisc => mailbox::ALIVE, _ => mailbox::subordinate(p.index()) },
                "firmware_id": id as u32,
            })
        })
        .collect();
    Ok(json!({
        "tile": coords(layout, tile),
        "images": images,
        "noc_map": { "addr": mailbox::NOC_MAP, "bytes": hex(zerocopy::IntoBytes::as_bytes(&map)) },
        "reset_jal": { "addr": RESET_JAL, "value": reset_jal(firmware_entry(Processor::Brisc)) },
        "soft_reset": {
            "addr": tensix::SOFT_RESET_0,
            "all": tensix::SOFT_RESET_ALL,
            "brisc_only_run": tensix::SOFT_RESET_BRISC_ONLY_RUN,
        },
        "alive": {
            "size": size_of::<AliveRecord>(),
            "magic": ALIVE_MAGIC,
            "abi_version": ABI_VERSION,
            "core_xy": translated.packed(),
            "offsets": {
                "magic": offset_of!(AliveRecord, magic),
                "firmware_id": offset_of!(AliveRecord, firmware_id),
                "abi_version": offset_of!(AliveRecord, abi_version),
                "core_xy": offset_of!(AliveRecord, core_xy),
            },
        },
    }))
}

/// The DMA probe on the last Tensix tile: its program and where it keeps
/// what it moves (the pytest suite gets it as JSON; Rust tests load it
/// with [`DmaProbe::load`]).
pub struct DmaProbe {
    /// NOC0 coordinates of its tile (tt-umd's).
    pub noc0: Coord,
    /// Translated coordinates of its tile (the NIU program's own).
    pub translated: Coord,
    /// BRISC's program, at `ENTRY_POINT`.
    pub program: Vec<u8>,
    /// L1 the payload is written to host memory from.
    pub src: u32,
    /// L1 it is read back into.
    pub dst: u32,
    /// L1 word that holds [`PROBE_DONE`] when the probe is done.
    pub flag: u32,
}

impl DmaProbe {
    pub fn new(layout: &ChipLayout) -> DmaProbe {
        let chip = layout.params();
        let tile = layout.tile(*layout.workers().last().expect("Tensix tiles")).expect("a tile");
        let me = tile.translated;
        let (src, dst, flag) = (USER.base, USER.base + 0x400, USER.base + 0x800);
        let host = NocAddr(layout.host_mem_noc_base() | PROBE_HOST_OFFSET);
        let niu = NiuAsm { chip, noc: Noc::Noc0, base: 28, tmp: 29 };
        let mut p = niu.write(me, src, host, PROBE_LEN);
        p.extend(niu.wait_counter(counter::NIU_MST_WR_ACK_RECEIVED, 1));
        p.extend(niu.read(me, host, dst, PROBE_LEN, 0));
        p.extend(niu.wait_counter(counter::NIU_MST_RD_RESP_RECEIVED, 1));
        p.extend(li(5, flag));
        p.extend(li(6, PROBE_DONE));
        p.push(sw(6, 5, 0));
        p.push(jal(0, 0));
        DmaProbe { noc0: tile.noc0, translated: me, program: to_bytes(&p), src, dst, flag }
    }

    /// Loads it on `device`'s tile with tile access and releases BRISC.
    pub fn load(&self, device: &mut Device) -> Result<(), ApiError> {
        let (x, y) = (self.translated.x as u32, self.translated.y as u32);
        device.tile_write(x, y, ENTRY_POINT as u64, &self.program)?;
        device.tile_write(x, y, RESET_JAL as u64, &reset_jal(ENTRY_POINT).to_le_bytes())?;
        device.tile_write(x, y, tensix::SOFT_RESET_0 as u64, &tensix::SOFT_RESET_BRISC_ONLY_RUN.to_le_bytes())
    }

    /// Whether it is done on `device`.
    pub fn done(&self, device: &Device) -> Result<bool, ApiError> {
        let mut word = [0u8; 4];
        device.tile_peek(self.translated.x as u32, self.translated.y as u32, self.flag as u64, &mut word)?;
        Ok(u32::from_le_bytes(word) == PROBE_DONE)
    }
}

fn dma_probe(layout: &ChipLayout) -> Value {
    let p = DmaProbe::new(layout);
    let tile = p.noc0;
    json!({
        "tile": coords(layout, tile),
        "program": { "addr": ENTRY_POINT, "bytes": hex(&p.program) },
        "reset_jal": { "addr": RESET_JAL, "value": reset_jal(ENTRY_POINT) },
        "soft_reset": { "addr": tensix::SOFT_RESET_0, "brisc_only_run": tensix::SOFT_RESET_BRISC_ONLY_RUN },
        "src": p.src,
        "dst": p.dst,
        "flag": p.flag,
        "done": PROBE_DONE,
        "len": PROBE_LEN,
        "host_offset": PROBE_HOST_OFFSET,
    })
}

/// `arch`'s fixtures as JSON, naming the firmware ELFs in `firmware_dir`
/// (`target/riscv32im-unknown-none-elf/firmware/<arch>`).
pub fn json(arch: Arch, firmware_dir: &Path) -> Result<String, LayoutError> {
    let settings = Settings::read(arch, |_| None).expect("the defaults are valid");
    let layout = ChipLayout::new(settings.board, settings.harvesting.clone())?;
    let v = json!({
        "arch": arch.short_name(),
        "board": settings.board.name(),
        "harvest": "none",
        "l1_size": layout.l1_size(),
        "soft_reset_addr": tensix::SOFT_RESET_0,
        "boot": boot(&layout, firmware_dir)?,
        "dma_probe": dma_probe(&layout),
    });
    Ok(serde_json::to_string_pretty(&v).expect("JSON of plain values"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_chips_have_fixtures() {
        for arch in Arch::ALL {
            let text = json(arch, Path::new("/fw")).unwrap();
            let v: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(v["boot"]["images"].as_array().unwrap().len(), 5);
            assert_eq!(v["boot"]["noc_map"]["bytes"].as_str().unwrap().len(), 2 * 512);
            assert!(v["dma_probe"]["program"]["bytes"].as_str().unwrap().len() > 100);
        }
    }
}

"""tt-umd drives cqlab's chip: the device and its descriptor, memory and
registers through tt-umd's TLB windows and through tile access, RISC-V
reset, booting cqlab's firmware, DMA to host memory through tt-umd's
callbacks, two chips, determinism."""

import json
import os
import pathlib
import struct
import subprocess
import sys

import pytest
import tt_umd

from elf32 import parse

HERE = pathlib.Path(__file__).resolve().parent


def words(d, x, y, addr, n=1):
    return struct.unpack(f"<{n}I", d.noc_read(x, y, addr, 4 * n))


def test_device_and_its_descriptor(chip):
    d = chip.device()
    assert type(d).__name__ == "TTSimTTDevice"
    assert d.get_arch() == chip.umd_arch
    tensix = chip.tensix(d)
    assert len(tensix) == {"wormhole": 80, "blackhole": 140}[chip.arch], "every Tensix tile of the descriptor"
    assert len(chip.dram(d)) > 0
    # The chip's PCI ids; its NIU says NOC translation is on.
    device_id = {"wormhole": 0x401E, "blackhole": 0xB140}[chip.arch]
    assert chip.lib.libttsim_pci_config_rd32(0, 0) == device_id << 16 | 0x1E52
    assert chip.lib.libttsim_pci_config_rd32(8, 0) == 0xFFFFFFFF, "an empty slot"
    assert d.get_noc_translation_enabled()
    assert chip.lib.errors() == 0, chip.lib.last_error()


def test_l1_and_dram_of_several_tiles_through_tlb_windows(chip):
    d = chip.device()
    lib = chip.lib
    tensix, dram = chip.tensix(d), chip.dram(d)
    picks = [tensix[0], tensix[len(tensix) // 2], tensix[-1]]
    before = lib.stats("tlb_config_writes", "tlb_window_writes", "tlb_window_reads", "tile_writes", "tile_reads")
    for i, (x, y) in enumerate(picks):
        d.noc_write(x, y, 0x20000, bytes([i + 1]) * 256)
    for i, (x, y) in enumerate(picks):
        assert d.noc_read(x, y, 0x20000, 256) == bytes([i + 1]) * 256, (x, y)
    for i, (x, y) in enumerate(dram[:3] + dram[-2:]):
        d.noc_write(x, y, 0x100000 + 64 * i, struct.pack("<Q", 0xD0D0_0000 + i))
    for i, (x, y) in enumerate(dram[:3] + dram[-2:]):
        assert d.noc_read(x, y, 0x100000 + 64 * i, 8) == struct.pack("<Q", 0xD0D0_0000 + i)
    after = lib.stats(*before)
    # tt-umd reprograms a TLB for every access and moves the data through its window; no tile access.
    assert after["tlb_window_writes"] - before["tlb_window_writes"] == 8
    assert after["tlb_window_reads"] - before["tlb_window_reads"] == 8
    assert after["tlb_config_writes"] - before["tlb_config_writes"] >= 16
    assert (after["tile_writes"], after["tile_reads"]) == (before["tile_writes"], before["tile_reads"])
    # A transfer larger than a window is split by tt-umd at window boundaries.
    big = bytes(range(256)) * (3 * 4096)
    x, y = dram[0]
    d.noc_write(x, y, 0x200000 - 1000, big)
    assert d.noc_read(x, y, 0x200000 - 1000, len(big)) == big
    assert lib.errors() == 0, lib.last_error()


def test_tile_access_and_tlb_windows_see_the_same_memory(chip):
    d = chip.device()
    lib = chip.lib
    (tx, ty), (dx, dy) = chip.tensix(d)[3], chip.dram(d)[1]
    lib.libttsim_select_device_by_id(0)
    lib.tile_write(tx, ty, 0x30000, b"through tile access")
    assert d.noc_read(tx, ty, 0x30000, 19) == b"through tile access"
    d.noc_write(dx, dy, 0x4000, b"through a TLB window")
    assert lib.tile_read(dx, dy, 0x4000, 20) == b"through a TLB window"
    assert lib.stat("tile_writes") == 1 and lib.stat("tile_reads") == 1
    assert lib.errors() == 0, lib.last_error()


TELEPORT = """
import json, sys
from conftest import Chip
c = Chip(sys.argv[1])
d = c.device()
(x, y) = c.dram(d)[2]
d.noc_write(x, y, 0x8000, b"teleported")
ok = d.noc_read(x, y, 0x8000, 10) == b"teleported"
print("RESULT", json.dumps(dict(ok=ok, **c.lib.stats("dram_writes", "dram_reads", "tlb_window_writes", "tlb_window_reads"))))
"""


def test_dram_teleport_uses_the_multichip_dram_calls(chip):
    # tt-umd reads TT_SIMULATOR_DRAM_TELEPORT once per process: a process of its own.
    env = dict(os.environ, TT_SIMULATOR_DRAM_TELEPORT="1", PYTHONPATH=str(HERE))
    out = subprocess.run([sys.executable, "-c", TELEPORT, chip.arch], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    s = json.loads(next(line for line in out.stdout.splitlines() if line.startswith("RESULT "))[7:])
    assert s == {"ok": True, "dram_writes": 1, "dram_reads": 1, "tlb_window_writes": 0, "tlb_window_reads": 0}, s


def test_32_bit_registers(chip):
    d = chip.device()
    lib = chip.lib
    sr = chip.fixtures["soft_reset_addr"]
    x, y = chip.tensix(d)[0]
    d.noc_write32(x, y, 0x1000, 0xCAFE_F00D)
    assert d.noc_read32(x, y, 0x1000) == 0xCAFE_F00D
    # SOFT_RESET_0: every core held at power-on; written and read back as a register.
    assert d.noc_read32(x, y, sr) == 0x47800
    assert d.get_risc_reset_state(x, y) == 0x47800
    d.noc_write32(x, y, sr, 0x47800 | 0x7800)
    assert d.noc_read32(x, y, sr) == 0x47800
    # A register is 4 bytes: 8 bytes at its address are refused and read as all ones.
    n = lib.errors()
    assert d.noc_read(x, y, sr, 8) == b"\xff" * 8
    assert lib.errors() == n + 1 and "4 bytes at a time" in lib.last_error()


def test_assert_and_deassert_risc_reset(chip):
    d = chip.device()
    x, y = chip.tensix(d)[1]
    core = tt_umd.CoreCoord(x, y, tt_umd.CoreType.TENSIX, tt_umd.CoordSystem.NOC0)
    d.deassert_risc_reset(core, tt_umd.RiscType.BRISC)
    assert d.get_risc_reset_state(x, y) == 0x47000
    d.deassert_risc_reset(core, tt_umd.RiscType.NCRISC)
    assert d.get_risc_reset_state(x, y) == 0x07000
    d.assert_risc_reset(core, tt_umd.RiscType.ALL)
    assert d.get_risc_reset_state(x, y) == 0x47800
    d.deassert_risc_reset(core, tt_umd.RiscType.ALL_TRISCS)
    assert d.get_risc_reset_state(x, y) == 0x40800


def poll(d, x, y, addr, want, what, tries=5000):
    """Reads until `want` (each tt-umd read clocks the chip); the polls it took."""
    for n in range(tries):
        if d.noc_read32(x, y, addr) == want:
            return n
    pytest.fail(f"{what}: ({x}, {y}) {addr:#x} never read {want:#x}")


def test_boot_cqlab_firmware_and_read_its_alive_records(chip):
    d = chip.device()
    boot = chip.fixtures["boot"]
    # tt-umd's simulated chips keep NOC0 coordinates (its descriptor is not translated).
    x, y = boot["tile"]["noc0"]
    for image in boot["images"]:
        try:
            blob = open(image["elf"], "rb").read()
        except FileNotFoundError:
            pytest.fail(f"{image['elf']} is missing: run `cargo xtask firmware`")
        elf = parse(blob)
        assert elf.entry == image["entry"]
        for s in elf.segments:
            d.noc_write(x, y, s.addr, s.image())
    d.noc_write(x, y, boot["noc_map"]["addr"], bytes.fromhex(boot["noc_map"]["bytes"]))
    d.noc_write32(x, y, boot["reset_jal"]["addr"], boot["reset_jal"]["value"])
    # Release BRISC as tt-umd does (read, clear BRISC's bit, write): SOFT_RESET_0 = 0x47000.
    core = tt_umd.CoreCoord(x, y, tt_umd.CoreType.TENSIX, tt_umd.CoordSystem.NOC0)
    d.deassert_risc_reset(core, tt_umd.RiscType.BRISC)
    # BRISC is out of reset. Its subordinates may be too by the time the read
    # samples: a BAR read costs the device ~700 ns, and BRISC releases them early.
    soft = boot["soft_reset"]
    assert d.get_risc_reset_state(x, y) & (soft["all"] ^ soft["brisc_only_run"]) == 0
    alive = boot["alive"]
    brisc = boot["images"][0]
    poll(d, x, y, brisc["alive_addr"], alive["magic"], "BRISC alive (after its four subordinates)")
    off = alive["offsets"]
    for image in boot["images"]:
        rec = d.noc_read(x, y, image["alive_addr"], alive["size"])
        field = lambda name: struct.unpack_from("<I", rec, off[name])[0]  # noqa: E731
        assert field("magic") == alive["magic"], image["processor"]
        assert field("firmware_id") == image["firmware_id"], image["processor"]
        assert field("abi_version") == alive["abi_version"]
        assert field("core_xy") == alive["core_xy"], "the core learnt its translated coordinates"
    # BRISC released its subordinates itself.
    assert d.get_risc_reset_state(x, y) & boot["soft_reset"]["all"] == 0
    assert chip.lib.errors() == 0, chip.lib.last_error()


def run_probe(chip, d, payload):
    """Starts the DMA probe: its program, its payload, BRISC released."""
    p = chip.fixtures["dma_probe"]
    x, y = p["tile"]["noc0"]
    d.noc_write(x, y, p["program"]["addr"], bytes.fromhex(p["program"]["bytes"]))
    d.noc_write32(x, y, p["reset_jal"]["addr"], p["reset_jal"]["value"])
    d.noc_write(x, y, p["src"], payload)
    d.noc_write32(x, y, p["soft_reset"]["addr"], p["soft_reset"]["brisc_only_run"])
    return p, x, y


def test_device_writes_reach_host_memory_through_the_dma_callbacks(chip):
    d = chip.device(channels=1)
    payload = bytes((7 * i + 3) & 0xFF for i in range(chip.fixtures["dma_probe"]["len"]))
    p, x, y = run_probe(chip, d, payload)
    poll(d, x, y, p["flag"], p["done"], "the DMA probe")
    # It wrote the payload to tt-umd's host memory (channel 0) and read it back from there.
    assert d.noc_read(x, y, p["dst"], p["len"]) == payload
    s = chip.lib.stats("dma_writes", "dma_write_bytes", "dma_reads", "dma_read_bytes", "dma_dropped")
    assert s["dma_write_bytes"] == p["len"] and s["dma_read_bytes"] == p["len"], s
    assert s["dma_dropped"] == 0
    assert chip.lib.errors() == 0, chip.lib.last_error()


def test_a_callback_exception_unwinds_to_the_caller_and_the_chip_runs_on(chip):
    # No host-memory channels: tt-umd's callbacks throw for every address.
    d = chip.device(channels=0)
    p, x, y = run_probe(chip, d, b"\x5a" * chip.fixtures["dma_probe"]["len"])
    raised = []
    for _ in range(5000):
        try:
            if d.noc_read32(x, y, p["flag"]) == p["done"]:
                break
        except tt_umd.error.UmdBaseException as e:
            raised.append(str(e))
    else:
        pytest.fail("the probe never finished")
    assert raised and all("Hugepages are not allocated" in r for r in raised), raised
    # Its write was lost and its read returned nothing: the destination is as it was.
    assert d.noc_read(x, y, p["dst"], p["len"]) == bytes(p["len"])
    assert "DMA callback threw" in chip.lib.last_error()
    # The device answers as before.
    d.noc_write32(x, y, 0x1000, 1234)
    assert d.noc_read32(x, y, 0x1000) == 1234


def test_two_chips_at_once(chip):
    """tt-umd's device is chip 0 of the library (multichip mode: it selects
    chip 0 before every call and clocks with clock_all_devices); chip 1 is
    made and driven with the library's multichip calls directly."""
    d = chip.device()
    lib = chip.lib
    x, y = chip.tensix(d)[0]
    assert lib.libttsim_create_device_by_id(1, 1, 0) is not None
    lib.libttsim_select_device_by_id(1)
    lib.tile_write(x, y, 0x40000, b"chip one")
    t1 = lib.device_time()
    d.noc_write(x, y, 0x40000, b"chip zero")  # selects chip 0 first
    assert d.noc_read(x, y, 0x40000, 9) == b"chip zero"
    lib.libttsim_select_device_by_id(1)
    assert lib.tile_read(x, y, 0x40000, 8) == b"chip one"
    assert lib.device_time() > t1, "tt-umd's clock_all_devices ran chip 1 too"
    # Their DRAM is apart as well.
    (dx, dy) = chip.dram(d)[0]
    buf = (b"\0" * 4)
    d.noc_write(dx, dy, 0x10, b"zero")
    lib.libttsim_select_device_by_id(1)
    import ctypes

    out = (ctypes.c_uint8 * 4)()
    lib.libttsim_dram_core_rd_bytes_by_id(1, dx, dy, 0x10, out, 4)
    assert bytes(out) == buf
    lib.libttsim_dram_core_rd_bytes_by_id(0, dx, dy, 0x10, out, 4)
    assert bytes(out) == b"zero"
    assert lib.errors() == 0, lib.last_error()


def probe_digest(chip, monkeypatch, seed):
    monkeypatch.setenv("CQLAB_TTSIM_SEED", str(seed))
    monkeypatch.setenv("CQLAB_TTSIM_QUANTUM_JITTER", "40")
    monkeypatch.setenv("CQLAB_TTSIM_NOC_JITTER", "30")
    d = chip.device(channels=1)
    p, x, y = run_probe(chip, d, bytes(range(chip.fixtures["dma_probe"]["len"])))
    polls = poll(d, x, y, p["flag"], p["done"], "the DMA probe")
    for _ in range(20):
        d.noc_read32(x, y, p["flag"])
    result = (polls, chip.lib.device_time(), chip.lib.digest())
    chip.close()
    return result


def test_same_seed_same_run_through_tt_umd(chip, monkeypatch):
    a = probe_digest(chip, monkeypatch, 11)
    b = probe_digest(chip, monkeypatch, 11)
    c = probe_digest(chip, monkeypatch, 12)
    assert a == b, "the same seed and the same calls give the same device time and digest"
    assert c[2] != a[2], "the seed drives the jitter"


def test_an_exception_in_one_chips_clock_leaves_the_later_chips_cycles_owed_not_lost(chip):
    """tt-umd clocks every chip after each read (clock_all_devices(1)). When
    chip 1's DMA callback throws, the call unwinds before chip 2's turn:
    chip 2 is owed that cycle and gets it at the next clock_all_devices, so
    over the run every chip is clocked as far as the others."""
    d = chip.device(channels=0)  # tt-umd's callbacks throw for every address
    lib = chip.lib
    x, y = chip.tensix(d)[0]
    for c in (1, 2):
        assert lib.libttsim_create_device_by_id(c, c, 0) is not None
    # Chip 1 (no one reads its BARs, so it runs only in clock_all_devices) runs the DMA probe.
    p = chip.fixtures["dma_probe"]
    px, py = p["tile"]["noc0"]
    lib.libttsim_select_device_by_id(1)
    lib.tile_write(px, py, p["program"]["addr"], bytes.fromhex(p["program"]["bytes"]))
    lib.tile_write(px, py, p["reset_jal"]["addr"], struct.pack("<I", p["reset_jal"]["value"]))
    lib.tile_write(px, py, p["soft_reset"]["addr"], struct.pack("<I", p["soft_reset"]["brisc_only_run"]))
    start = {c: chip_stat(lib, c, "clocked_cycles") for c in (0, 1, 2)}
    raised = []
    for _ in range(5000):
        try:
            d.noc_read32(x, y, 0x100)  # chip 0, then clock_all_devices(1)
        except tt_umd.error.UmdBaseException as e:
            raised.append(str(e))
        lib.libttsim_select_device_by_id(1)
        if lib.tile_read(px, py, p["flag"], 4) == struct.pack("<I", p["done"]):
            break
    else:
        pytest.fail("the probe on chip 1 never finished")
    assert raised and all("Hugepages are not allocated" in r for r in raised), raised
    clocked = {c: chip_stat(lib, c, "clocked_cycles") - start[c] for c in (0, 1, 2)}
    assert clocked[2] == clocked[0] > 0, f"cycles clocked since the probe started: {clocked}; {len(raised)} exceptions"
    lib.libttsim_select_device_by_id(2)
    assert lib.device_time() == chip_stat(lib, 2, "clocked_cycles"), "chip 2 (idle) ran every cycle it was given"


def chip_stat(lib, c, name):
    lib.libttsim_select_device_by_id(c)
    return lib.stat(name)

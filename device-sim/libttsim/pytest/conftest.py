"""Drives cqlab's libttsim libraries through tt-umd's own Python API (the
tt-umd 0.9.14 wheel from PyPI, unmodified), one run per chip.

`cargo xtask libttsim` lays the libraries out in `target/libttsim/<arch>/`
(or `$CQLAB_LIBTTSIM_DIR`), each with `soc_descriptor.yaml` and the
`fixtures.json` computed from cqlab-abi (addresses, the boot recipe, the
DMA probe program). cqlab's own calls (`cqlab_ttsim_*`: last error,
counters, digest) and the raw libttsim calls tt-umd does not expose to
Python are reached with ctypes, in the same loaded library.
"""

import ctypes
import gc
import json
import os
import pathlib

import pytest
import tt_umd

ROOT = pathlib.Path(__file__).resolve().parents[3]
LIBDIR = pathlib.Path(os.environ.get("CQLAB_LIBTTSIM_DIR", ROOT / "target" / "libttsim"))
LIBRARIES = {"wormhole": "libttsim_wh.so", "blackhole": "libttsim_bh.so"}
UMD_ARCH = {"wormhole": tt_umd.ARCH.WORMHOLE_B0, "blackhole": tt_umd.ARCH.BLACKHOLE}

u8p = ctypes.POINTER(ctypes.c_uint8)


class Lib:
    """The library as ctypes sees it (the same instance tt-umd loaded)."""

    def __init__(self, path: pathlib.Path):
        self.path = path
        c = ctypes.CDLL(str(path))
        self.c = c
        sig = {
            "libttsim_init": ([], None),
            "libttsim_exit": ([], None),
            "libttsim_clock": ([ctypes.c_uint32], None),
            "libttsim_clock_all_devices": ([ctypes.c_uint32], None),
            "libttsim_pci_config_rd32": ([ctypes.c_uint32, ctypes.c_uint32], ctypes.c_uint32),
            "libttsim_pci_mem_rd_bytes": ([ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint32], None),
            "libttsim_pci_mem_wr_bytes": ([ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint32], None),
            "libttsim_tile_rd_bytes": ([ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint32], None),
            "libttsim_tile_wr_bytes": ([ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint32], None),
            "libttsim_create_device_by_id": ([ctypes.c_uint32, ctypes.c_int, ctypes.c_int], ctypes.c_void_p),
            "libttsim_select_device_by_id": ([ctypes.c_uint32], None),
            "libttsim_dram_core_rd_bytes_by_id": ([ctypes.c_uint32] * 3 + [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint32], None),
            "libttsim_dram_rd_bytes_by_id": ([ctypes.c_uint32] * 2 + [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_uint32], None),
            "libttsim_switch_reset": ([], None),
            "cqlab_ttsim_last_error": ([ctypes.c_char_p, ctypes.c_uint32], ctypes.c_uint32),
            "cqlab_ttsim_error_count": ([], ctypes.c_uint64),
            "cqlab_ttsim_clear_error": ([], None),
            "cqlab_ttsim_digest": ([], ctypes.c_uint64),
            "cqlab_ttsim_device_time": ([], ctypes.c_uint64),
            "cqlab_ttsim_stat": ([ctypes.c_char_p], ctypes.c_uint64),
        }
        for name, (args, res) in sig.items():
            f = getattr(c, name)
            f.argtypes, f.restype = args, res

    def __getattr__(self, name):
        return getattr(self.c, name)

    def last_error(self) -> str:
        n = self.c.cqlab_ttsim_last_error(None, 0)
        buf = ctypes.create_string_buffer(n + 1)
        self.c.cqlab_ttsim_last_error(buf, n + 1)
        return buf.value.decode()

    def errors(self) -> int:
        return self.c.cqlab_ttsim_error_count()

    def stat(self, name: str) -> int:
        return self.c.cqlab_ttsim_stat(name.encode())

    def stats(self, *names) -> dict:
        return {n: self.stat(n) for n in names}

    def digest(self) -> int:
        return self.c.cqlab_ttsim_digest()

    def device_time(self) -> int:
        return self.c.cqlab_ttsim_device_time()

    def tile_read(self, x, y, addr, n) -> bytes:
        buf = (ctypes.c_uint8 * n)()
        self.c.libttsim_tile_rd_bytes(x, y, addr, buf, n)
        return bytes(buf)

    def tile_write(self, x, y, addr, data: bytes):
        buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        self.c.libttsim_tile_wr_bytes(x, y, addr, buf, len(data))

    def pci_read(self, paddr, n) -> bytes:
        buf = (ctypes.c_uint8 * n)()
        self.c.libttsim_pci_mem_rd_bytes(paddr, buf, n)
        return bytes(buf)

    def bar0(self) -> int:
        lo = self.c.libttsim_pci_config_rd32(0, 0x10) & ~0xF
        return (self.c.libttsim_pci_config_rd32(0, 0x14) << 32) | lo


class Chip:
    """One architecture's library, its fixtures and tt-umd devices on it."""

    def __init__(self, arch: str):
        self.arch = arch
        self.dir = LIBDIR / arch
        self.path = self.dir / LIBRARIES[arch]
        if not self.path.exists():
            pytest.fail(f"{self.path} is missing: run `cargo xtask libttsim`")
        self.fixtures = json.loads((self.dir / "fixtures.json").read_text())
        self.umd_arch = UMD_ARCH[arch]
        self.lib = Lib(self.path)
        self.devices = []

    def device(self, channels: int = 1):
        """A tt-umd device on the library (chip 0): `create_simulation_tt_device`."""
        d = tt_umd.create_simulation_tt_device(str(self.path), channels)
        self.devices.append(d)
        return d

    def close(self):
        """Destroys every tt-umd device made (the last one exits the simulator)."""
        self.devices.clear()
        gc.collect()

    def tensix(self, d):
        sd = d.get_soc_descriptor()
        return [(c.x, c.y) for c in sd.get_cores(tt_umd.CoreType.TENSIX, tt_umd.CoordSystem.NOC0)]

    def dram(self, d):
        sd = d.get_soc_descriptor()
        return [(c.x, c.y) for c in sd.get_cores(tt_umd.CoreType.DRAM, tt_umd.CoordSystem.NOC0)]


SETTINGS = ("CQLAB_TTSIM_BOARD", "CQLAB_TTSIM_HARVEST", "CQLAB_TTSIM_SEED", "CQLAB_TTSIM_QUANTUM_JITTER",
            "CQLAB_TTSIM_NOC_JITTER", "CQLAB_TTSIM_LOG", "TT_SIMULATOR_DRAM_TELEPORT")


@pytest.fixture(params=sorted(LIBRARIES))
def chip(request, monkeypatch):
    for var in SETTINGS:
        monkeypatch.delenv(var, raising=False)
    c = Chip(request.param)
    c.lib.cqlab_ttsim_clear_error()
    yield c
    c.close()

"""The C API itself, through ctypes: bad input gets a clear error (on
stderr, as the last error, reads filled with 0xFF) and changes nothing;
the Ethernet calls refuse; init and exit as often as a host likes."""

import ctypes

import pytest


@pytest.fixture
def running(chip):
    lib = chip.lib
    lib.libttsim_init()
    assert lib.errors() == 0, lib.last_error()
    yield chip
    lib.libttsim_exit()


def refused(lib, what, call):
    """`call()` is refused with an error mentioning `what`; returns what it returned."""
    n = lib.errors()
    r = call()
    assert lib.errors() == n + 1, f"{what}: no error reported"
    assert what in lib.last_error(), lib.last_error()
    return r


def test_bad_input_is_refused_with_a_clear_error(running, capfd):
    chip = running
    lib = chip.lib
    l1 = chip.fixtures["l1_size"]
    x, y = chip.fixtures["boot"]["tile"]["noc0"]
    bar0 = lib.bar0()
    lib.tile_write(x, y, 0x100, b"kept")
    digest, now = lib.digest(), lib.device_time()
    ff = lambda n: b"\xff" * n  # noqa: E731
    # A tile coordinate off the grid: beyond the 6-bit field, and inside it but past the grid.
    assert refused(lib, "off the NOC grid", lambda: lib.tile_read(99, 0, 0x100, 4)) == ff(4)
    assert refused(lib, "no tile answers", lambda: lib.tile_read(40, 40, 0x100, 4)) == ff(4)
    # An address past L1 (a Tensix tile has only 4-byte registers beyond it).
    assert refused(lib, "beyond L1", lambda: lib.tile_read(x, y, l1 - 2, 8)) == ff(8)
    refused(lib, "beyond L1", lambda: lib.tile_write(x, y, l1 - 2, b"12345678"))
    assert refused(lib, "bits above the tile's 36-bit", lambda: lib.tile_read(x, y, 1 << 40, 4)) == ff(4)
    # A null pointer.
    refused(lib, "null pointer", lambda: lib.libttsim_tile_rd_bytes(x, y, 0x100, None, 4))
    refused(lib, "null pointer", lambda: lib.libttsim_pci_mem_wr_bytes(bar0, None, 4))
    # A BAR offset outside every window and register region, and an address in no BAR.
    assert refused(lib, "in no TLB window and no register region", lambda: lib.pci_read(bar0 + 0x1F10_0000, 4)) == ff(4)
    assert refused(lib, "is in no BAR", lambda: lib.pci_read(0x1000, 4)) == ff(4)
    assert refused(lib, "runs past the end", lambda: lib.pci_read(bar0 + (512 << 20) - 2, 4)) == ff(4)
    # Configuration space, chips, Ethernet.
    assert refused(lib, "4 bytes at a time", lambda: lib.libttsim_pci_config_rd32(0, 2)) == 0xFFFFFFFF
    refused(lib, "no simulated chip 7", lambda: lib.libttsim_select_device_by_id(7))
    assert refused(lib, "PCI device numbers", lambda: lib.libttsim_create_device_by_id(40, 0, 0)) is None
    refused(lib, "has no Ethernet", lambda: lib.libttsim_switch_reset())
    refused(lib, "running already", lambda: lib.libttsim_init())
    # Nothing changed: not the memory, not the chip's state or time.
    assert lib.tile_read(x, y, 0x100, 4) == b"kept"
    assert (lib.digest(), lib.device_time()) == (digest, now)
    # Each error is a line on stderr naming the call and its arguments.
    err = capfd.readouterr().err
    assert "cqlab libttsim: libttsim_tile_rd_bytes(x=99, y=0, addr=0x100, size=4): tile (99, 0) is off the NOC grid" in err


def test_a_tlb_window_configured_off_the_grid_is_refused(running):
    lib = running.lib
    bar0 = lib.bar0()
    # TLB 0's configuration register: x_end/y_end all ones, whatever the chip's field layout.
    cfg = (ctypes.c_uint8 * 8).from_buffer_copy(b"\x00\x00\xff\xff\xff\xff\xff\x00")
    lib.libttsim_pci_mem_wr_bytes(bar0 + 0x1FC0_0000, cfg, 8)
    assert refused(lib, "TLB window 0", lambda: lib.pci_read(bar0, 4)) == b"\xff" * 4


def test_exit_after_a_failed_init_cleans_up_without_an_error(chip, monkeypatch):
    lib = chip.lib
    monkeypatch.setenv("CQLAB_TTSIM_SEED", "abc")
    refused(lib, "CQLAB_TTSIM_SEED", lambda: lib.libttsim_init())
    n = lib.errors()
    lib.libttsim_exit()
    assert lib.errors() == n, lib.last_error()
    refused(lib, "not running", lambda: lib.libttsim_exit())


def test_calls_outside_init_and_exit_are_refused_and_init_starts_afresh(chip):
    lib = chip.lib
    x, y = chip.fixtures["boot"]["tile"]["noc0"]
    assert refused(lib, "not running", lambda: lib.tile_read(x, y, 0, 4)) == b"\xff" * 4
    refused(lib, "not running", lambda: lib.libttsim_exit())
    for _ in range(3):
        lib.libttsim_init()
        assert lib.tile_read(x, y, 0x200, 4) == bytes(4), "a fresh chip"
        lib.tile_write(x, y, 0x200, b"once")
        lib.libttsim_clock(1000)
        assert lib.device_time() >= 1000
        lib.libttsim_exit()
    assert lib.errors() == 2, lib.last_error()

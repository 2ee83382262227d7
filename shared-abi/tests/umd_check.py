"""cqlab's SoC descriptors, read by the real tt-umd.

Loads shared-abi/chips/{wormhole_b0_80_arch,blackhole_140_arch}.yaml with
tt-umd's own YAML parser (``tt_umd.SocArchDescriptor(path)``, the binding of
``SocArchDescriptor::load_from_yaml``) and checks every core list, size and
NOC1 table against tt-umd's built-in description of the same architecture
(``tt_umd.SocArchDescriptor(tt_umd.ARCH.<arch>)``, i.e. its
``*_implementation.hpp`` tables).

Run (tt_umd 0.9.14 in a Python 3.11 venv):

    /work/research/venv-umd/bin/python shared-abi/tests/umd_check.py

or under pytest:

    /work/research/venv-umd/bin/python -m pytest shared-abi/tests/umd_check.py

Exit status 0 and one "ok" line per chip means both files parse and agree.
"""

import pathlib
import sys

import tt_umd

CHIPS = pathlib.Path(__file__).resolve().parent.parent / "chips"
FILES = {
    "WORMHOLE_B0": CHIPS / "wormhole_b0_80_arch.yaml",
    "BLACKHOLE": CHIPS / "blackhole_140_arch.yaml",
}
EXPECTED = {
    # grid, Tensix count, DRAM channels x ports, Eth, ARC, PCIe
    "WORMHOLE_B0": ((10, 12), 80, (6, 3), 16, 1, 1),
    "BLACKHOLE": ((17, 12), 140, (8, 3), 14, 1, 2),
}
SCALARS = ["grid_size", "worker_grid_size", "worker_l1_size", "eth_l1_size", "dram_bank_size",
           "noc0_x_to_noc1_x", "noc0_y_to_noc1_y"]
CORE_LISTS = ["tensix_cores", "eth_cores", "firmware_cores", "pcie_cores", "router_cores",
              "security_cores", "l2cpu_cores"]


def xy(p):
    return (p.x, p.y)


def norm(v):
    if isinstance(v, list):
        return [norm(e) for e in v]
    if hasattr(v, "x") and hasattr(v, "y"):
        return xy(v)
    return v


def check(arch_name):
    path = FILES[arch_name]
    ours = tt_umd.SocArchDescriptor(str(path))
    theirs = tt_umd.SocArchDescriptor(getattr(tt_umd.ARCH, arch_name))
    problems = []
    if str(ours.arch) != str(theirs.arch):
        problems.append(f"arch {ours.arch} != {theirs.arch}")
    for key in SCALARS + CORE_LISTS + ["dram_cores"]:
        a, b = norm(getattr(ours, key)), norm(getattr(theirs, key))
        if a != b:
            problems.append(f"{key}: file {a} != tt-umd {b}")
    grid, tensix, dram, eth, arc, pcie = EXPECTED[arch_name]
    got = (xy(ours.grid_size), len(ours.tensix_cores), (len(ours.dram_cores), len(ours.dram_cores[0])),
           len(ours.eth_cores), len(ours.firmware_cores), len(ours.pcie_cores))
    if got != EXPECTED[arch_name]:
        problems.append(f"counts {got} != {EXPECTED[arch_name]}")
    return path, got, problems


def test_wormhole():
    assert check("WORMHOLE_B0")[2] == []


def test_blackhole():
    assert check("BLACKHOLE")[2] == []


if __name__ == "__main__":
    failed = False
    for arch_name in FILES:
        path, got, problems = check(arch_name)
        if problems:
            failed = True
            print(f"FAIL {path.name}:")
            for p in problems:
                print("   ", p)
        else:
            grid, tensix, dram, eth, arc, pcie = got
            print(f"ok {path.name}: tt-umd {tt_umd.__name__} parsed it; grid {grid[0]}x{grid[1]}, "
                  f"{tensix} Tensix, {dram[0]}x{dram[1]} DRAM, {eth} Eth, {arc} ARC, {pcie} PCIe; "
                  f"every core list equals tt-umd's built-in {arch_name} tables")
    sys.exit(1 if failed else 0)

"""The loadable segments of a little-endian 32-bit ELF: just enough to load
a cqlab firmware image through tt-umd writes."""

import struct
from dataclasses import dataclass

PT_LOAD = 1


@dataclass
class Segment:
    addr: int
    data: bytes
    mem_size: int

    def image(self) -> bytes:
        """The bytes to write: the file bytes, zero-filled to the memory size."""
        return self.data + bytes(self.mem_size - len(self.data))


@dataclass
class Elf:
    entry: int
    segments: list


def parse(blob: bytes) -> Elf:
    if blob[:4] != b"\x7fELF" or blob[4] != 1 or blob[5] != 1:
        raise ValueError("not a little-endian ELF32 file")
    (entry, phoff) = struct.unpack_from("<II", blob, 0x18)
    (phentsize, phnum) = struct.unpack_from("<HH", blob, 0x2A)
    segments = []
    for i in range(phnum):
        p_type, p_offset, _vaddr, p_paddr, p_filesz, p_memsz = struct.unpack_from("<IIIIII", blob, phoff + i * phentsize)
        if p_type == PT_LOAD and p_memsz:
            segments.append(Segment(p_paddr, blob[p_offset : p_offset + p_filesz], p_memsz))
    return Elf(entry, segments)

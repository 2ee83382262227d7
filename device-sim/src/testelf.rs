//! Test helper: writes minimal ELF32 RISC-V executables in-process (header,
//! program headers, and optionally a symbol table), so ELF and exec tests
//! need no cross toolchain.

pub struct SegmentSpec<'a> {
    pub addr: u32,
    pub data: &'a [u8],
    pub mem_size: u32,
    pub exec: bool,
}

fn put16(v: &mut Vec<u8>, x: u16) {
    v.extend_from_slice(&x.to_le_bytes());
}
fn put32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_le_bytes());
}

/// An ELF with `segments` and the given absolute symbols.
pub fn build(entry: u32, segments: &[SegmentSpec], symbols: &[(&str, u32)]) -> Vec<u8> {
    const EHDR: u32 = 52;
    const PHDR: u32 = 32;
    let phoff = EHDR;
    let mut data_off = phoff + PHDR * segments.len() as u32;
    let mut offsets = Vec::new();
    for s in segments {
        offsets.push(data_off);
        data_off += (s.data.len() as u32).next_multiple_of(4);
    }
    // Symbol table pieces.
    let mut strtab = vec![0u8];
    let mut symtab = vec![0u8; 16];
    for (name, addr) in symbols {
        let name_off = strtab.len() as u32;
        strtab.extend_from_slice(name.as_bytes());
        strtab.push(0);
        put32(&mut symtab, name_off);
        put32(&mut symtab, *addr);
        put32(&mut symtab, 4);
        symtab.push(0x11); // STB_GLOBAL, STT_OBJECT
        symtab.push(0);
        put16(&mut symtab, 0xfff1); // SHN_ABS
    }
    let shstrtab = b"\0.symtab\0.strtab\0.shstrtab\0".to_vec();
    let symtab_off = data_off;
    let strtab_off = symtab_off + symtab.len() as u32;
    let shstrtab_off = strtab_off + strtab.len() as u32;
    let shoff = (shstrtab_off + shstrtab.len() as u32).next_multiple_of(4);
    let with_syms = !symbols.is_empty();

    let mut v = Vec::new();
    v.extend_from_slice(b"\x7fELF");
    v.extend_from_slice(&[1, 1, 1, 0]);
    v.extend_from_slice(&[0; 8]);
    put16(&mut v, 2); // ET_EXEC
    put16(&mut v, 243); // EM_RISCV
    put32(&mut v, 1);
    put32(&mut v, entry);
    put32(&mut v, phoff);
    put32(&mut v, if with_syms { shoff } else { 0 });
    put32(&mut v, 0);
    put16(&mut v, EHDR as u16);
    put16(&mut v, PHDR as u16);
    put16(&mut v, segments.len() as u16);
    put16(&mut v, 40);
    put16(&mut v, if with_syms { 4 } else { 0 });
    put16(&mut v, if with_syms { 3 } else { 0 });
    for (s, off) in segments.iter().zip(&offsets) {
        put32(&mut v, 1); // PT_LOAD
        put32(&mut v, *off);
        put32(&mut v, s.addr);
        put32(&mut v, s.addr);
        put32(&mut v, s.data.len() as u32);
        put32(&mut v, s.mem_size);
        put32(&mut v, if s.exec { 5 } else { 6 });
        put32(&mut v, 4);
    }
    for s in segments {
        v.extend_from_slice(s.data);
        v.resize(v.len().next_multiple_of(4), 0);
    }
    if with_syms {
        v.extend_from_slice(&symtab);
        v.extend_from_slice(&strtab);
        v.extend_from_slice(&shstrtab);
        v.resize(shoff as usize, 0);
        // name, type, flags, addr, offset, size, link, info, align, entsize
        let sections: [[u32; 10]; 4] = [
            [0; 10],
            [1, 2, 0, 0, symtab_off, symtab.len() as u32, 2, 1, 4, 16],
            [9, 3, 0, 0, strtab_off, strtab.len() as u32, 0, 0, 1, 0],
            [17, 3, 0, 0, shstrtab_off, shstrtab.len() as u32, 0, 0, 1, 0],
        ];
        for sh in sections {
            for f in sh {
                put32(&mut v, f);
            }
        }
    }
    v
}

/// A one-segment program at `addr` with an optional `tohost` word placed
/// right after the code.
pub fn program(addr: u32, words: &[u32], tohost: bool) -> Vec<u8> {
    let mut bytes = crate::asm::to_bytes(words);
    let mut syms = Vec::new();
    if tohost {
        syms.push(("tohost", addr + bytes.len() as u32));
        bytes.extend_from_slice(&[0; 8]);
    }
    let len = bytes.len() as u32;
    build(addr, &[SegmentSpec { addr, data: &bytes, mem_size: len, exec: true }], &syms)
}

//! The named fields of a decoded command header, in the order its text form
//! lists them: one list that the text (each header's `Display`, what
//! `cqlab decode` prints) and structured output (`cqlab decode --json`)
//! both read, so the two cannot disagree.
//!
//! No allocation: a header's fields are a small array ([`Fields`]), a flag
//! set's names an array of `&'static str` ([`FlagSet`]).

use crate::decode::{DispatchHeader, NocFmt, PrefetchHeader};
use crate::dispatch::{PackedFlags, WaitFlags, WriteHostFlags};
use crate::noc::NocAddr;
use crate::prefetch::{ExecBufFlags, PagedFlags, RelayPagedCmd};
use bitflags::Flags;
use core::fmt;

/// One named field of a header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: &'static str,
    pub value: FieldValue,
}

/// A field's typed value. The variant also says how the text form prints
/// the field (shown for a field named `n`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValue {
    /// A length, count or tag: `n=96`.
    Dec(u64),
    /// An address or offset: `n=0x4000`.
    Hex(u64),
    /// A 32-bit word (a checksum, a GO signal): `n=0x0000beef`.
    Word(u32),
    /// A set of flags: `n=BARRIER | NOTIFY_PREFETCH` (bitflags' text form).
    Flags(FlagSet),
    /// A NOC address: `n=(x,y)+0xlocal` or `n=(x0,y0)..(x1,y1)+0xlocal`
    /// ([`NocFmt`]).
    Noc(NocAddr),
    /// One of a few named alternatives, printed alone: `dram`.
    Choice(&'static str),
    /// A switch, printed as its name alone when on and not at all when off.
    Switch(bool),
}

impl Field {
    /// Whether the text form shows the field (an off switch it leaves out).
    pub const fn in_text(&self) -> bool {
        !matches!(self.value, FieldValue::Switch(false))
    }
}

/// The text form of one field (empty for an off switch).
impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name;
        match self.value {
            FieldValue::Dec(v) => write!(f, "{name}={v}"),
            FieldValue::Hex(v) => write!(f, "{name}=0x{v:x}"),
            FieldValue::Word(v) => write!(f, "{name}=0x{v:08x}"),
            FieldValue::Flags(set) => write!(f, "{name}={set}"),
            FieldValue::Noc(a) => write!(f, "{name}={}", NocFmt(a.0)),
            FieldValue::Choice(v) => f.write_str(v),
            FieldValue::Switch(true) => f.write_str(name),
            FieldValue::Switch(false) => Ok(()),
        }
    }
}

/// Most flag names one set holds: each name takes at least one of the
/// eight bits.
const MAX_FLAG_NAMES: usize = 8;

/// A set of flags of one `bitflags` type with their names, in the order
/// the type declares them (as `bitflags` iterates and prints them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlagSet {
    bits: u8,
    names: [&'static str; MAX_FLAG_NAMES],
    len: u8,
    unknown: u8,
}

impl FlagSet {
    pub fn of<F: Flags<Bits = u8>>(flags: F) -> Self {
        let mut set = Self { bits: flags.bits(), names: [""; MAX_FLAG_NAMES], len: 0, unknown: 0 };
        let mut names = flags.iter_names();
        for (name, _) in &mut names {
            // Each name yielded takes its bits from the rest: at most eight.
            if let Some(slot) = set.names.get_mut(set.len as usize) {
                *slot = name;
                set.len += 1;
            }
        }
        set.unknown = names.remaining().bits();
        set
    }

    /// The raw bits.
    pub const fn bits(&self) -> u8 {
        self.bits
    }

    /// The names of the flags set.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.names.iter().take(self.len as usize).copied()
    }

    /// Bits set that no flag names (0 in every header `parse` accepts).
    pub const fn unknown_bits(&self) -> u8 {
        self.unknown
    }
}

/// `A | B`, unnamed bits as `0x..` after them: `bitflags::parser::to_writer`.
impl fmt::Display for FlagSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for name in self.names() {
            if !first {
                f.write_str(" | ")?;
            }
            first = false;
            f.write_str(name)?;
        }
        if self.unknown != 0 {
            if !first {
                f.write_str(" | ")?;
            }
            write!(f, "0x{:x}", self.unknown)?;
        }
        Ok(())
    }
}

/// Most fields one header has (`RELAY_PAGED`, `EXEC_BUF`).
pub const MAX_FIELDS: usize = 5;

/// A header's fields, in text order; iterate them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fields {
    items: [Field; MAX_FIELDS],
    len: u8,
    next: u8,
}

impl Fields {
    fn new<const N: usize>(list: [Field; N]) -> Self {
        const { assert!(N <= MAX_FIELDS) };
        let mut items = [Field { name: "", value: FieldValue::Switch(false) }; MAX_FIELDS];
        for (slot, field) in items.iter_mut().zip(list) {
            *slot = field;
        }
        Self { items, len: N as u8, next: 0 }
    }
}

impl Iterator for Fields {
    type Item = Field;
    fn next(&mut self) -> Option<Field> {
        if self.next >= self.len {
            return None;
        }
        let field = self.items.get(self.next as usize).copied();
        self.next += 1;
        field
    }
}

const fn dec(name: &'static str, v: u64) -> Field {
    Field { name, value: FieldValue::Dec(v) }
}
const fn hex(name: &'static str, v: u64) -> Field {
    Field { name, value: FieldValue::Hex(v) }
}
const fn word(name: &'static str, v: u32) -> Field {
    Field { name, value: FieldValue::Word(v) }
}
const fn noc(name: &'static str, raw: u64) -> Field {
    Field { name, value: FieldValue::Noc(NocAddr(raw)) }
}
const fn choice(name: &'static str, v: &'static str) -> Field {
    Field { name, value: FieldValue::Choice(v) }
}
const fn switch(name: &'static str, on: bool) -> Field {
    Field { name, value: FieldValue::Switch(on) }
}

/// `RELAY_PAGED` and `WRITE_PAGED` (one layout).
fn paged(c: &RelayPagedCmd) -> Fields {
    let dram = PagedFlags::from_bits_retain(c.flags).contains(PagedFlags::DRAM);
    Fields::new([
        choice("memory", if dram { "dram" } else { "l1" }),
        hex("base", c.base_addr as u64),
        dec("page_size", c.page_size as u64),
        dec("start_page", c.start_page as u64),
        dec("pages", c.pages as u64),
    ])
}

impl PrefetchHeader {
    /// Its named fields, in the order its text form lists them (the
    /// command's name is `id().name()`).
    pub fn fields(&self) -> Fields {
        match self {
            Self::RelayInline { cmd, .. } => {
                Fields::new([dec("length", cmd.length as u64), dec("stride", cmd.stride as u64)])
            }
            Self::RelayLinear(c) => Fields::new([dec("length", c.length as u64), noc("src", c.src)]),
            Self::RelayPaged(c) => paged(c),
            Self::ExecBuf(c) => Fields::new([
                hex("base", c.base_addr as u64),
                dec("page_size", c.page_size as u64),
                dec("pages", c.pages as u64),
                dec("head", c.head as u64),
                switch("whole", ExecBufFlags::from_bits_retain(c.flags).contains(ExecBufFlags::WHOLE)),
            ]),
            Self::Debug(c) => Fields::new([dec("length", c.length as u64), word("checksum", c.checksum)]),
            Self::Stall | Self::ExecBufEnd | Self::Terminate => Fields::new([]),
        }
    }
}

impl DispatchHeader {
    /// Its named fields, in the order its text form lists them (the
    /// command's name is `id().name()`).
    pub fn fields(&self) -> Fields {
        match self {
            Self::WriteLinear(c) => Fields::new([dec("length", c.length as u64), noc("dst", c.dst)]),
            Self::WritePaged(c) => paged(c),
            Self::WritePacked(c) => Fields::new([
                dec("count", c.count as u64),
                dec("size", c.size as u64),
                hex("addr", c.addr as u64),
                switch("shared", PackedFlags::from_bits_retain(c.flags).contains(PackedFlags::SHARED_DATA)),
            ]),
            Self::WriteHost(c) => {
                let event = WriteHostFlags::from_bits_retain(c.flags).contains(WriteHostFlags::EVENT);
                Fields::new([
                    choice("record", if event { "event" } else { "data" }),
                    dec("length", c.length as u64),
                    dec("tag", c.tag as u64),
                ])
            }
            Self::Wait(c) => {
                let flags = WaitFlags::from_bits_retain(c.flags);
                // The word is a semaphore's index under WAIT_COUNTER, an L1
                // address otherwise.
                let waited = if flags.contains(WaitFlags::WAIT_COUNTER) {
                    dec("semaphore", c.addr as u64)
                } else {
                    hex("addr", c.addr as u64)
                };
                Fields::new([
                    Field { name: "flags", value: FieldValue::Flags(FlagSet::of(flags)) },
                    waited,
                    dec("count", c.count as u64),
                ])
            }
            Self::Go(c) => Fields::new([word("signal", c.signal), noc("dst", c.dst)]),
            Self::Launch(c) => Fields::new([dec("length", c.length as u64), noc("dst", c.dst)]),
            Self::SetWriteOffset(v) => Fields::new([hex("offset", *v as u64)]),
            Self::Delay(v) => Fields::new([dec("cycles", *v as u64)]),
            Self::Debug(c) => Fields::new([dec("length", c.length as u64), word("checksum", c.checksum)]),
            Self::Terminate => Fields::new([]),
        }
    }
}

/// `NAME field field ...`: the command's name, then each field the text shows.
fn write_header(f: &mut fmt::Formatter<'_>, name: &str, fields: Fields) -> fmt::Result {
    f.write_str(name)?;
    for field in fields.filter(Field::in_text) {
        write!(f, " {field}")?;
    }
    Ok(())
}

impl fmt::Display for PrefetchHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_header(f, self.id().name(), self.fields())
    }
}

impl fmt::Display for DispatchHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_header(f, self.id().name(), self.fields())
    }
}

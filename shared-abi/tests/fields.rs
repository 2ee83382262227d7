//! A command header's named fields: the text form every header prints
//! (what `cqlab decode` lists), and the typed values `cqlab decode --json`
//! reads from the same list.

use cqlab_abi::decode::{DispatchHeader, PrefetchHeader};
use cqlab_abi::dispatch::{DispatchCmdId, GoCmd, LaunchCmd, WaitCmd, WaitFlags, WriteHostCmd, WriteLinearCmd};
use cqlab_abi::dispatch::{PackedFlags, WriteHostFlags, WritePackedCmd};
use cqlab_abi::fields::{Field, FieldValue};
use cqlab_abi::noc::{Coord, NocAddr, BH_PCIE_FLAG};
use cqlab_abi::prefetch::{DebugCmd, ExecBufCmd, ExecBufFlags, PagedFlags, PrefetchCmdId, RelayInlineCmd};
use cqlab_abi::prefetch::{RelayLinearCmd, RelayPagedCmd};

fn unicast() -> u64 {
    NocAddr::unicast(Coord::new(18, 19), 0xa1000).0
}

fn multicast() -> u64 {
    NocAddr::multicast(Coord::new(18, 18), Coord::new(25, 25), 0x1f0).0
}

fn paged(id: u8, flags: PagedFlags) -> RelayPagedCmd {
    RelayPagedCmd { id, flags: flags.bits(), start_page: 3, base_addr: 0x4000, page_size: 2048, pages: 5 }
}

/// One header of every kind (and every flag a text form shows), with the
/// line it printed before the fields were a list: the text form must not
/// move by a byte.
fn prefetch_examples() -> Vec<(PrefetchHeader, &'static str)> {
    let inline = RelayInlineCmd { id: PrefetchCmdId::RelayInline as u8, length: 96, stride: 128, ..Default::default() };
    let linear = |src| RelayLinearCmd { id: PrefetchCmdId::RelayLinear as u8, length: 256, src, ..Default::default() };
    let exec = |flags: ExecBufFlags| ExecBufCmd {
        id: PrefetchCmdId::ExecBuf as u8,
        flags: flags.bits(),
        head: 128,
        base_addr: 0x8000,
        page_size: 1024,
        pages: 7,
    };
    let debug =
        DebugCmd { id: PrefetchCmdId::Debug as u8, length: 5, checksum: 0xbeef, stride: 64, ..Default::default() };
    let relay_paged = PrefetchCmdId::RelayPaged as u8;
    vec![
        (PrefetchHeader::RelayInline { flush: true, cmd: inline }, "RELAY_INLINE length=96 stride=128"),
        (PrefetchHeader::RelayInline { flush: false, cmd: inline }, "RELAY_INLINE_NOFLUSH length=96 stride=128"),
        (PrefetchHeader::RelayLinear(linear(unicast())), "RELAY_LINEAR length=256 src=(18,19)+0xa1000"),
        (
            PrefetchHeader::RelayLinear(linear(NocAddr(unicast()).with_flags(BH_PCIE_FLAG).0)),
            "RELAY_LINEAR length=256 src=(18,19)+0xa1000",
        ),
        (
            PrefetchHeader::RelayPaged(paged(relay_paged, PagedFlags::DRAM)),
            "RELAY_PAGED dram base=0x4000 page_size=2048 start_page=3 pages=5",
        ),
        (
            PrefetchHeader::RelayPaged(paged(relay_paged, PagedFlags::empty())),
            "RELAY_PAGED l1 base=0x4000 page_size=2048 start_page=3 pages=5",
        ),
        (PrefetchHeader::Stall, "STALL"),
        (PrefetchHeader::ExecBuf(exec(ExecBufFlags::empty())), "EXEC_BUF base=0x8000 page_size=1024 pages=7 head=128"),
        (
            PrefetchHeader::ExecBuf(exec(ExecBufFlags::WHOLE)),
            "EXEC_BUF base=0x8000 page_size=1024 pages=7 head=128 whole",
        ),
        (PrefetchHeader::ExecBufEnd, "EXEC_BUF_END"),
        (PrefetchHeader::Debug(debug), "DEBUG length=5 checksum=0x0000beef"),
        (PrefetchHeader::Terminate, "TERMINATE"),
    ]
}

fn dispatch_examples() -> Vec<(DispatchHeader, &'static str)> {
    let wait =
        |flags: u8, addr, count| WaitCmd { id: DispatchCmdId::Wait as u8, flags, addr, count, ..Default::default() };
    let packed = |flags: PackedFlags| WritePackedCmd {
        id: DispatchCmdId::WritePacked as u8,
        flags: flags.bits(),
        count: 4,
        size: 64,
        addr: 0x1200,
        ..Default::default()
    };
    let host = |flags: WriteHostFlags, length| WriteHostCmd {
        id: DispatchCmdId::WriteHost as u8,
        flags: flags.bits(),
        length,
        tag: 5,
        ..Default::default()
    };
    let linear =
        WriteLinearCmd { id: DispatchCmdId::WriteLinear as u8, length: 40, dst: multicast(), ..Default::default() };
    let go = GoCmd { id: DispatchCmdId::Go as u8, signal: 0x80, dst: unicast(), ..Default::default() };
    let launch = LaunchCmd { id: DispatchCmdId::Launch as u8, length: 256, dst: multicast(), ..Default::default() };
    let debug =
        DebugCmd { id: DispatchCmdId::Debug as u8, length: 3, checksum: 0x12, stride: 32, ..Default::default() };
    let barrier = (WaitFlags::BARRIER | WaitFlags::NOTIFY_PREFETCH).bits();
    let counter = (WaitFlags::WAIT_COUNTER | WaitFlags::CLEAR).bits();
    vec![
        (DispatchHeader::WriteLinear(linear), "WRITE_LINEAR length=40 dst=(18,18)..(25,25)+0x1f0"),
        (
            DispatchHeader::WritePaged(paged(DispatchCmdId::WritePaged as u8, PagedFlags::DRAM)),
            "WRITE_PAGED dram base=0x4000 page_size=2048 start_page=3 pages=5",
        ),
        (DispatchHeader::WritePacked(packed(PackedFlags::empty())), "WRITE_PACKED count=4 size=64 addr=0x1200"),
        (
            DispatchHeader::WritePacked(packed(PackedFlags::SHARED_DATA)),
            "WRITE_PACKED count=4 size=64 addr=0x1200 shared",
        ),
        (DispatchHeader::WriteHost(host(WriteHostFlags::empty(), 256)), "WRITE_HOST data length=256 tag=5"),
        (DispatchHeader::WriteHost(host(WriteHostFlags::EVENT, 16)), "WRITE_HOST event length=16 tag=5"),
        (DispatchHeader::Wait(wait(barrier, 0, 0)), "WAIT flags=BARRIER | NOTIFY_PREFETCH addr=0x0 count=0"),
        (DispatchHeader::Wait(wait(counter, 3, 2)), "WAIT flags=WAIT_COUNTER | CLEAR semaphore=3 count=2"),
        (DispatchHeader::Wait(wait(0, 0x40, 1)), "WAIT flags= addr=0x40 count=1"),
        // Bits no flag names (a header built by hand: `parse` refuses them)
        // print as bitflags prints them.
        (DispatchHeader::Wait(wait(0x41, 0, 0)), "WAIT flags=BARRIER | 0x40 addr=0x0 count=0"),
        (DispatchHeader::Wait(wait(0xc0, 0, 0)), "WAIT flags=0xc0 addr=0x0 count=0"),
        (DispatchHeader::Go(go), "GO signal=0x00000080 dst=(18,19)+0xa1000"),
        (DispatchHeader::Launch(launch), "LAUNCH length=256 dst=(18,18)..(25,25)+0x1f0"),
        (DispatchHeader::SetWriteOffset(0x2000), "SET_WRITE_OFFSET offset=0x2000"),
        (DispatchHeader::Delay(500), "DELAY cycles=500"),
        (DispatchHeader::Debug(debug), "DEBUG length=3 checksum=0x00000012"),
        (DispatchHeader::Terminate, "TERMINATE"),
    ]
}

#[test]
fn every_header_prints_as_it_always_has() {
    for (header, text) in prefetch_examples() {
        assert_eq!(header.to_string(), text, "{header:?}");
    }
    for (header, text) in dispatch_examples() {
        assert_eq!(header.to_string(), text, "{header:?}");
    }
}

fn fields_of(fields: cqlab_abi::fields::Fields) -> Vec<(&'static str, FieldValue)> {
    fields.map(|f| (f.name, f.value)).collect()
}

#[test]
fn fields_are_typed_values() {
    let examples = dispatch_examples();
    let wait = fields_of(examples[6].0.fields());
    let FieldValue::Flags(flags) = wait[0].1 else { panic!("WAIT flags are a flag set: {wait:?}") };
    assert_eq!(flags.names().collect::<Vec<_>>(), ["BARRIER", "NOTIFY_PREFETCH"]);
    assert_eq!((flags.bits(), flags.unknown_bits()), (0b11, 0));
    assert_eq!(wait[1..], [("addr", FieldValue::Hex(0)), ("count", FieldValue::Dec(0))]);
    let FieldValue::Flags(hand_made) = examples[9].0.fields().next().unwrap().value else { panic!("flags") };
    assert_eq!((hand_made.names().collect::<Vec<_>>(), hand_made.unknown_bits()), (vec!["BARRIER"], 0x40));

    let linear = fields_of(examples[0].0.fields());
    assert_eq!(linear, [("length", FieldValue::Dec(40)), ("dst", FieldValue::Noc(NocAddr(multicast())))]);
    assert_eq!(
        fields_of(examples[11].0.fields()),
        [("signal", FieldValue::Word(0x80)), ("dst", FieldValue::Noc(NocAddr(unicast())))]
    );
    assert_eq!(
        fields_of(examples[5].0.fields()),
        [("record", FieldValue::Choice("event")), ("length", FieldValue::Dec(16)), ("tag", FieldValue::Dec(5))]
    );

    let prefetch = prefetch_examples();
    let paged = fields_of(prefetch[4].0.fields());
    assert_eq!(paged[..2], [("memory", FieldValue::Choice("dram")), ("base", FieldValue::Hex(0x4000))]);
    // An off switch is a field (JSON says `false`) the text leaves out.
    let exec = fields_of(prefetch[7].0.fields());
    assert_eq!(exec.last(), Some(&("whole", FieldValue::Switch(false))));
    assert_eq!(fields_of(prefetch[6].0.fields()), [], "STALL has no fields");
}

/// The text form is the fields' text, one after another: nothing prints a
/// field the list does not have.
#[test]
fn the_text_form_is_the_fields() {
    let join = |name: &str, fields: cqlab_abi::fields::Fields| {
        fields.filter(Field::in_text).fold(name.to_owned(), |line, f| format!("{line} {f}"))
    };
    for (header, text) in prefetch_examples() {
        assert_eq!(join(header.id().name(), header.fields()), text);
    }
    for (header, text) in dispatch_examples() {
        assert_eq!(join(header.id().name(), header.fields()), text);
    }
}

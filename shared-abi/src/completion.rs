//! Completion-queue records written by the dispatcher into host sysmem.
//!
//! Each record is a `CompletionHeader` followed by `length` payload bytes,
//! the whole padded to `PCIE_ALIGNMENT`. An event's payload is an `EventRecord`.

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

id_table! {
    /// `CompletionHeader::kind`.
    pub enum CompletionKind: u8 { from_u8, name } {
        /// Read-back data.
        Data = 1, "data";
        /// An event completed.
        Event = 2, "event";
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct CompletionHeader {
    /// `CompletionKind`.
    pub kind: u8,
    pub _pad: u8,
    /// Command queue that produced the record.
    pub cq: u16,
    /// Payload bytes after this header (before padding).
    pub length: u32,
    /// Host-chosen tag copied from the WRITE_HOST command.
    pub tag: u32,
    /// Record sequence number on this CQ.
    pub seq: u32,
}
assert_layout!(CompletionHeader, 16, kind => 0, cq => 2, length => 4, tag => 8, seq => 12);

/// Payload of an event completion record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable)]
#[repr(C)]
pub struct EventRecord {
    /// Event id (ids start at 1; 0 is never a valid event).
    pub event_id: u32,
    pub cq: u32,
    /// Dispatcher `mcycle` when the event completed.
    pub cycle: u64,
}
assert_layout!(EventRecord, 16, event_id => 0, cq => 4, cycle => 8);

/// Bytes a record with `length` payload bytes occupies in the ring.
pub const fn record_size(length: u32) -> u32 {
    let raw = 16 + length;
    (raw + crate::PCIE_ALIGNMENT as u32 - 1) & !(crate::PCIE_ALIGNMENT as u32 - 1)
}

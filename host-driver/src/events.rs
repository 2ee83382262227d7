//! Events: ids start at 1 and are unique per device; an event belongs to
//! the queue that recorded it.

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Event {
    pub cq: u8,
    pub id: u32,
}

//! The chip's DRAM channels (tt-umd's "banks": Wormhole 6 of 2 GiB, each
//! holding two of tt-metal's 1 GiB banks; Blackhole 8 of 4 GiB), each
//! reached through its three DRAM tiles. A channel's memory is allocated in
//! chunks on first write, so a chip with 32 GiB of DRAM costs only what is
//! written; untouched memory reads as zero.
//!
//! In the tt-kmd simulator mode every channel is a region of a shared file
//! ([`crate::shared`]) from the start.

use crate::storage::{Bytes, SharedRegion};
use std::collections::BTreeMap;

/// Bytes of one allocation chunk.
const CHUNK: u64 = 1 << 20;

enum Channel {
    /// Chunks written so far, by chunk index.
    Sparse(BTreeMap<u64, Box<[u8]>>),
    Shared(Bytes),
}

/// Every DRAM channel of the chip.
pub struct Dram {
    channel_size: u64,
    channels: Vec<Channel>,
}

impl Dram {
    pub fn new(channels: usize, channel_size: u64) -> Self {
        Dram { channel_size, channels: (0..channels).map(|_| Channel::Sparse(BTreeMap::new())).collect() }
    }

    /// Channels that are regions of a shared mapping, each `channel_size` long.
    pub fn shared(channel_size: u64, regions: Vec<SharedRegion>) -> Self {
        assert!(regions.iter().all(|r| r.len() as u64 == channel_size), "DRAM regions must be whole channels");
        Dram { channel_size, channels: regions.into_iter().map(|r| Channel::Shared(Bytes::Shared(r))).collect() }
    }

    pub fn channel_size(&self) -> u64 {
        self.channel_size
    }

    pub fn channels(&self) -> usize {
        self.channels.len()
    }

    /// True if `[offset, offset + len)` is inside channel `ch`.
    pub fn contains(&self, ch: usize, offset: u64, len: u64) -> bool {
        ch < self.channels.len() && offset.checked_add(len).is_some_and(|end| end <= self.channel_size)
    }

    /// Reads; untouched memory reads as zero. Caller checks `contains`.
    pub fn read(&self, ch: usize, offset: u64, buf: &mut [u8]) {
        match &self.channels[ch] {
            Channel::Shared(b) => b.read(offset as usize, buf),
            Channel::Sparse(chunks) => {
                for (c, off, at, n) in pieces(offset, buf.len()) {
                    match chunks.get(&c) {
                        Some(chunk) => buf[at..at + n].copy_from_slice(&chunk[off..off + n]),
                        None => buf[at..at + n].fill(0),
                    }
                }
            }
        }
    }

    /// Writes. Caller checks `contains`.
    pub fn write(&mut self, ch: usize, offset: u64, data: &[u8]) {
        match &mut self.channels[ch] {
            Channel::Shared(b) => b.write(offset as usize, data),
            Channel::Sparse(chunks) => {
                for (c, off, at, n) in pieces(offset, data.len()) {
                    let chunk = chunks.entry(c).or_insert_with(|| vec![0; CHUNK as usize].into_boxed_slice());
                    chunk[off..off + n].copy_from_slice(&data[at..at + n]);
                }
            }
        }
    }

    /// Written memory, for digests: (channel, offset, bytes), in order.
    pub fn touched(&self) -> Vec<(usize, u64, std::borrow::Cow<'_, [u8]>)> {
        let mut out = Vec::new();
        for (ch, c) in self.channels.iter().enumerate() {
            match c {
                Channel::Shared(b) => out.push((ch, 0, b.snapshot())),
                Channel::Sparse(chunks) => {
                    out.extend(chunks.iter().map(|(&i, b)| (ch, i * CHUNK, std::borrow::Cow::Borrowed(&b[..]))))
                }
            }
        }
        out
    }
}

/// The chunk pieces of `len` bytes at channel `offset`: (chunk index,
/// offset in the chunk, offset in the caller's buffer, length).
fn pieces(offset: u64, len: usize) -> impl Iterator<Item = (u64, usize, usize, usize)> {
    let mut done = 0;
    std::iter::from_fn(move || {
        if done >= len {
            return None;
        }
        let at = offset + done as u64;
        let (c, off) = (at / CHUNK, (at % CHUNK) as usize);
        let n = (len - done).min(CHUNK as usize - off);
        let piece = (c, off, done, n);
        done += n;
        Some(piece)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_channels_read_zero_until_written_and_straddle_chunks() {
        let mut d = Dram::new(2, 4 << 30);
        let mut buf = [1u8; 8];
        d.read(1, (3 << 30) + 7, &mut buf);
        assert_eq!(buf, [0; 8]);
        let data: Vec<u8> = (0..300).map(|i| i as u8).collect();
        d.write(1, CHUNK - 100, &data);
        let mut back = vec![0; 300];
        d.read(1, CHUNK - 100, &mut back);
        assert_eq!(back, data);
        assert_eq!(d.touched().len(), 2, "two chunks allocated");
        assert!(d.contains(1, (4 << 30) - 4, 4) && !d.contains(1, (4 << 30) - 4, 8) && !d.contains(2, 0, 1));
    }
}

//! `cqlab driver-bench`: host-side driver figures, each against a baseline
//! measured in the same run: small-command enqueue rate, bulk write_buffer
//! against plain memcpy into the same sysmem, event round trip; and the
//! device's read-back rate by page size.

use crate::out::outln;
use anyhow::Result;
use cqlab_abi::encode::Encoder;
use cqlab_abi::noc::NocAddr;
use cqlab_driver::DeviceConfig;
use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Print one JSON object (device, chip and each figure) instead of a
    /// table.
    #[arg(long)]
    pub json: bool,
    /// Device for the driver-path figures: embedded (seed 1, the default),
    /// or any other spec of docs/backends.md (sim:PATH, ttkmd-sim:PATH,
    /// ttsim:LIBRARY, /dev/tenstorrent/N).
    #[arg(long, default_value = "embedded")]
    pub device: String,
    #[command(flatten)]
    pub limits: crate::cli::Limits,
    #[command(flatten)]
    pub chip: crate::chip::ChipOpt,
}

pub fn validate(a: &Args) -> Result<()> {
    a.chip.validate_for(crate::device::made_here(&a.device))?;
    Ok(crate::device::validate(&a.device, 0)?)
}

/// The DRAM buffer read back by figure 5, and its page sizes.
const READ_BACK_BYTES: u32 = 512 * 1024;
const READ_BACK_PAGES: [u32; 3] = [1024, 4096, 32 * 1024];

pub fn run(args: Args) -> Result<ExitCode> {
    let mut cfg = DeviceConfig::default();
    args.limits.apply(&mut cfg);
    args.chip.apply_for(&mut cfg, crate::device::made_here(&args.device))?;
    let mut dev = crate::device::open(&args.device, 1, 0, cfg)?;
    dev.boot()?;

    // 1. Encoding 64-byte inline writes straight into an issue-queue-sized ring.
    let mut ring = vec![0u8; cqlab_abi::sysmem::DEFAULT_ISSUE_QUEUE_SIZE as usize];
    let payload = [0x5au8; 64];
    let first = dev.chip().worker(0, 0).expect("a chip has a compute core");
    let dst = NocAddr::unicast(first, cqlab_abi::memory_map::USER.base as u64);
    let n_encode = 2_000_000u64;
    let t0 = Instant::now();
    let mut done = 0u64;
    while done < n_encode {
        let mut enc = Encoder::new(&mut ring);
        while enc.relay_inline(true, |w| w.write_linear(dst, &payload)).is_ok() {
            done += 1;
        }
        black_box(enc.len());
    }
    let encode_rate = done as f64 / t0.elapsed().as_secs_f64();

    // 2. The full driver path (encode, copy into the issue ring, doorbell) for
    //    batches that fit the queues, on the booted device.
    let buf = dev.alloc_l1(0, 0, 64)?;
    let (batch, rounds) = (100u32, 20u32);
    let mut submit_time = 0.0;
    for _ in 0..rounds {
        let mut cq = dev.cq(0)?;
        let t = Instant::now();
        for _ in 0..batch {
            cq.write_buffer(&buf, 0, &payload)?;
        }
        submit_time += t.elapsed().as_secs_f64();
        cq.finish()?;
    }
    let submit_rate = (batch * rounds) as f64 / submit_time;

    // 3. Bulk write_buffer (32 KiB pieces) against memcpy of the same bytes
    //    into the same sysmem, 768 KiB each (fits the 1 MiB issue queue).
    // Core (1,1), or the nearest on a grid one core high or wide (an 8x1
    // grid refused it after the first figures; helper-59).
    let end = dev.chip().grid().end;
    let big = dev.alloc_l1(end.0.min(1), end.1.min(1), 32 * 1024)?;
    let data = vec![0xa5u8; 32 * 1024];
    let pieces = 24;
    let mut write_s = f64::MAX;
    let mut memcpy_s = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let mut cq = dev.cq(1)?;
        for _ in 0..pieces {
            cq.write_buffer(&big, 0, &data)?;
        }
        write_s = write_s.min(t.elapsed().as_secs_f64());
        cq.finish()?;
        // CQ1's issue ring: the very memory write_buffer just filled, idle after finish.
        let cfg = dev.config().clone();
        let ring =
            cqlab_abi::sysmem::CqSysmemLayout::for_cq(1, cfg.issue_size, cfg.completion_size).issue_base() as usize;
        let sysmem = dev.backend().sysmem_claim(ring, pieces * data.len())?;
        let t = Instant::now();
        for i in 0..pieces {
            sysmem[i * data.len()..(i + 1) * data.len()].copy_from_slice(black_box(&data));
        }
        black_box(&sysmem[0]);
        memcpy_s = memcpy_s.min(t.elapsed().as_secs_f64());
    }
    let bytes = (pieces * data.len()) as f64;

    // 4. Event round trip on an idle device.
    let n_events = 200;
    let (c0, t0) = (dev.now(), Instant::now());
    for _ in 0..n_events {
        let ev = dev.cq(0)?.record_event()?;
        dev.event_synchronize(ev)?;
    }
    let ev_cycles = (dev.now() - c0) as f64 / n_events as f64;
    let ev_us = t0.elapsed().as_secs_f64() * 1e6 / n_events as f64;

    // 5. Read-back of a DRAM buffer, device bytes per cycle: the prefetcher
    //    relays its pages (RELAY_PAGED), the dispatcher writes them to the
    //    completion queue. Small pages are paced by per-page relay work,
    //    large ones by the links.
    let mut read_back = Vec::new();
    for page in READ_BACK_PAGES {
        let buf = dev.alloc_dram(READ_BACK_BYTES, page)?;
        let data: Vec<u8> = (0..READ_BACK_BYTES).map(|i| (i ^ i >> 8) as u8).collect();
        let mut cq = dev.cq(0)?;
        cq.write_buffer(&buf, 0, &data)?;
        cq.finish()?;
        let c0 = dev.now();
        let back = dev.cq(0)?.read_buffer(&buf, 0, READ_BACK_BYTES)?;
        let cycles = dev.now() - c0;
        anyhow::ensure!(
            back == data,
            "read-back of {READ_BACK_BYTES} B in {page} B pages differs from what was written"
        );
        read_back.push((page, READ_BACK_BYTES as f64 / cycles as f64));
    }

    let write_gbs = bytes / write_s / 1e9;
    let memcpy_gbs = bytes / memcpy_s / 1e9;
    if args.json {
        outln!(
            "{}",
            serde_json::json!({
                "device": args.device, "seed": cqlab_workloads::runner::device_seed(&args.device, 1),
                "chip": dev.chip().board().name(), "harvesting": dev.chip().harvesting().to_string(),
                "encode_inline_writes_per_s": encode_rate,
                "write_buffer_small_per_s": submit_rate,
                "bulk_write_buffer_gbs": write_gbs, "memcpy_gbs": memcpy_gbs, "bulk_ratio": write_gbs / memcpy_gbs,
                "event_round_trip_cycles": ev_cycles, "event_round_trip_host_us": ev_us,
                "sysmem_pages": crate::sysmem_pages::json(),
                "read_back_bytes_per_cycle": read_back.iter().map(|&(page, rate)| {
                    serde_json::json!({"page_bytes": page, "bytes_per_cycle": rate})
                }).collect::<Vec<_>>(),
            })
        );
        return Ok(ExitCode::SUCCESS);
    }
    outln!("{:<52} {:>14}", "measurement", "result");
    outln!("{:<52} {:>12.2} M/s", "encode 64-byte inline writes into the issue ring", encode_rate / 1e6);
    outln!("{:<52} {:>12.2} M/s", "write_buffer 64 B (encode + copy + doorbell)", submit_rate / 1e6);
    outln!("{:<52} {:>11.2} GB/s", "bulk write_buffer, 32 KiB pieces, into sysmem", write_gbs);
    outln!("{:<52} {:>11.2} GB/s", "memcpy of the same bytes into the same sysmem", memcpy_gbs);
    outln!("{:<52} {:>13.0} %", "bulk write_buffer / memcpy", 100.0 * write_gbs / memcpy_gbs);
    outln!("{:<52} {:>9.0} cycles", "event round trip, device (record + synchronize)", ev_cycles);
    outln!("{:<52} {:>13.1} us", "event round trip, host time (simulating included)", ev_us);
    for (page, rate) in read_back {
        let what = format!("read_buffer {} KiB in {page} B pages, device", READ_BACK_BYTES >> 10);
        outln!("{what:<52} {rate:>8.2} B/cycle");
    }
    if let Some(line) = crate::sysmem_pages::line() {
        outln!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

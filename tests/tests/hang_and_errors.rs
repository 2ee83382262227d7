//! Bad input and hangs end as clear errors with hang dumps, never as hangs,
//! on a Wormhole and a Blackhole: cores are named by their translated
//! coordinates and their role on the chip.

use cqlab_abi::dispatch::WaitFlags;
use cqlab_abi::encode::Encoder;
use cqlab_abi::fetch_queue::{slot_addr, source_addr, FetchEntry, Split, STALL_FLAG};
use cqlab_abi::mailbox::DeviceError;
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::waypoint;
use cqlab_driver::dump::{Link, Wait};
use cqlab_driver::error::DeviceFault;
use cqlab_driver::{CoreRange, DriverError, Event};
use cqlab_tests::{booted, on_both_chips};

on_both_chips! {
    fn a_kernel_past_its_limit_is_named_and_ends_the_chain(chip) {
        let mut dev = booted(chip, 11, |c| {
            c.worker_kernel = "spin".into();
            c.stall_timeout_cycles = 3_000_000;
            c.kernel_timeout_cycles = Some(6_000_000);
        });
        let mut cq = dev.cq(0).unwrap();
        cq.launch(CoreRange::single(1, 1), &[u32::MAX]).unwrap();
        let err = cq.finish().unwrap_err();
        let DriverError::KernelTimeout { core, cycles, wait, dump, .. } = &err else {
            panic!("{} seed 11: expected a kernel timeout, got {err}", chip.name())
        };
        let worker = dev.chip().worker(1, 1).unwrap();
        assert_eq!(*core, worker);
        assert!(*cycles >= 6_000_000, "seed 11: {cycles}");
        assert!(matches!(wait, Wait::Event { cq: 0, .. }), "{wait}");
        let chain = dump.chain_text().join(" -> ");
        assert!(chain.contains("CQ0 prefetcher") && chain.contains("PSW"), "seed 11: {chain}");
        assert!(chain.contains("CQ0 dispatcher") && chain.contains("WCW"), "seed 11: {chain}");
        let last = dump.chain_text().pop().unwrap();
        assert_eq!(dump.root().map(|c| c.core), Some(worker), "seed 11: {chain}");
        assert!(
            last.contains(&format!("worker (1,1) {worker}")) && last.contains("RUN (running its kernel for"),
            "seed 11: chain ends at the running kernel with its cycles: {chain}"
        );
        // The error and its dump tell one time (helper-67: the error's was
        // taken before the BAR reads that found the kernel).
        assert!(last.contains(&format!("running its kernel for {cycles} cycles")), "seed 11: {cycles}: {chain}");
        assert!(!dump.deadlock);
        let text = err.to_string();
        eprintln!("{text}");
        assert!(text.contains(&format!("kernel on worker (1,1) {worker} still running after")), "{text}");
        let json = serde_json::to_value(dump.as_ref()).unwrap();
        assert!(json["chain"].is_array(), "{json}");
        // The dump's JSON names each core `{"x": .., "y": ..}`, as every JSON
        // output does (it was the string "(18,18)"): the root worker's too.
        let at = |c: &serde_json::Value| serde_json::from_value::<cqlab_abi::noc::Coord>(c["core"].clone());
        let cores = json["cores"].as_array().unwrap();
        assert!(cores.iter().all(|c| at(c).is_ok()), "seed 11: {json}");
        let root = cores.iter().find(|c| at(c).ok() == Some(worker)).unwrap_or_else(|| panic!("seed 11: {json}"));
        assert_eq!(root["core"], serde_json::json!({"x": worker.x, "y": worker.y}), "seed 11");
        assert_eq!((root["role"].as_str(), root["waypoint"].as_str()), (Some("worker (1,1)"), Some("RUN")), "seed 11");
    }

    /// With several kernels past their limit, the error's headline and the
    /// chain's root name the same one, the earliest started (helper-86's
    /// audit: "kernel on (18,22) still running" above a chain ending at
    /// (18,18), the first running worker in the chip's order). And the
    /// queue line says what its count is: launches a WAIT has yet to cover
    /// (0 here, the finish's WAIT covers both), not kernels running.
    fn a_kernel_timeout_and_its_chain_name_the_same_kernel(chip) {
        let mut dev = booted(chip, 19, |c| {
            c.worker_kernel = "spin".into();
            c.stall_timeout_cycles = 3_000_000;
            c.kernel_timeout_cycles = Some(6_000_000);
        });
        let (first, later) = (dev.chip().worker(1, 1).unwrap(), dev.chip().worker(0, 0).unwrap());
        let mut cq = dev.cq(0).unwrap();
        // (1,1) starts first; (0,0) comes first in the chip's order.
        cq.launch(CoreRange::single(1, 1), &[u32::MAX]).unwrap();
        cq.launch(CoreRange::single(0, 0), &[u32::MAX]).unwrap();
        let err = cq.finish().unwrap_err();
        let DriverError::KernelTimeout { core, dump, .. } = &err else {
            panic!("{} seed 19: expected a kernel timeout, got {err}", chip.name())
        };
        let chain = dump.chain_text().join(" -> ");
        assert!(dump.core(later).is_some_and(|c| c.running()), "seed 19: both kernels run: {chain}");
        assert_eq!((*core, dump.root().map(|c| c.core)), (first, Some(first)), "seed 19: {chain}");
        let text = err.to_string();
        assert!(text.starts_with(&format!("kernel on worker (1,1) {first} still running after")), "seed 19: {text}");
        assert!(!text.contains("workers outstanding"), "seed 19: {text}");
        assert!(text.contains("; worker completions not yet waited for 0; last event"), "seed 19: {text}");
    }

    /// A long wait reports how far it has got at each progress check (the
    /// CLI prints some of them on stderr): what it waits for, the device
    /// cycle reached and the timeout it runs towards, here the running
    /// kernel's (helper-86's audit: a hung kernel on a simulator waited
    /// hours in silence). Reports go by device time: no host timing here.
    fn a_long_wait_reports_its_progress_towards_its_timeout(chip) {
        use cqlab_driver::wait::PROGRESS_CHECK_CYCLES;
        use cqlab_driver::wait_progress::{WaitLimit, WaitProgress, WaitProgressSink};
        let reports = std::sync::Arc::new(std::sync::Mutex::new(Vec::<WaitProgress>::new()));
        let sink = reports.clone();
        let mut dev = booted(chip, 11, |c| {
            c.worker_kernel = "spin".into();
            c.stall_timeout_cycles = 3_000_000;
            c.kernel_timeout_cycles = Some(6_000_000);
            c.wait_progress = Some(WaitProgressSink::new(move |p| sink.lock().unwrap().push(p.clone())));
        });
        let worker = dev.chip().worker(1, 1).unwrap();
        let mut cq = dev.cq(0).unwrap();
        cq.launch(CoreRange::single(1, 1), &[u32::MAX]).unwrap();
        let err = cq.finish().unwrap_err();
        assert!(matches!(err, DriverError::KernelTimeout { .. }), "seed 11: {err}");
        let reports = reports.lock().unwrap();
        let waits: Vec<&WaitProgress> = reports.iter().filter(|r| matches!(r.wait, Wait::Event { cq: 0, .. })).collect();
        assert!(waits.len() >= 4, "seed 11: a report a progress check: {reports:?}");
        assert!(waits.windows(2).all(|w| w[1].device_cycle >= w[0].device_cycle + PROGRESS_CHECK_CYCLES));
        let ran: Vec<u64> = waits
            .iter()
            .filter_map(|r| match r.limit {
                WaitLimit::Kernel { core, ran, limit: 6_000_000 } if core == worker => Some(ran),
                _ => None,
            })
            .collect();
        assert!(ran.len() >= 3 && ran.windows(2).all(|w| w[1] > w[0]), "seed 11: {reports:?}");
        let line = waits.last().unwrap().to_string();
        assert!(
            line.starts_with("still waiting for CQ host completion event")
                && line.contains(&format!("kernel on {worker} running for"))
                && line.contains("of the 6000000-cycle kernel timeout"),
            "seed 11: {line}"
        );
    }

    /// The kernel timeout left unset is the backend's: a simulator's is
    /// 1 G cycles (minutes of host time), not silicon's 100 G (hours of it,
    /// helper-86's audit); one set is kept.
    fn a_simulators_default_kernel_timeout_is_simulator_sized(chip) {
        use cqlab_driver::config::DEFAULT_SIM_KERNEL_TIMEOUT_CYCLES;
        let cfg = cqlab_tests::config(chip);
        assert_eq!(cfg.kernel_timeout_cycles, None);
        let dev = cqlab_driver::Device::embedded(chip.sim(3), cfg.clone()).unwrap();
        assert_eq!(dev.config().kernel_timeout_cycles, Some(DEFAULT_SIM_KERNEL_TIMEOUT_CYCLES));
        assert_eq!(dev.config().kernel_timeout(), 1_000_000_000);
        let set = cqlab_driver::DeviceConfig { kernel_timeout_cycles: Some(7_000_000), ..cfg };
        let dev = cqlab_driver::Device::embedded(chip.sim(3), set).unwrap();
        assert_eq!(dev.config().kernel_timeout(), 7_000_000);
    }

    fn a_kernel_longer_than_the_stall_timeout_is_not_a_hang(chip) {
        // Issue 14: `matmul --m 128 --n 128 --k 128` timed out "without
        // progress" while its kernel ran. Here a kernel runs 10x the stall
        // timeout without recording anything, and the wait behind it succeeds.
        let mut dev = booted(chip, 14, |c| {
            c.worker_kernel = "spin".into();
            c.stall_timeout_cycles = 2_000_000;
        });
        let mut cq = dev.cq(0).unwrap();
        cq.launch(CoreRange::single(0, 0), &[20_000_000]).unwrap();
        let c0 = dev.now();
        dev.cq(0).unwrap().finish().unwrap_or_else(|e| panic!("seed 14: a long kernel is not a hang: {e}"));
        assert!(dev.now() - c0 >= 20_000_000);
    }

    fn a_halted_worker_ends_the_chain_with_its_error_record(chip) {
        // A copy kernel launched without its arguments halts with an error
        // record. The queue would wait on it forever: a device error naming
        // that worker's record at the next progress check (it was a hang
        // after the stall timeout), whose chain ends at the worker.
        let mut dev = booted(chip, 15, |c| {
            c.worker_kernel = "copy".into();
            c.stall_timeout_cycles = 2_000_000;
        });
        let mut cq = dev.cq(0).unwrap();
        cq.launch(CoreRange::single(1, 0), &[]).unwrap();
        let err = cq.finish().unwrap_err();
        let DriverError::Device { fault: DeviceFault::BadCommand(report), core, dump } = &err else {
            panic!("{} seed 15: expected a device error, got {err}", chip.name())
        };
        assert_eq!((Some(*core), report.error()), (dev.chip().worker(1, 0), Some(DeviceError::BadKernelArgs)), "{err}");
        assert!(dev.now() < 2_000_000, "seed 15: named after {} cycles", dev.now());
        let chain = dump.chain_text().join(" -> ");
        let root = dump.root().unwrap_or_else(|| panic!("seed 15: the chain ends at a core: {chain}"));
        assert_eq!(Some(root.core), dev.chip().worker(1, 0), "seed 15: {chain}");
        let record = root.error.as_ref().and_then(|e| e.error());
        assert_eq!(record, Some(DeviceError::BadKernelArgs), "seed 15: the error record: {chain}");
        let last = dump.chain_text().pop().unwrap();
        assert!(last.contains("HALTED: invalid kernel runtime arguments"), "seed 15: {chain}");
    }

    fn a_hung_queue_still_times_out_with_its_chain(chip) {
        // CQ1 waits for an event CQ0 never records: queue machinery with no
        // kernel running, a hang as before.
        let mut dev = booted(chip, 16, |c| c.stall_timeout_cycles = 2_000_000);
        let mut cq1 = dev.cq(1).unwrap();
        cq1.wait_for_event(Event { cq: 0, id: 7 }).unwrap();
        let err = cq1.finish().unwrap_err();
        let DriverError::Timeout { cycles, dump, .. } = &err else {
            panic!("{} seed 16: expected a timeout, got {err}", chip.name())
        };
        assert!(*cycles >= 2_000_000);
        let chain = dump.chain_text().join(" -> ");
        let (dispatcher, prefetcher) = (dev.chip().dispatcher(1), dev.chip().prefetcher(0));
        assert!(dump.chain.contains(&Link::Core { core: dispatcher, on_event_of: Some(0) }), "seed 16: {chain}");
        assert!(chain.contains("CQ1 dispatcher") && chain.contains("on an event of CQ0"), "seed 16: {chain}");
        // CQ0 was never given work: its prefetcher waits on the host.
        assert!(chain.contains(&format!("CQ0 prefetcher {prefetcher} HQW")), "seed 16: {chain}");
    }

    fn cq_cores_that_record_while_no_queue_advances_are_a_livelock(chip) {
        // A loop that records as it goes (helper-25: one flipped bit made a
        // dispatcher run the same WAIT for ever) counted as progress, and
        // the host waited for ever. Here 50 DELAYs of 500 k cycles, one
        // chunk: the dispatcher records every 500 k cycles (no stall), and
        // no pointer the host sees moves for 25 M cycles.
        let chunk = delays(50, 500_000);
        let run = |stall: u64| {
            let mut dev = booted(chip, 17, |c| c.stall_timeout_cycles = stall);
            let mut cq = dev.cq(0).unwrap();
            cq.enqueue_raw(&chunk, false).unwrap();
            let done = cq.finish();
            (done, dev.now(), dev.chip().dispatcher(0))
        };
        // Ten stall timeouts are 20 M cycles: a livelock, with its dump.
        let (err, now, dispatcher) = run(2_000_000);
        let err = err.unwrap_err();
        let DriverError::Livelock { core, cycles, records, dump, .. } = &err else {
            panic!("{} seed 17: expected a livelock, got {err}", chip.name())
        };
        assert_eq!(*core, dispatcher, "seed 17: the dispatcher recorded most");
        assert!((20_000_000..25_000_000).contains(cycles) && now < 25_000_000, "seed 17: {cycles} at {now}");
        assert!(*records >= 2 * 35, "seed 17: a DELAY's start and end each: {records}");
        let chain = dump.chain_text().join(" -> ");
        assert!(chain.contains("CQ0 dispatcher"), "seed 17: {chain}");
        assert!(err.to_string().contains("no queue pointer moved"), "{err}");
        // Ten of 3 M are 30 M: the same chain is legal work and finishes.
        let (done, now, _) = run(3_000_000);
        done.unwrap_or_else(|e| panic!("{} seed 17: 25 M cycles of DELAYs under a 30 M limit: {e}", chip.name()));
        assert!(now >= 25_000_000, "seed 17: {now}");
    }

    fn a_stuck_kernel_meets_its_limit_while_a_cq_core_records(chip) {
        // helper-32: while a CQ core recorded, the kernel limit was never
        // looked at. A spin kernel on CQ0 past its 6 M limit, CQ1's
        // dispatcher recording a DELAY every 500 k cycles for 25 M: the
        // kernel timeout, at the first check past the limit.
        let mut dev = booted(chip, 18, |c| {
            c.worker_kernel = "spin".into();
            c.stall_timeout_cycles = 2_000_000;
            c.kernel_timeout_cycles = Some(6_000_000);
        });
        dev.cq(0).unwrap().launch(CoreRange::single(1, 1), &[u32::MAX]).unwrap();
        dev.cq(1).unwrap().enqueue_raw(&delays(50, 500_000), false).unwrap();
        let err = dev.cq(0).unwrap().finish().unwrap_err();
        let DriverError::KernelTimeout { core, cycles, .. } = &err else {
            panic!("{} seed 18: expected a kernel timeout, got {err}", chip.name())
        };
        assert_eq!(Some(*core), dev.chip().worker(1, 1));
        assert!(*cycles >= 6_000_000 && dev.now() < 10_000_000, "seed 18: {cycles} at {}", dev.now());
    }

    fn an_unknown_command_is_reported_with_its_bytes(chip) {
        let mut dev = booted(chip, 12, |_| {});
        let mut chunk = vec![0u8; 64];
        chunk[0] = 0x7f;
        chunk[1] = 0xee;
        let mut cq = dev.cq(0).unwrap();
        cq.enqueue_raw(&chunk, false).unwrap();
        let err = cq.finish().unwrap_err();
        let DriverError::Device { core, fault: DeviceFault::BadCommand(record), dump } = &err else {
            panic!("seed 12: expected a device error record, got {err}")
        };
        assert_eq!(*core, dev.chip().prefetcher(0));
        assert_eq!(record.error(), Some(DeviceError::UnknownCommand), "{record}");
        assert_eq!(&record.bytes[..2], &[0x7f, 0xee], "{record}");
        assert!(dump.cores.iter().any(|c| c.waypoint == waypoint::BAD_CMD));
    }

    fn a_wait_on_a_word_past_l1_is_reported_not_read(chip) {
        // helper-61: the dispatcher read any address a WAIT named (address 0
        // made a null pointer of it). Past L1 it now reports the command.
        let mut dev = booted(chip, 14, |_| {});
        let past_l1 = chip.board.arch().params().l1_size;
        let mut chunk = vec![0u8; 64];
        let mut enc = Encoder::new(&mut chunk);
        enc.relay_inline(true, |w| w.wait(WaitFlags::WAIT_MEMORY, past_l1, 1)).unwrap();
        let len = enc.len();
        chunk.truncate(len);
        let mut cq = dev.cq(0).unwrap();
        cq.enqueue_raw(&chunk, false).unwrap();
        let err = cq.finish().unwrap_err();
        let DriverError::Device { core, fault: DeviceFault::BadCommand(record), .. } = &err else {
            panic!("seed 14: expected a device error record, got {err}")
        };
        assert_eq!(*core, dev.chip().dispatcher(0));
        assert_eq!(record.error(), Some(DeviceError::BadSize), "{record}");
        assert_eq!(record.value, past_l1, "{record}");
    }

    /// A dispatcher's size error names its command and the buffer: a
    /// WRITE_HOST record larger than the whole completion queue.
    fn an_oversize_completion_record_names_its_command_and_the_queue(chip) {
        use cqlab_abi::completion::record_size;
        let mut dev = booted(chip, 14, |_| {});
        let length = 1 << 20;
        let mut chunk = vec![0u8; 64];
        let mut enc = Encoder::new(&mut chunk);
        enc.relay_inline(true, |w| w.write_host_header(5, length)).unwrap();
        let len = enc.len();
        chunk.truncate(len);
        let mut cq = dev.cq(0).unwrap();
        cq.enqueue_raw(&chunk, false).unwrap();
        let err = cq.finish().unwrap_err();
        let DriverError::Device { core, fault: DeviceFault::BadCommand(record), .. } = &err else {
            panic!("{} seed 14: expected a device error record, got {err}", chip.name())
        };
        let dispatcher = dev.chip().dispatcher(0);
        assert_eq!((*core, record.error()), (dispatcher, Some(DeviceError::TooLarge)), "seed 14: {err}");
        let head = format!(
            "device error on CQ0 dispatcher {dispatcher}: larger than the buffer it must pass through (CQ0 WRITE_HOST \
             command; a {}-byte completion record exceeds the {}-byte completion queue)",
            record_size(length),
            dev.config().completion_size
        );
        assert!(err.to_string().starts_with(&head), "seed 14: {err}\nexpected it to start with\n{head}");
    }

    fn a_staged_piece_outside_the_staging_arena_is_reported_not_read(chip) {
        // helper-86's audit: a gathered fetch entry whose source word is
        // 0xfffffff0 units (64 GiB into host memory) and whose split stages
        // 4 units, forged through the BAR, stalled the host until its
        // timeout. The prefetcher now refuses the source before reading it.
        let mut dev = booted(chip, 16, |_| {});
        let prefetcher = dev.chip().prefetcher(0);
        let (source, split) = (0xffff_fff0u32, Split::new(0, 64).unwrap().raw());
        assert_eq!(split, 0x40000);
        let words = [source.to_le_bytes(), split.to_le_bytes()].concat();
        dev.backend().write(NocAddr::unicast(prefetcher, source_addr(0) as u64), &words).unwrap();
        let entry = FetchEntry::staged(64).unwrap().raw();
        assert_eq!(entry, 0x4000_0004);
        dev.backend().write_u32(NocAddr::unicast(prefetcher, slot_addr(0) as u64), entry).unwrap();
        for _ in 0..10 {
            dev.backend().poll().unwrap(); // let the prefetcher see it before the host reuses slot 0
        }
        let err = dev.cq(0).unwrap().finish().unwrap_err();
        let DriverError::Device { core, fault: DeviceFault::BadCommand(record), .. } = &err else {
            panic!("{} seed 16: expected a device error record, got {err}", chip.name())
        };
        assert_eq!(*core, prefetcher, "seed 16: {err}");
        assert_eq!((record.error(), record.addr, record.value), (Some(DeviceError::BadSource), source_addr(0), source));
        assert_eq!(&record.bytes[..8], &words[..], "seed 16: the offending words: {record}");
    }

    fn commands_naming_no_memory_of_the_noc_map_are_reported_not_issued(chip) {
        // helper-86's audit: a RELAY_LINEAR source, a unicast WRITE_LINEAR
        // destination and a unicast GO destination were issued unchecked
        // (a hang on a card). Each is now refused with the command's bytes.
        let l1 = chip.board.arch().params().l1_size as u64;
        let nowhere = NocAddr::unicast(Coord::new(63, 63), 0x1000);
        type Forge = fn(&mut Encoder<'_>, NocAddr) -> Result<(), cqlab_abi::encode::EncodeError>;
        let relay: Forge = |e, a| e.relay_linear(a, 64);
        let write: Forge = |e, a| e.relay_inline(true, |w| w.write_linear(a, &[7; 32]));
        let go: Forge = |e, a| e.relay_inline(true, |w| w.go(1, a));
        for k in 0..4 {
            let mut dev = booted(chip, 17, |_| {});
            // 32 bytes from 16 before the end of a compute core's L1.
            let past_l1 = NocAddr::unicast(dev.chip().worker(0, 0).unwrap(), l1 - 16);
            let (forge, at, want, on_prefetcher) = [
                (relay, nowhere, DeviceError::BadSource, true),
                (write, nowhere, DeviceError::BadDestination, false),
                (go, nowhere, DeviceError::BadDestination, false),
                (write, past_l1, DeviceError::BadDestination, false),
            ][k];
            let mut chunk = vec![0u8; 256];
            let mut enc = Encoder::new(&mut chunk);
            forge(&mut enc, at).unwrap();
            let len = enc.len();
            let mut cq = dev.cq(0).unwrap();
            cq.enqueue_raw(&chunk[..len], false).unwrap();
            let err = cq.finish().unwrap_err();
            let DriverError::Device { core, fault: DeviceFault::BadCommand(record), .. } = &err else {
                panic!("{} seed 17 case {k}: expected a device error record, got {err}", chip.name())
            };
            let named = if on_prefetcher { dev.chip().prefetcher(0) } else { dev.chip().dispatcher(0) };
            assert_eq!((*core, record.error()), (named, Some(want)), "seed 17 case {k}: {err}");
            assert_eq!(record.value, (at.0 >> 32) as u32, "seed 17 case {k}: {record}");
            assert_eq!(&record.bytes[8..16], &at.0.to_le_bytes(), "seed 17 case {k}: the address in the command's bytes");
        }
    }

    fn zero_size_fetch_entries_are_rejected_on_both_sides(chip) {
        let mut dev = booted(chip, 13, |_| {});
        assert!(matches!(dev.cq(0).unwrap().enqueue_raw(&[], false), Err(DriverError::Invalid(_))));
        // Forge one past the driver, straight through the BAR.
        let prefetcher = dev.chip().prefetcher(1);
        dev.backend().write_u32(NocAddr::unicast(prefetcher, slot_addr(0) as u64), STALL_FLAG).unwrap();
        for _ in 0..10 {
            dev.backend().poll().unwrap(); // let the prefetcher see it before the host reuses slot 0
        }
        let err = dev.cq(1).unwrap().finish().unwrap_err();
        assert!(err.to_string().contains("zero-size fetch-queue entry"), "seed 13: {err}");
    }

    /// A fetch entry larger than the buffers it must pass through is a
    /// device error naming the prefetcher's role, its fetch slot and the
    /// limit it exceeds, with the hang dump taken for it (helper-86's
    /// audit: "device error on core (18,26): larger than the buffer it must
    /// pass through: value 0x3fffffff at L1 0x15c0", and the dump lost).
    fn an_oversize_fetch_entry_names_its_queue_slot_and_limit_with_its_dump(chip) {
        use cqlab_abi::memory_map::MAX_CHUNK;
        let mut dev = booted(chip, 13, |_| {});
        let prefetcher = dev.chip().prefetcher(1);
        dev.backend().write_u32(NocAddr::unicast(prefetcher, slot_addr(0) as u64), 0x3fff_ffff).unwrap();
        let err = dev.cq(1).unwrap().finish().unwrap_err();
        let DriverError::Device { core, fault: DeviceFault::BadCommand(report), dump } = &err else {
            panic!("{} seed 13: expected a device error record, got {err}", chip.name())
        };
        assert_eq!((*core, report.error()), (prefetcher, Some(DeviceError::TooLarge)), "seed 13: {err}");
        let text = err.to_string();
        let asked = 0x3fff_ffffu64 * 16;
        let head = format!(
            "device error on CQ1 prefetcher {prefetcher}: larger than the buffer it must pass through (CQ1 fetch \
             slot 0, after 0 entries fetched; a {asked}-byte chunk exceeds the {MAX_CHUNK}-byte chunk buffer): \
             value 0x3fffffff at L1 {:#x}",
            slot_addr(0)
        );
        assert!(text.starts_with(&head), "seed 13:\n{text}\nexpected it to start with\n{head}");
        // The dump follows, as a timeout's does.
        assert!(text.contains(&format!("\n{dump}")) && text.contains("hang dump at device cycle"), "seed 13: {text}");
        let json = serde_json::to_value(dump.as_ref()).unwrap();
        let record = json["cores"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["role"] == "CQ1 prefetcher"))
            .map(|c| c["error"].clone())
            .unwrap_or_else(|| panic!("seed 13: {json}"));
        assert_eq!(record["code"], "too-large", "seed 13: {record}");
        assert_eq!((record["context"]["cq"].as_u64(), record["context"]["fetch_slot"].as_u64()), (Some(1), Some(0)));
        let over = &record["context"]["over"];
        assert_eq!((over["asked"].as_u64(), over["limit"].as_u64()), (Some(asked), Some(MAX_CHUNK as u64)), "{over}");
        assert_eq!(over["limit_of"], "chunk buffer", "seed 13: {over}");
    }

    /// A paged write sends whole pages, one chunk at least: a page larger
    /// than a chunk carries is refused naming the page (helper-66: "36928-byte
    /// chunk exceeds the issue queue or chunk area"), the largest works.
    fn a_page_larger_than_a_chunk_carries_is_refused_naming_the_page(chip) {
        let mut dev = booted(chip, 15, |_| {});
        let room = cqlab_abi::size::paged_write_room(cqlab_abi::memory_map::MAX_CHUNK as usize) as u32;
        let largest = room & !(cqlab_abi::PCIE_ALIGNMENT as u32 - 1);
        let too_large = largest + cqlab_abi::PCIE_ALIGNMENT as u32;
        let buf = dev.alloc_dram(2 * too_large, too_large).unwrap();
        let err = dev.cq(0).unwrap().write_buffer(&buf, 0, &vec![7; too_large as usize]).unwrap_err();
        let says = format!("a {too_large}-byte page is larger than a paged write carries");
        assert!(matches!(&err, DriverError::Invalid(m) if m.contains(&says)), "{err}");
        let buf = dev.alloc_dram(2 * largest, largest).unwrap();
        let data: Vec<u8> = (0..2 * largest).map(|i| (i % 251) as u8).collect();
        dev.cq(0).unwrap().write_buffer(&buf, 0, &data).unwrap();
        assert_eq!(dev.cq(0).unwrap().read_buffer(&buf, 0, 2 * largest).unwrap(), data);
    }

    fn a_completion_record_nobody_waits_for_is_a_device_error(chip) {
        // helper-57: a record with a tag no read had was stored unseen, and
        // the read it displaced waited out as a "deadlock" (exit 3). Forged
        // here: a read-back record of tag 999 and an event 77, ahead of a
        // real event the host then waits for.
        type Forge = fn(&mut cqlab_abi::encode::DispatchWriter<'_>) -> Result<(), cqlab_abi::encode::EncodeError>;
        let forged: [Forge; 2] = [
            |w| w.write_host(999, &[7; 32]),
            |w| w.write_event(&cqlab_abi::completion::EventRecord { event_id: 77, cq: 1, cycle: 0 }),
        ];
        for (k, forge) in forged.iter().enumerate() {
            let mut dev = booted(chip, 14, |_| {});
            let mut chunk = vec![0u8; 256];
            let mut enc = Encoder::new(&mut chunk);
            enc.relay_inline(true, forge).unwrap();
            let len = enc.len();
            let mut cq = dev.cq(1).unwrap();
            cq.enqueue_raw(&chunk[..len], false).unwrap();
            let event = cq.record_event().unwrap();
            let err = dev.event_synchronize(event).unwrap_err();
            let DriverError::Device { fault: DeviceFault::UnexpectedCompletion { cq: 1, found, expected, .. }, .. } =
                &err
            else {
                panic!("{} forged record {k}: expected an unexpected completion, got {err}", chip.name())
            };
            let want = ["read-back tag 999 of 32 bytes", "event 77"][k];
            assert_eq!((found.as_str(), expected.as_str()), (want, "event 1"), "{}: {err}", chip.name());
        }
    }
}

#[test]
fn opening_missing_hardware_or_unknown_devices_is_a_clear_error() {
    use cqlab_driver::{Device, DeviceConfig};
    let err = Device::open("/dev/tenstorrent/97", DeviceConfig::default()).err().unwrap().to_string();
    assert!(err.contains("no Tenstorrent device/driver present") && err.contains("/dev/tenstorrent/97"), "{err}");
    let err = Device::open("gpu0", DeviceConfig::default()).err().unwrap().to_string();
    assert!(err.contains("unknown device \"gpu0\""), "{err}");
    let err = Device::open("embedded:seed=x", DeviceConfig::default()).err().unwrap().to_string();
    assert!(err.contains("seed \"x\" is not a number"), "{err}");
}

on_both_chips! {
    /// A core that halts while its tile boots (here NCRISC's image with an
    /// illegal instruction after its id: it passes the image checks) ends
    /// the boot at once with the core and its halt named, not after the
    /// stall timeout waiting for an alive record that cannot come.
    fn a_core_that_crashes_while_booting_is_named_at_once(chip) {
        use cqlab_abi::arch::tensix::Processor;
        use cqlab_abi::boot::{IMAGE_ID_OFFSET, IMAGE_ID_WORDS};
        use cqlab_abi::firmware::FirmwareId;
        let name = FirmwareId::worker(Processor::Ncrisc).name();
        let root = firmware_with_illegal_instruction(chip, "boot", name, IMAGE_ID_OFFSET + 4 * IMAGE_ID_WORDS as u32);
        let mut cfg = cqlab_tests::config(chip);
        cfg.firmware_dir = root.clone();
        let mut dev = cqlab_driver::Device::embedded(chip.sim(3), cfg.clone()).unwrap();
        let err = dev.boot().unwrap_err();
        let DriverError::Device { fault: DeviceFault::BootHalted { processor, reason }, .. } = &err else {
            panic!("{}: expected a halt at boot, got {err}", chip.name())
        };
        assert_eq!(*processor, Processor::Ncrisc, "{err}");
        assert!(reason.contains("illegal instruction"), "{err}");
        assert!(dev.now() < cfg.stall_timeout_cycles / 10, "{}: named after {} cycles", chip.name(), dev.now());
        let _ = std::fs::remove_dir_all(&root);
    }

    /// A subordinate core that hangs at boot (TRISC1 spinning after its
    /// image id, before it announces itself) ends the boot's chain, with its
    /// PC, where the dump hid it: boot zeroes the mailboxes, and a
    /// subordinate at waypoint 0 was taken for idle (helper-86's audit:
    /// every worker at SUBA and no subordinate line).
    fn a_subordinate_hung_at_boot_ends_the_chain(chip) {
        use cqlab_abi::arch::tensix::Processor;
        use cqlab_abi::boot::{IMAGE_ID_OFFSET, IMAGE_ID_WORDS};
        use cqlab_abi::firmware::FirmwareId;
        let name = FirmwareId::worker(Processor::Trisc1).name();
        // `jal x0, 0`: a jump to itself.
        let spin = 0x0000_006f;
        let root = firmware_with_word(chip, "sub-hang", name, IMAGE_ID_OFFSET + 4 * IMAGE_ID_WORDS as u32, spin);
        let mut cfg = cqlab_tests::config(chip);
        cfg.firmware_dir = root.clone();
        cfg.stall_timeout_cycles = 2_000_000;
        let mut dev = cqlab_driver::Device::embedded(chip.sim(3), cfg).unwrap();
        let err = dev.boot().unwrap_err();
        let DriverError::Timeout { wait: Wait::Alive { core, .. }, dump, .. } = &err else {
            panic!("{} seed 3: expected a boot timeout, got {err}", chip.name())
        };
        let chain = dump.chain_text().join(" -> ");
        assert_eq!(
            dump.chain.last(),
            Some(&Link::Subordinate { core: *core, processor: Processor::Trisc1 }),
            "{} seed 3: {chain}",
            chip.name()
        );
        let last = dump.chain_text().pop().unwrap();
        assert!(last.starts_with("trisc1 ") && last.contains("(not booted: no alive record) pc=0x"), "{last}");
        assert!(chain.contains(&format!("{core} SUBA")), "{} seed 3: {chain}", chip.name());
        // The text dump lists it under its tile.
        let text = err.to_string();
        assert!(text.contains("\n    trisc1 ") && text.contains("(not booted: no alive record)"), "{text}");
        let _ = std::fs::remove_dir_all(&root);
    }

    /// A kernel that crashes (an illegal instruction at its entry) is a
    /// device error naming the core at the next progress check, not a hang
    /// after the stall timeout (helper-25: exit 3 after 200 M cycles).
    fn a_kernel_that_crashes_is_a_device_error_at_once(chip) {
        use cqlab_abi::arch::tensix::Processor;
        let root = firmware_with_illegal_instruction(chip, "kernel", "noop", 0);
        let mut cfg = cqlab_tests::config(chip);
        cfg.firmware_dir = root.clone();
        cfg.worker_kernel = "noop".into();
        let mut dev = cqlab_driver::Device::embedded(chip.sim(3), cfg.clone()).unwrap();
        dev.boot().unwrap();
        let err = dev
            .cq(0)
            .and_then(|mut cq| {
                cq.launch(cqlab_driver::CoreRange::single(0, 0), &[])?;
                cq.finish()
            })
            .unwrap_err();
        let DriverError::Device { fault: DeviceFault::Crashed { processor, reason }, core, .. } = &err else {
            panic!("{}: expected a crashed core, got {err}", chip.name())
        };
        assert_eq!((*processor, Some(*core)), (Processor::Brisc, dev.chip().worker(0, 0)), "{err}");
        assert!(reason.contains("illegal instruction"), "{err}");
        // The error names the core's role and carries its hang dump (it was
        // one line, "device error on core (18,18): ...", the dump lost).
        let text = err.to_string();
        assert!(text.starts_with(&format!("device error on worker (0,0) {core}: Brisc halted: ")), "{text}");
        assert!(text.contains("\nhang dump at device cycle") && text.contains("wait-for chain"), "{text}");
        assert!(dev.now() < cfg.stall_timeout_cycles / 10, "{}: named after {} cycles", chip.name(), dev.now());
        let _ = std::fs::remove_dir_all(&root);
    }
}

/// A copy of the firmware root of `chip` (under a directory named after
/// `why`) whose image `name` holds an illegal instruction `offset` bytes
/// after its entry.
fn firmware_with_illegal_instruction(
    chip: &cqlab_tests::TestChip,
    why: &str,
    name: &str,
    offset: u32,
) -> std::path::PathBuf {
    firmware_with_word(chip, why, name, offset, 0)
}

/// [`firmware_with_illegal_instruction`] with instruction `word` instead.
fn firmware_with_word(
    chip: &cqlab_tests::TestChip,
    why: &str,
    name: &str,
    offset: u32,
    word: u32,
) -> std::path::PathBuf {
    let root = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("crash-fw-{why}-{}", chip.name()));
    let dir = cqlab_tests::copy_firmware(chip, &root);
    let mut bytes = std::fs::read(dir.join(name)).unwrap();
    let at = {
        let elf = cqlab_abi::elf::Rv32Executable::parse(&bytes).unwrap();
        let seg = elf.segments().find(|s| s.addr == elf.entry()).expect("the entry's segment");
        seg.data.as_ptr() as usize - bytes.as_ptr() as usize + offset as usize
    };
    bytes[at..at + 4].copy_from_slice(&word.to_le_bytes());
    std::fs::write(dir.join(name), &bytes).unwrap();
    root
}

/// A chunk of `n` DELAYs of `cycles` each, relayed to the dispatcher at once.
fn delays(n: usize, cycles: u32) -> Vec<u8> {
    let mut chunk = vec![0u8; 16 * (n + 2)];
    let mut enc = Encoder::new(&mut chunk);
    enc.relay_inline(true, |w| (0..n).try_for_each(|_| w.delay(cycles))).unwrap();
    let len = enc.len();
    chunk.truncate(len);
    chunk
}

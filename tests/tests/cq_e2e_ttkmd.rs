//! The end-to-end command-queue tests (`cqlab_tests::e2e`) through the tt-kmd backend against
//! the simulator: TLB windows mmapped onto the simulator's L1 and registers, sysmem pinned,
//! doorbells as volatile stores, the chip running on its own thread. Not deterministic: host
//! timing is whatever the host does.

use cqlab_tests::{on_both_chips, Kind};

macro_rules! on_ttkmd_sim {
    ($($name:ident),* $(,)?) => {
        on_both_chips! {
            $(fn $name(chip) {
                cqlab_tests::e2e::$name(Kind::TtKmdSim, chip)
            })*
        }
    };
}

cqlab_tests::every_e2e_test!(on_ttkmd_sim);

/// A card whose pinned buffer ends at the top of a Blackhole's 64 GiB host-memory range (the
/// simulated tt-kmd pins at the top of its sysmem): the last queue's staging arena would end
/// 16 bytes past what a fetch slot's source word names (`staged_end_limit`), so that queue
/// stages nothing. The driver says so through `DeviceConfig::notes`, naming the limit and the
/// cost, and gives that queue's prefetcher no arena (the others keep theirs); the queues work.
/// Staging used to switch off here without a word.
#[test]
fn a_pinned_buffer_past_the_chips_reach_turns_staging_off_and_says_so() {
    use cqlab_abi::mailbox::{CqConfig, CQ_CONFIG};
    use cqlab_abi::noc::NocAddr;
    use cqlab_driver::notes::{Note, NoteSink};
    use std::sync::{Arc, Mutex};
    let chip = &cqlab_tests::BLACKHOLE;
    let top = cqlab_abi::arch::Arch::Blackhole.params().bar.host_mem_size;
    let limit = cqlab_abi::fetch_queue::staged_end_limit(top);
    let sim = cqlab_tests::SimThread::start_with_sysmem("staging-off", 7, chip, top as usize);
    let notes = Arc::new(Mutex::new(Vec::new()));
    let mut cfg = cqlab_tests::config(chip);
    cfg.notes = Some(NoteSink::new({
        let notes = notes.clone();
        move |n: &Note| notes.lock().unwrap().push(n.clone())
    }));
    let spec = format!("ttkmd-sim:{}", sim.dir.display());
    let mut dev = cqlab_driver::Device::open(&spec, cfg).unwrap_or_else(|e| panic!("opening {spec}: {e}"));
    dev.boot().unwrap_or_else(|e| panic!("boot failed on {spec}: {e}"));
    let cqs = dev.num_cqs();
    let said = notes.lock().unwrap().clone();
    let [Note::StagingUnreachable { queues, end, limit: said_limit, pinned_at, forwarded, .. }] = &said[..] else {
        panic!("expected one note that staging is off, got {said:?}")
    };
    // The last queue's arena ends at the top; the ones before end where the next begins.
    assert!(queues.contains(&(cqs - 1)), "queues {queues:?}");
    assert_eq!((*said_limit, *forwarded), (limit, false), "Blackhole's limit is the source word's");
    assert!(*end > limit && *end <= top && *pinned_at < top, "end {end:#x}, pinned at {pinned_at:#x}");
    let text = said[0].to_string();
    assert!(text.contains("staging is off for queue") && text.contains("copied into the issue queue"), "{text}");
    for q in 0..cqs {
        let pf = dev.chip().prefetcher(q);
        let at = NocAddr::unicast(pf, (CQ_CONFIG as usize + std::mem::offset_of!(CqConfig, staged_units)) as u64);
        let units = dev.backend().read_u32(at).unwrap();
        assert_eq!(units == 0, queues.contains(&q), "queue {q}'s prefetcher was given {units} units of arena");
    }
    cqlab_tests::reference_program(&mut dev, "staging off");
}

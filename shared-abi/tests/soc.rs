//! The chip descriptions: descriptor files, boards, harvesting, translated
//! coordinates, dispatch placement, DRAM banks, routing.

use cqlab_abi::arch::{Arch, Noc, BLACKHOLE, WORMHOLE};
use cqlab_abi::noc::{Coord, NocAddr};
use cqlab_abi::soc::{
    hop_count, in_rect, route, Board, ChipLayout, EthHarvest, HarvestError, HarvestedUnit, Harvesting, LayoutError,
    SocDescriptor, SocError, TileKind,
};

fn c(x: u8, y: u8) -> Coord {
    Coord::new(x, y)
}

fn layout(board: Board, h: &str) -> ChipLayout {
    ChipLayout::new(board, h.parse().unwrap()).unwrap()
}

fn count(l: &ChipLayout, pred: impl Fn(TileKind) -> bool) -> usize {
    l.tiles().iter().filter(|t| pred(t.kind)).count()
}

// --- Descriptor files ----------------------------------------------------------

#[test]
fn descriptors_parse_and_agree_with_arch() {
    for (arch, params) in [(Arch::Wormhole, &WORMHOLE), (Arch::Blackhole, &BLACKHOLE)] {
        let d = SocDescriptor::builtin(arch);
        assert_eq!(d.arch, arch);
        assert_eq!(d.grid, params.grid);
        assert_eq!(d.worker_l1_size, params.l1_size);
        assert_eq!(d.eth_l1_size, params.eth_l1_size);
        let w = d.grid.x;
        assert_eq!(d.noc0_x_to_noc1_x, (0..w).map(|x| w - 1 - x).collect::<Vec<_>>());
    }
    let wh = SocDescriptor::builtin(Arch::Wormhole);
    assert_eq!((wh.tensix.len(), wh.dram.len(), wh.eth.len(), wh.dram_views.len()), (80, 6, 16, 12));
    assert_eq!((wh.dram_bank_size, wh.dram_view_size), (2 << 30, Some(1 << 30)));
    let bh = SocDescriptor::builtin(Arch::Blackhole);
    assert_eq!((bh.tensix.len(), bh.dram.len(), bh.eth.len(), bh.dram_views.len()), (140, 8, 14, 8));
    assert_eq!((bh.dram_bank_size, bh.dram_view_size), (4 << 30, Some(0xFF00_0000)));
    assert_eq!((bh.security.clone(), bh.l2cpu.len(), bh.pcie.clone()), (vec![c(8, 2)], 4, vec![c(2, 0), c(11, 0)]));
}

#[test]
fn bad_descriptors_are_refused_clearly() {
    let wh = SocDescriptor::yaml(Arch::Wormhole);
    let cases = [
        (wh.replace("arch_name: WORMHOLE_B0", "arch_name: GRAYSKULL"), "arch_name \"GRAYSKULL\""),
        (wh.replace("[0-10]", "[0_10]"), "arc[0] = \"0_10\" is not an \"x-y\" coordinate"),
        (wh.replace("[0-10]", "[0-12]"), "arc[0] = (0,12) lies outside the 10x12 grid"),
        (wh.replace("[0-10]", "[0-2]"), "tile (0,2) is listed under both arc and router_only"),
        (wh.replace("[0-2, 0-4, 0-8, 0-9]", "[0-2, 0-4, 0-8]"), "no list names tile (0,9)"),
        (wh.replace("[9, 8, 7, 6, 5, 4, 3, 2, 1, 0]", "[9, 9, 7, 6, 5, 4, 3, 2, 1, 0]"), "noc0_x_to_noc1_x"),
        (
            wh.replace(
                "{channel: 5, eth_endpoint: [1, 1], worker_endpoint: [0, 0]",
                "{channel: 6, eth_endpoint: [1, 1], worker_endpoint: [0, 0]",
            ),
            "channel 6 does not exist",
        ),
        (wh.replace("worker_l1_size:", "worker_l1_sizes:"), "not a SoC descriptor"),
    ];
    for (text, want) in cases {
        let e = SocDescriptor::parse(&text, "test.yaml").unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with("test.yaml: ") && msg.contains(want), "{msg:?} should mention {want:?}");
    }
    assert!(matches!(SocDescriptor::parse("grid: 3", "x.yaml"), Err(SocError::Yaml { .. })));
}

// --- Boards and their default layouts ------------------------------------------

#[test]
fn boards_parse_and_print() {
    for b in Board::ALL {
        assert_eq!(b.name().parse::<Board>().unwrap(), b);
        assert_eq!(Board::from_board_id((b.upi() as u64) << 36), Some(b));
        // The card's own name, as the docs write it, is the same board; it
        // prints by its full name.
        assert_eq!(b.short_name().parse::<Board>().unwrap(), b);
        assert_eq!(b.short_name().parse::<Board>().unwrap().to_string(), b.name());
    }
    assert_eq!("n300".parse::<Board>(), Ok(Board::WormholeN300));
    assert_eq!("p100a".parse::<Board>(), Ok(Board::BlackholeP100a));
    let e = "wormhole-n200".parse::<Board>().unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown chip `wormhole-n200`; expected one of: wormhole-n150 (n150), wormhole-n300 (n300), \
         blackhole-p100a (p100a), blackhole-p150a (p150a)"
    );
    // Only a whole name: no prefix, no other case, no arch alone.
    for bad in ["n30", "N300", "wormhole", "p150", "blackhole-p150"] {
        assert!(bad.parse::<Board>().is_err(), "{bad}");
    }
}

#[test]
fn every_board_default_layout() {
    // (board, harvesting text, tensix grid, workers, harvested Tensix, DRAM
    // banks (tt-metal), Eth present, PCIe tile)
    let expect = [
        (Board::WormholeN150, "rows=8", (8, 9), 72, 8, 12, 16, c(0, 3)),
        (Board::WormholeN300, "rows=1,8", (8, 8), 64, 16, 12, 16, c(0, 3)),
        (Board::BlackholeP100a, "cols=7,10,dram=3,eth=all", (12, 10), 120, 20, 7, 0, c(2, 0)),
        (Board::BlackholeP150a, "cols=7,10,eth=5,8", (12, 10), 120, 20, 8, 12, c(2, 0)),
    ];
    for (board, h, grid, workers, harvested, banks, eth, pcie) in expect {
        let l = ChipLayout::for_board(board).unwrap();
        assert_eq!(l.harvesting().to_string(), h, "{board}");
        assert_eq!((l.tensix_grid().x, l.tensix_grid().y), grid, "{board}");
        assert_eq!(l.workers().len(), workers, "{board}");
        assert_eq!(count(&l, |k| k == TileKind::Tensix), workers, "{board}");
        assert_eq!(count(&l, |k| k == TileKind::Harvested(HarvestedUnit::Tensix)), harvested, "{board}");
        assert_eq!(l.dram_banks().len(), banks, "{board}");
        assert_eq!(count(&l, |k| matches!(k, TileKind::Eth { .. })), eth, "{board}");
        assert_eq!(l.pcie_tile(), pcie);
        assert_eq!(l.tile(pcie).unwrap().kind, TileKind::Pcie);
        assert_eq!(count(&l, |k| k == TileKind::Pcie), 1);
        assert_eq!(count(&l, |k| k == TileKind::Arc), 1);
        assert_eq!(l.tiles().len(), l.grid().x as usize * l.grid().y as usize);
    }
    let wh = ChipLayout::for_board(Board::WormholeN150).unwrap();
    assert_eq!(
        (wh.arc_tile(), wh.l1_size(), wh.clock_hz(), wh.max_packet()),
        (c(0, 10), 1464 << 10, 1_000_000_000, 8192)
    );
    let bh = ChipLayout::for_board(Board::BlackholeP100a).unwrap();
    assert_eq!(
        (bh.arc_tile(), bh.l1_size(), bh.clock_hz(), bh.max_packet()),
        (c(8, 0), 1536 << 10, 1_350_000_000, 16384)
    );
    assert_eq!(bh.tile(c(11, 0)).unwrap().kind, TileKind::Harvested(HarvestedUnit::Pcie));
    assert_eq!(bh.tile(c(0, 5)).unwrap().kind, TileKind::Harvested(HarvestedUnit::Dram { bank: 3, port: 0 }));
    assert_eq!(count(&bh, |k| matches!(k, TileKind::Dram { .. })), 21);
    assert_eq!(bh.tile(c(8, 2)).unwrap().kind, TileKind::Security);
    assert_eq!(bh.tile(c(8, 9)).unwrap().kind, TileKind::L2Cpu);
}

// --- Harvesting -----------------------------------------------------------------

#[test]
fn harvest_option_or_board_default() {
    assert_eq!(Board::BlackholeP100a.harvesting(None).unwrap().to_string(), "cols=7,10,dram=3,eth=all");
    assert_eq!(Board::BlackholeP100a.harvesting(Some("cols=7,10")).unwrap().to_string(), "cols=7,10");
    assert_eq!(Board::WormholeN150.harvesting(Some("none")).unwrap(), Harvesting::none());
    assert!(Board::WormholeN150.harvesting(Some("rows")).is_err());
    let full = ChipLayout::new(Board::WormholeN150, Harvesting::none()).unwrap();
    assert_eq!((full.tensix_grid().x, full.tensix_grid().y), (8, 10));
}

#[test]
fn harvesting_text_round_trips() {
    for text in ["none", "rows=1,8", "cols=7,10,dram=3,eth=all", "cols=7,10,eth=5,8", "cols=16"] {
        assert_eq!(text.parse::<Harvesting>().unwrap().to_string(), text);
    }
    let h: Harvesting = " cols=10,7 , dram=3 ".parse().unwrap();
    assert_eq!((h.tensix_cols(), h.dram_banks()), (&[7, 10][..], &[3][..]));
    assert_eq!("eth=all".parse::<Harvesting>().unwrap().eth(), &EthHarvest::All);
}

#[test]
fn bad_harvesting_is_refused_clearly() {
    let parse_errors = [
        ("", "empty harvesting value; expected e.g. `rows=1,8`, `cols=7,10,dram=3,eth=all` or `none`"),
        ("1,8", "`1` comes before any key; expected `rows=`, `cols=`, `dram=` or `eth=` first (e.g. `rows=1,8`)"),
        ("row=1", "unknown harvesting key `row`; the keys are rows, cols, dram and eth"),
        ("rows=1,rows=2", "`rows=` is given twice"),
        ("rows=", "`rows=` needs at least one value"),
        ("rows=1,x", "`x` in `rows=` is not a line or bank number (0..=255)"),
        ("rows=1,1", "`rows=` lists 1 twice"),
        ("rows=all", "`all` is only allowed for eth="),
    ];
    for (text, want) in parse_errors {
        assert_eq!(text.parse::<Harvesting>().unwrap_err().to_string(), want, "{text:?}");
    }
    let layout_errors = [
        (Board::WormholeN150, "cols=7", "wormhole-n150: wormhole_b0 harvests Tensix rows, not cols: use `rows=`"),
        (Board::BlackholeP150a, "rows=3", "blackhole-p150a: blackhole harvests Tensix cols, not rows: use `cols=`"),
        (
            Board::WormholeN150,
            "rows=6",
            "wormhole-n150: wormhole_b0 has no Tensix row 6; the Tensix rows are 1, 2, 3, 4, 5, 7, 8, 9, 10, 11",
        ),
        (
            Board::BlackholeP100a,
            "cols=8",
            "blackhole-p100a: blackhole has no Tensix column 8; the Tensix columns are 1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13, 14, 15, 16",
        ),
        (
            Board::WormholeN300,
            "rows=1,2,3,4,5,7,8,9,10,11",
            "wormhole-n300: harvesting all 10 Tensix rows of wormhole_b0 leaves no Tensix tile",
        ),
        (Board::WormholeN150, "rows=8,dram=1", "wormhole-n150: wormhole_b0 does not harvest DRAM banks"),
        (Board::WormholeN150, "rows=8,eth=1", "wormhole-n150: wormhole_b0 does not harvest Ethernet channels"),
        (Board::BlackholeP100a, "cols=7,dram=1,3", "blackhole-p100a: blackhole harvests at most 1 DRAM bank, 2 given"),
        (Board::BlackholeP100a, "cols=7,dram=8", "blackhole-p100a: blackhole has DRAM banks 0..8, bank 8 does not exist"),
        (
            Board::BlackholeP150a,
            "cols=7,eth=14",
            "blackhole-p150a: blackhole has Ethernet channels 0..14, channel 14 does not exist",
        ),
    ];
    for (board, text, want) in layout_errors {
        let h: Harvesting = text.parse().unwrap();
        let e = ChipLayout::new(board, h).unwrap_err();
        assert_eq!(e.to_string(), want, "{board} {text}");
        assert!(matches!(e, LayoutError::Harvest { .. }));
    }
    assert!(matches!("cols=7,7".parse::<Harvesting>(), Err(HarvestError::Duplicate { key: "cols", value: 7 })));
}

#[test]
fn harvesting_skips_rows_and_columns_everywhere() {
    for (board, h) in [
        (Board::WormholeN150, "rows=8"),
        (Board::WormholeN300, "rows=7,10"),
        (Board::BlackholeP100a, "cols=7,10,dram=3,eth=all"),
        (Board::BlackholeP150a, "cols=1,16,eth=5,8"),
    ] {
        let l = layout(board, h);
        let harvested = |co: Coord| l.harvesting().tensix_harvested(co);
        for cqs in 0..=3 {
            let p = l.placement(cqs).unwrap();
            for &core in p.compute.iter().chain(p.cqs.iter().flat_map(|q| [&q.prefetcher, &q.dispatcher])) {
                assert!(!harvested(core), "{board} {h}: placed on harvested {core}");
                assert_eq!(l.tile(core).unwrap().kind, TileKind::Tensix);
            }
        }
        assert!(l.workers().iter().all(|&w| !harvested(w)));
        let tensix = |t: &&cqlab_abi::soc::Tile| l.descriptor().tensix.contains(&t.noc0);
        for t in l.tiles().iter().filter(tensix).filter(|t| harvested(t.noc0)) {
            assert_eq!(t.kind, TileKind::Harvested(HarvestedUnit::Tensix));
            assert_eq!(t.logical, None);
            let e = l.worker(t.noc0).unwrap_err().to_string();
            assert!(e.contains("is a harvested Tensix tile, not a worker Tensix"), "{e}");
        }
        let all_compute = l.placement(0).unwrap().compute;
        assert_eq!(all_compute, l.workers());
        let s = l.dram_banks().iter().map(|b| b.channel).collect::<Vec<_>>();
        assert!(s.iter().all(|&ch| !l.harvesting().dram_harvested(ch as usize)));
        for noc in Noc::ALL {
            let everywhere = l.multicast_receivers(noc, c(0, 0), c(l.grid().x - 1, l.grid().y - 1));
            assert_eq!(everywhere.len(), l.workers().len(), "{board} {noc:?}");
        }
    }
    let n150 = layout(Board::WormholeN150, "rows=8");
    assert_eq!(
        n150.worker(c(1, 8)).unwrap_err().to_string(),
        "wormhole-n150 (rows=8): tile (1,8) is a harvested Tensix tile, not a worker Tensix"
    );
    assert_eq!(
        n150.worker(c(0, 3)).unwrap_err().to_string(),
        "wormhole-n150 (rows=8): tile (0,3) is the PCIe tile, not a worker Tensix"
    );
    assert_eq!(n150.worker(c(10, 3)).unwrap_err().to_string(), "wormhole-n150: tile (10,3) is outside the 10x12 grid");
    assert_eq!(n150.worker(c(1, 9)).unwrap().logical, Some(c(0, 6)));
}

// --- Translated coordinates -------------------------------------------------------

#[test]
fn wormhole_isa_translation_example() {
    // tt-isa WormholeB0/NoC/Coordinates.md: rows 7 and 10 harvested; Y 18->1,
    // 19->2, 20->3, 21->4, 22->5, 23->8, 24->9, 25->11, 26->7, 27->10;
    // 28..31->0. X 16->0, 17->5, 18..25->1,2,3,4,6,7,8,9, 26..31->0. 16 and
    // 17 in Y are the Ethernet rows 0 and 6.
    let l = layout(Board::WormholeN300, "rows=7,10");
    let (xs, ys) = l.translation_tables().unwrap();
    assert_eq!(&ys[16..], &[0, 6, 1, 2, 3, 4, 5, 8, 9, 11, 7, 10, 0, 0, 0, 0]);
    assert_eq!(&xs[16..], &[0, 5, 1, 2, 3, 4, 6, 7, 8, 9, 0, 0, 0, 0, 0, 0]);
    assert!((0..16).all(|i| xs[i] == i as u8 && ys[i] == i as u8));
    // Tensix: x = 18 + logical x; y = 18 + logical y, harvested rows last.
    assert_eq!(l.translated(c(1, 1)), Some(c(18, 18)));
    assert_eq!(l.translated(c(9, 11)), Some(c(25, 25)));
    assert_eq!(l.translated(c(6, 8)), Some(c(22, 23)));
    assert_eq!(l.translated(c(1, 7)), Some(c(18, 26)));
    assert_eq!(l.translated(c(1, 10)), Some(c(18, 27)));
    // Ethernet (tt-umd fill_eth_noc0_translated_mapping): channel 0 at (9,0)
    // -> (25,16); channel 8 at (9,6) -> (25,17); (1,0) -> (18,16).
    assert_eq!(l.translated(c(9, 0)), Some(c(25, 16)));
    assert_eq!(l.translated(c(9, 6)), Some(c(25, 17)));
    assert_eq!(l.translated(c(1, 0)), Some(c(18, 16)));
    // DRAM, PCIe, ARC, router: identity.
    for t in [c(0, 0), c(5, 3), c(0, 3), c(0, 10), c(0, 2)] {
        assert_eq!(l.translated(t), Some(t));
    }
    // The inverse through the hardware tables, for every tile, and identity
    // coordinates of Tensix tiles too.
    for t in l.tiles() {
        assert_eq!(l.from_translated(t.translated), Some(t.noc0));
    }
    assert_eq!(l.from_translated(c(3, 4)), Some(c(3, 4)));
    assert_eq!(l.from_translated(c(40, 4)), None);
}

#[test]
fn blackhole_translation_worked_example() {
    // Harvested x = 7 and 10 (both tt-umd example boards): translated 1..6 ->
    // NOC0 1..6; 7 -> 11; 10 -> 12; 11 -> 13; 12 -> 14; 13 -> 15; 14 -> 16;
    // 15 -> 10; 16 -> 7 (tt-umd blackhole_coordinate_manager.cpp
    // fill_tensix_noc0_translated_mapping: harvested columns at the top, in
    // die order, lowest die index highest).
    let l = ChipLayout::for_board(Board::BlackholeP150a).unwrap();
    let want = [
        (1, 1),
        (2, 2),
        (3, 3),
        (4, 4),
        (5, 5),
        (6, 6),
        (7, 11),
        (10, 12),
        (11, 13),
        (12, 14),
        (13, 15),
        (14, 16),
        (15, 10),
        (16, 7),
    ];
    for (tx, nx) in want {
        for y in 2..12 {
            assert_eq!(l.from_translated(c(tx, y)), Some(c(nx, y)), "translated ({tx},{y})");
            assert_eq!(l.translated(c(nx, y)), Some(c(tx, y)));
        }
    }
    // Dispatch column = logical x 11 = NOC0 x 16 = translated x 14, as
    // blackhole-py's prefetcher (14,2) and dispatcher (14,3).
    let p = l.placement(1).unwrap();
    assert_eq!(
        (l.translated(p.cqs[0].prefetcher), l.translated(p.cqs[0].dispatcher)),
        (Some(c(14, 2)), Some(c(14, 3)))
    );
    // PCIe in use -> (19,24); the other keeps its NOC0 coordinates.
    assert_eq!(l.translated(c(2, 0)), Some(c(19, 24)));
    assert_eq!(l.translated(c(11, 0)), Some(c(11, 0)));
    // Ethernet: unharvested channels (5 and 8 harvested) -> (20 + k, 25).
    assert_eq!(l.translated(c(1, 1)), Some(c(20, 25))); // channel 0
    assert_eq!(l.translated(c(4, 1)), Some(c(25, 25))); // channel 6, 6th unharvested
    assert_eq!(l.translated(c(10, 1)), Some(c(31, 25))); // channel 13
    assert_eq!(l.translated(c(14, 1)), Some(c(14, 1))); // channel 5, harvested
                                                        // Unharvested DRAM: bank b, port p -> (17 | 18, 12 + 3 (b mod 4) + p).
    assert_eq!(l.translated(c(0, 0)), Some(c(17, 12)));
    assert_eq!(l.translated(c(0, 11)), Some(c(17, 14)));
    assert_eq!(l.translated(c(0, 6)), Some(c(17, 23))); // bank 3 port 2
    assert_eq!(l.translated(c(9, 0)), Some(c(18, 12))); // bank 4 port 0
    assert_eq!(l.translated(c(9, 6)), Some(c(18, 23))); // bank 7 port 2
                                                        // ARC, L2CPU, security: identity.
    for t in [c(8, 0), c(8, 3), c(8, 2)] {
        assert_eq!(l.translated(t), Some(t));
    }
    for t in l.tiles() {
        assert_eq!(l.from_translated(t.translated), Some(t.noc0), "{}", t.noc0);
    }
    // Rows 0 and 1 and the DRAM columns also answer to NOC0 coordinates.
    assert_eq!(l.from_translated(c(1, 1)), Some(c(1, 1)));
    assert_eq!(l.from_translated(c(9, 5)), Some(c(9, 5)));
    assert_eq!(l.from_translated(c(40, 40)), None);
}

#[test]
fn blackhole_harvested_dram_bank_translation() {
    // p100a, bank 3 harvested (tt-umd fill_dram_noc0_translated_mapping;
    // blackhole-py hw.py build_bank_noc_table): banks 0-2 -> x 18 from y 12;
    // banks 4-6 -> x 17 from y 12; bank 7 (bank 3's mirror) -> (17, 21..23);
    // bank 3 itself -> (18, 21..23).
    let l = ChipLayout::for_board(Board::BlackholeP100a).unwrap();
    let d = l.descriptor();
    let at = |bank: usize, port: usize| l.translated(d.dram[bank][port]).unwrap();
    let want = [
        (0, c(18, 12)),
        (1, c(18, 15)),
        (2, c(18, 18)),
        (4, c(17, 12)),
        (5, c(17, 15)),
        (6, c(17, 18)),
        (7, c(17, 21)),
        (3, c(18, 21)),
    ];
    for (bank, first) in want {
        for port in 0..3 {
            assert_eq!(at(bank, port), c(first.x, first.y + port as u8), "bank {bank} port {port}");
        }
    }
    // A bank in the east half harvested: its west mirror moves last.
    let l = layout(Board::BlackholeP150a, "cols=7,10,dram=5,eth=5,8");
    let d = l.descriptor();
    let at = |bank: usize| l.translated(d.dram[bank][0]).unwrap();
    let got: Vec<_> = [0, 2, 3, 1, 4, 6, 7, 5].iter().map(|&b| at(b)).collect();
    assert_eq!(got, [c(17, 12), c(17, 15), c(17, 18), c(17, 21), c(18, 12), c(18, 15), c(18, 18), c(18, 21)]);
}

#[test]
fn noc1_coordinates() {
    // tt-umd *_implementation.hpp NOC0_X_TO_NOC1_X / NOC0_Y_TO_NOC1_Y:
    // NOC1 = (W-1-x, H-1-y). Wormhole PCIe (0,3) is (9,8) on NOC1 (tt-kmd
    // wormhole.c PCIE_NOC1_X 9, PCIE_NOC1_Y 8).
    let wh = ChipLayout::for_board(Board::WormholeN150).unwrap();
    assert_eq!(wh.from_noc0(Noc::Noc1, c(0, 3)), Some(c(9, 8)));
    assert_eq!(wh.tile_on(Noc::Noc1, c(9, 8)).unwrap().kind, TileKind::Pcie);
    let bh = ChipLayout::for_board(Board::BlackholeP150a).unwrap();
    for l in [&wh, &bh] {
        let g = l.grid();
        for t in l.tiles() {
            assert_eq!(t.noc1, c(g.x - 1 - t.noc0.x, g.y - 1 - t.noc0.y));
            assert_eq!(l.to_noc0(Noc::Noc1, t.noc1), Some(t.noc0));
            assert_eq!(l.from_noc0(Noc::Noc0, t.noc0), Some(t.noc0));
        }
    }
    assert_eq!(bh.from_noc0(Noc::Noc1, c(2, 0)), Some(c(14, 11)));
}

// --- Dispatch placement ----------------------------------------------------------

#[test]
fn dispatch_placement_per_board() {
    // tt-metal core_descriptors: nebula_x1 compute 8x8 and nebula_x2 8x7 with
    // dispatch on the last logical row; Blackhole with 2 harvested columns
    // compute 11x10 with dispatch on the last logical column.
    let expect = [
        (Board::WormholeN150, (8, 8), c(1, 11), c(2, 11)),
        (Board::WormholeN300, (8, 7), c(1, 11), c(2, 11)),
        (Board::BlackholeP100a, (11, 10), c(16, 2), c(16, 3)),
        (Board::BlackholeP150a, (11, 10), c(16, 2), c(16, 3)),
    ];
    for (board, grid, pre, disp) in expect {
        let l = ChipLayout::for_board(board).unwrap();
        for cqs in [1, 2] {
            let p = l.placement(cqs).unwrap();
            assert_eq!((p.compute_grid.x, p.compute_grid.y), grid, "{board} {cqs} CQs");
            assert_eq!(p.compute.len(), grid.0 as usize * grid.1 as usize);
            assert_eq!((p.cqs[0].prefetcher, p.cqs[0].dispatcher), (pre, disp), "{board}");
        }
    }
    // n150: CQ 1 continues along the same row.
    let n150 = ChipLayout::for_board(Board::WormholeN150).unwrap();
    let p = n150.placement(2).unwrap();
    assert_eq!((p.cqs[1].prefetcher, p.cqs[1].dispatcher), (c(3, 11), c(4, 11)));
    // Five queues need ten cores: a second row (logical row 7 = NOC0 y 10).
    let p = n150.placement(5).unwrap();
    assert_eq!((p.compute_grid.x, p.compute_grid.y), (8, 7));
    assert_eq!((p.cqs[4].prefetcher, p.cqs[4].dispatcher), (c(1, 10), c(2, 10)));
    assert!(p.compute.iter().all(|w| w.y != 10 && w.y != 11));
    // Blackhole: six queues take a second column (logical 10 = NOC0 x 15).
    let p150 = ChipLayout::for_board(Board::BlackholeP150a).unwrap();
    let p = p150.placement(6).unwrap();
    assert_eq!((p.compute_grid.x, p.compute_grid.y), (10, 10));
    assert_eq!((p.cqs[5].prefetcher, p.cqs[5].dispatcher), (c(15, 2), c(15, 3)));
    // Too many queues: refused, saying how many fit.
    assert_eq!(n150.placement(32).unwrap().compute_grid.y, 1);
    let e = n150.placement(33).unwrap_err();
    assert_eq!(
        e.to_string(),
        "wormhole-n150 (rows=8): 33 command queues need 9 dispatch rows of 8 cores (a prefetcher and a \
         dispatcher per queue), but only 9 rows exist and one must stay for workers; at most 32 command queues fit"
    );
    assert!(matches!(p150.placement(56), Err(LayoutError::TooManyCqs { max: 55, axis: "column", .. })));
}

// --- DRAM banks --------------------------------------------------------------

#[test]
fn dram_bank_endpoints() {
    // tt-metal tt_metal/soc_descriptors/wormhole_b0_80_arch.yaml @47ad2f56
    // dram_views: bank -> channel b/2, worker endpoint (same on both NOCs),
    // offset 0 / 1 GiB.
    let wh = ChipLayout::for_board(Board::WormholeN150).unwrap();
    let want =
        [c(0, 11), c(0, 1), c(0, 5), c(0, 7), c(5, 1), c(5, 11), c(5, 2), c(5, 9), c(5, 8), c(5, 3), c(5, 5), c(5, 7)];
    for (b, (bank, &ep)) in wh.dram_banks().iter().zip(&want).enumerate() {
        assert_eq!((bank.index as usize, bank.channel as usize), (b, b / 2));
        assert_eq!(bank.worker_endpoint, [ep, ep], "bank {b}");
        assert_eq!((bank.offset, bank.size), (if b % 2 == 0 { 0 } else { 1 << 30 }, 1 << 30));
    }
    assert_eq!(wh.dram_banks()[0].eth_endpoint, [c(0, 0), c(0, 0)]);
    // tt-metal blackhole_140_arch.yaml @58eb2b3b dram_views: channels 0-3 use
    // port 0 on NOC0 and port 1 on NOC1; channels 4-7 port 2 and port 1;
    // 0xFF00_0000 bytes each.
    let bh = ChipLayout::for_board(Board::BlackholeP150a).unwrap();
    let want = [
        [c(0, 0), c(0, 1)],
        [c(0, 2), c(0, 10)],
        [c(0, 9), c(0, 4)],
        [c(0, 5), c(0, 7)],
        [c(9, 11), c(9, 1)],
        [c(9, 3), c(9, 10)],
        [c(9, 8), c(9, 4)],
        [c(9, 6), c(9, 7)],
    ];
    for (bank, ep) in bh.dram_banks().iter().zip(want) {
        assert_eq!(bank.worker_endpoint, ep, "bank {}", bank.index);
        assert_eq!(bank.worker_endpoint_on(Noc::Noc1), ep[1]);
        assert_eq!((bank.offset, bank.size), (0, 0xFF00_0000));
    }
    // p100a: channel 3 harvested, 7 banks; bank 3 is channel 4.
    let p100 = ChipLayout::for_board(Board::BlackholeP100a).unwrap();
    let chans: Vec<u8> = p100.dram_banks().iter().map(|b| b.channel).collect();
    assert_eq!(chans, [0, 1, 2, 4, 5, 6, 7]);
    assert_eq!(p100.dram_banks()[3].worker_endpoint, [c(9, 11), c(9, 1)]);
}

#[test]
fn host_memory_noc_base() {
    // tt-metal wh noc_parameters.h NOC_XY_PCIE_ENCODING(0, 3) = (3 << 42) |
    // 0x8_0000_0000; bh NOC_XY_PCIE_ENCODING(19, 24) = (24 << 42 | 19 << 36)
    // | 1 << 60 (blackhole-py compiler.py -DPCIE_NOC_X=19 -DPCIE_NOC_Y=24).
    let wh = ChipLayout::for_board(Board::WormholeN300).unwrap();
    assert_eq!(wh.host_mem_noc_base(), 3 << 42 | 0x8_0000_0000);
    let bh = ChipLayout::for_board(Board::BlackholeP100a).unwrap();
    assert_eq!(bh.host_mem_noc_base(), 24 << 42 | 19 << 36 | 1 << 60);
}

// --- Routing ------------------------------------------------------------------

#[test]
fn routing_on_both_tori() {
    let g = WORMHOLE.grid; // 10 x 12
                           // NOC0: X first (+x), then Y (+y).
    let r = route(g, Noc::Noc0, c(1, 1), c(3, 2));
    assert_eq!(r.tiles, [c(1, 1), c(2, 1), c(3, 1), c(3, 2)]);
    assert_eq!(r.hops(), 3);
    // NOC0 wrapping in x: 8 -> 9 -> 0 -> 1.
    let r = route(g, Noc::Noc0, c(8, 1), c(1, 1));
    assert_eq!(r.tiles, [c(8, 1), c(9, 1), c(0, 1), c(1, 1)]);
    // NOC1: Y first (-y), then X (-x); the short way on NOC0 is the long way here.
    assert_eq!(hop_count(g, Noc::Noc1, c(1, 1), c(3, 2)), 8 + 11);
    let r = route(g, Noc::Noc1, c(3, 2), c(1, 1));
    assert_eq!(r.tiles, [c(3, 2), c(3, 1), c(2, 1), c(1, 1)]);
    let r = route(g, Noc::Noc1, c(1, 1), c(9, 10));
    assert_eq!(r.tiles, [c(1, 1), c(1, 0), c(1, 11), c(1, 10), c(0, 10), c(9, 10)]);
    assert_eq!(r.links().collect::<Vec<_>>()[2], (c(1, 11), c(1, 10)));
    assert_eq!(r.hops(), hop_count(g, Noc::Noc1, c(1, 1), c(9, 10)));
    assert_eq!(hop_count(g, Noc::Noc0, c(4, 4), c(4, 4)), 0);
    // A round trip on one NOC is a full lap of each axis.
    let bh = BLACKHOLE.grid;
    for noc in Noc::ALL {
        let there = hop_count(bh, noc, c(2, 0), c(14, 7));
        let back = hop_count(bh, noc, c(14, 7), c(2, 0));
        assert_eq!(there + back, 17 + 12, "{noc:?}");
    }
    let l = ChipLayout::for_board(Board::BlackholeP150a).unwrap();
    assert_eq!(l.hop_count(Noc::Noc0, c(16, 11), c(1, 2)), 2 + 3);
    assert_eq!(l.route(Noc::Noc1, c(1, 2), c(16, 11)).hops(), 3 + 2);
}

#[test]
fn multicast_rectangles() {
    // Inclusive; start > end wraps (tt-isa NoC/MemoryMap.md).
    assert!(in_rect(c(1, 1), c(3, 3), c(3, 1)));
    assert!(!in_rect(c(1, 1), c(3, 3), c(4, 1)));
    assert!(in_rect(c(8, 1), c(1, 1), c(9, 1)) && in_rect(c(8, 1), c(1, 1), c(0, 1)));
    assert!(!in_rect(c(8, 1), c(1, 1), c(5, 1)));
    let l = ChipLayout::for_board(Board::WormholeN150).unwrap();
    // Row 6 (Ethernet), row 8 (harvested) and the DRAM column 5 do not receive.
    let r = l.multicast_receivers(Noc::Noc0, c(1, 1), c(9, 11));
    assert_eq!(r.len(), 72);
    assert!(r.iter().all(|t| t.y != 6 && t.y != 8 && t.x != 5));
    // Wrapping columns 6..9, 0..2 on row 1: Tensix 6, 7, 8, 9, 1, 2.
    let r = l.multicast_receivers(Noc::Noc0, c(6, 1), c(2, 1));
    assert_eq!(r, [c(1, 1), c(2, 1), c(6, 1), c(7, 1), c(8, 1), c(9, 1)]);
    // On NOC1 the rectangle is in NOC1 coordinates: NOC1 (8,10)..(8,10) is NOC0 (1,1).
    assert_eq!(l.multicast_receivers(Noc::Noc1, c(8, 10), c(8, 10)), [c(1, 1)]);
}

// --- Addressing with translation on, and the NOC map ---------------------------

#[test]
fn wormhole_requests_name_untranslated_tiles_by_each_nocs_own_coordinates() {
    let l = layout(Board::WormholeN150, "rows=8");
    // PCIe 0-3 is 9-8 on NOC1 (tt-metal wh `noc_parameters.h`@face1485 PCIE_NOC1_X/Y).
    assert_eq!(l.noc_coord(Noc::Noc0, c(0, 3)), Some(c(0, 3)));
    assert_eq!(l.noc_coord(Noc::Noc1, c(0, 3)), Some(c(9, 8)));
    assert_eq!(l.resolve(Noc::Noc0, c(0, 3)), Some(c(0, 3)));
    assert_eq!(l.resolve(Noc::Noc1, c(9, 8)), Some(c(0, 3)));
    // Tensix: translated on both NOCs.
    let t = l.tile(c(1, 1)).unwrap().translated;
    assert_eq!(t, c(18, 18));
    for noc in Noc::ALL {
        assert_eq!(l.noc_coord(noc, c(1, 1)), Some(t));
        assert_eq!(l.resolve(noc, t), Some(c(1, 1)));
    }
    // Each axis on its own: translated x, physical y.
    assert_eq!(l.resolve(Noc::Noc0, c(18, 3)), Some(c(1, 3)));
    assert_eq!(l.resolve(Noc::Noc1, c(18, 8)), Some(c(1, 3)), "NOC1 row 8 is NOC0 row 3");
    assert_eq!(l.resolve(Noc::Noc0, c(40, 3)), None);
}

#[test]
fn blackhole_requests_use_translated_coordinates_on_both_nocs() {
    let l = layout(Board::BlackholeP150a, "cols=7,10");
    for noc in Noc::ALL {
        assert_eq!(l.noc_coord(noc, c(2, 0)), Some(c(19, 24)), "the PCIe tile in use");
        assert_eq!(l.resolve(noc, c(19, 24)), Some(c(2, 0)));
        // Worked example: translated 7 is NOC0 column 11.
        assert_eq!(l.resolve(noc, c(7, 2)), Some(c(11, 2)));
    }
    // ARC keeps physical coordinates: 8-0 on NOC0, 8-11 on NOC1.
    assert_eq!(l.noc_coord(Noc::Noc0, c(8, 0)), Some(c(8, 0)));
    assert_eq!(l.noc_coord(Noc::Noc1, c(8, 0)), Some(c(8, 11)));
    assert_eq!(l.resolve(Noc::Noc0, c(8, 0)), Some(c(8, 0)));
    assert_eq!(l.resolve(Noc::Noc1, c(8, 11)), Some(c(8, 0)));
    // DRAM by its NOC0 coordinates still works (blackhole-py `dram.py`).
    assert_eq!(l.resolve(Noc::Noc0, c(0, 0)), Some(c(0, 0)));
    // A column that is not Tensix: translated x 8 in a Tensix row names nothing translated;
    // physically it is the L2CPU/security column, untranslated.
    assert_eq!(l.resolve(Noc::Noc0, c(8, 2)), Some(c(8, 2)));
}

#[test]
fn the_noc_map_of_every_board() {
    for board in Board::ALL {
        let l = ChipLayout::for_board(board).unwrap();
        let p = l.placement(2).unwrap();
        let m = l.noc_map(&p).unwrap();
        assert!(m.is_valid(), "{board}");
        assert_eq!((m.grid.cols, m.grid.rows), (p.compute_grid.x as u32, p.compute_grid.y as u32), "{board}");
        assert_eq!(m.dram_banks as usize, l.dram_banks().len(), "{board}");
        // Every compute core is found by its translated coordinates, in logical order.
        for (i, &core) in p.compute.iter().enumerate() {
            let t = l.tile(core).unwrap().translated;
            let (col, row) = m.grid.logical(t).unwrap();
            assert_eq!(row as usize * p.compute_grid.x as usize + col as usize, i, "{board} {core}");
        }
        // The dispatch cores are not compute cores.
        for q in &p.cqs {
            let d = l.tile(q.dispatcher).unwrap().translated;
            assert_eq!(m.grid.logical(d), None, "{board}");
            assert_eq!(m.dispatcher[p.cqs.iter().position(|x| x == q).unwrap()], d.packed());
        }
        // The whole grid as one rectangle has every compute core in it.
        let g = m.grid;
        let (first, last) = (g.at(0, 0), g.at(g.cols as u8 - 1, g.rows as u8 - 1));
        assert_eq!(g.cores_in(first, last) as usize, p.compute.len(), "{board}");
        // Host memory and DRAM addresses reach the right tiles on each NOC.
        for noc in Noc::ALL {
            let pcie = NocAddr(m.pcie[noc.index() as usize]);
            assert_eq!(l.resolve(noc, pcie.coord()), Some(l.pcie_tile()), "{board} {noc:?}");
            assert_eq!(pcie.flags() | pcie.local(), l.params().bar.host_mem_base, "{board}");
            for (b, bank) in l.dram_banks().iter().enumerate() {
                let a = m.dram_addr(b as u32, noc.index() as usize, 0x40);
                assert_eq!(l.resolve(noc, a.coord()), Some(bank.worker_endpoint_on(noc)), "{board} bank {b}");
                assert_eq!(a.local(), bank.offset + 0x40);
            }
        }
    }
}

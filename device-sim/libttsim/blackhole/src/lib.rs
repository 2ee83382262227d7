//! `libttsim_bh.so`: cqlab's Blackhole behind the libttsim C API (see
//! `cqlab-ttsim`, and docs/libttsim.md for its use from tt-umd and tt-metal).
#![allow(unsafe_code)] // the C ABI: docs/design.md, "Where `unsafe` lives"

cqlab_ttsim::export_libttsim!(cqlab_ttsim::Arch::Blackhole);

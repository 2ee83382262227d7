//! Host-side chip descriptions (feature `std`): the SoC descriptor files,
//! boards, harvesting and the chip layout built from them. Filled in by the
//! commits that follow this one.

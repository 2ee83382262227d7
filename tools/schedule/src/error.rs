//! Errors of the schedule analysis.

/// Everything that can go wrong when setting up or running an analysis.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// A GEMM dimension or the element size was zero.
    #[error("{what} must be at least 1, found 0")]
    Zero {
        /// Which quantity (for example "M" or "tile size Tk").
        what: &'static str,
    },
    /// A tensor's byte size does not fit in 64 bits.
    #[error("tensor {tensor} of {rows} x {cols} elements of {elem_size} bytes overflows 64-bit byte counts")]
    Overflow {
        /// Tensor name.
        tensor: &'static str,
        /// Rows of the tensor.
        rows: u64,
        /// Columns of the tensor.
        cols: u64,
        /// Bytes per element.
        elem_size: u64,
    },
    /// The tile grid has more tiles than the simulator keeps state for.
    #[error("{tiles} tiles in A, B and C exceed the limit of {limit}; use a larger tile")]
    TooManyTiles {
        /// Tiles the problem needs.
        tiles: u64,
        /// The limit ([`crate::MAX_TILES`]).
        limit: u64,
    },
    /// The loop nest has more tile steps than the simulator is willing to run.
    #[error("{steps} tile steps (M/Tm x N/Tn x K/Tk) exceed the limit of {limit}; use a larger tile")]
    TooManySteps {
        /// Steps the loop nest needs.
        steps: u64,
        /// The limit ([`crate::MAX_STEPS`]).
        limit: u64,
    },
    /// A cache level was given a capacity of zero bytes.
    #[error("cache level {level} has a capacity of 0 bytes; give a positive size")]
    ZeroCapacity {
        /// Name of the level.
        level: String,
    },
    /// A size such as `16MiB` could not be parsed.
    #[error("cannot parse size {input:?}: {reason} (expected e.g. 512KiB, 16MiB, 1GiB or plain bytes)")]
    BadSize {
        /// The text given.
        input: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A tile specification such as `128` or `64x128x32` could not be parsed.
    #[error("cannot parse tile {input:?}: expected T or TMxTNxTK with positive integers")]
    BadTile {
        /// The text given.
        input: String,
    },
    /// A strategy name was not recognised.
    #[error("unknown strategy {input:?}: expected ws, is or os")]
    BadStrategy {
        /// The text given.
        input: String,
    },
}

/// Result alias of this crate.
pub type Result<T, E = ScheduleError> = std::result::Result<T, E>;

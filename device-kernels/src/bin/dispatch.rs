//! `dispatch` firmware: one per command queue.
#![no_std]
#![no_main]

use cqlab_kernels::dispatch::Dispatcher;

cqlab_kernels::cq_firmware!(Dispatch, Dispatcher);

//! Firmware identities reported in alive records.

id_table! {
    /// Which firmware image a core runs; its label is the name of the
    /// firmware binary (and of the ELF file).
    pub enum FirmwareId: u32 { from_u32, name } {
        Prefetch = 1, "prefetch";
        Dispatch = 2, "dispatch";
        /// The resident worker loop; kernels are separate images it calls
        /// (see `program`).
        Worker = 3, "worker";
    }
}

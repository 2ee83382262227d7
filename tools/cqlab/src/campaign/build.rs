//! What a campaign record says of the code that ran it: the cqlab build and
//! a digest of the firmware ELFs a boot loads, so that `campaign merge`
//! refuses records of another build or firmware (helper-80: records of
//! two firmware directories, or of a rebuilt cqlab, merged silently).

use cqlab_abi::arch::tensix::Processor;
use cqlab_abi::arch::Arch;
use cqlab_abi::firmware::FirmwareId;
use cqlab_driver::kernel::fnv1a;
use cqlab_driver::DeviceConfig;

/// `VERSION exe DIGEST`: the version and a digest of the running cqlab
/// executable (a rebuild with the same version is another build).
pub fn cqlab_build() -> String {
    static BUILD: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BUILD
        .get_or_init(|| {
            let exe = std::env::current_exe().and_then(std::fs::read);
            let digest = exe.map_or_else(|e| format!("unreadable ({e})"), |b| format!("{:016x}", fnv1a(&b)));
            format!("{} exe {digest}", env!("CARGO_PKG_VERSION"))
        })
        .clone()
}

/// A digest of every ELF a boot of `cfg` on an `arch` chip loads (its CQ
/// firmware, each worker's firmware, its worker kernel) and of `kernels`:
/// each file's name and bytes, or that it cannot be read.
pub fn firmware_digest<'a>(cfg: &DeviceConfig, arch: Arch, kernels: impl IntoIterator<Item = &'a str>) -> String {
    let cq = cfg.cq_firmware_dir(arch);
    let chip = cfg.chip_firmware_dir(arch);
    let mut files = vec![cq.join(FirmwareId::Prefetch.name()), cq.join(FirmwareId::Dispatch.name())];
    files.extend(Processor::ALL.iter().map(|&p| cfg.worker_elf(arch, p)));
    files.push(chip.join(&cfg.worker_kernel));
    files.extend(kernels.into_iter().map(|k| chip.join(k)));
    let mut all = Vec::new();
    for f in files {
        all.extend(f.file_name().map_or(&b""[..], |n| n.as_encoded_bytes()));
        match std::fs::read(&f) {
            Ok(bytes) => all.extend(fnv1a(&bytes).to_le_bytes()),
            Err(e) => all.extend(format!("unreadable: {}", e.kind()).as_bytes()),
        }
    }
    format!("{:016x}", fnv1a(&all))
}

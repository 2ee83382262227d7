//! Feeds arbitrary bytes to the daemon's wire protocol: frames, requests,
//! replies and reply bodies. Nothing may panic, and whatever decodes must
//! encode back to the same value.
#![no_main]

use cqlab_sim::daemon::proto::{read_frame, ChipInfo, CoreView, L0View, Reply, Request, Status};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut stream = data;
    while let Ok(Some(frame)) = read_frame(&mut stream) {
        let _ = Request::decode(&frame);
    }
    if let Ok(req) = Request::decode(data) {
        assert_eq!(Request::decode(&req.encode()), Ok(req));
    }
    if let Ok(rep) = Reply::decode(data) {
        assert_eq!(Reply::decode(&rep.encode()), Ok(rep));
    }
    if let Ok(info) = ChipInfo::decode(data) {
        assert_eq!(ChipInfo::decode(&info.encode()), Ok(info));
    }
    if let Ok(view) = CoreView::decode(data) {
        assert_eq!(CoreView::decode(&CoreView::encode(view.as_ref())), Ok(view));
    }
    if let Ok(view) = L0View::decode(data) {
        assert_eq!(L0View::decode(&L0View::encode(view.as_ref())), Ok(view));
    }
    if let Ok(status) = Status::decode(data) {
        assert_eq!(Status::decode(&status.encode()), Ok(status));
    }
});

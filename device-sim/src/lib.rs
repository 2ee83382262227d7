//! The cqlab device simulator (built by the simulator issue).

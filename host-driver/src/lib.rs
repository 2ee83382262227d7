//! The cqlab host driver.

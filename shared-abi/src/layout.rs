//! Compile-time layout assertions used next to every `#[repr(C)]` definition.

/// `assert_layout!(Type, size, field => offset, ...)`: fails the build when the
/// struct's size or a field's offset differs from what the ABI documents.
macro_rules! assert_layout {
    ($ty:ty, $size:expr $(, $field:ident => $off:expr)* $(,)?) => {
        const _: () = {
            assert!(core::mem::size_of::<$ty>() == $size, concat!("size of ", stringify!($ty)));
            $( assert!(core::mem::offset_of!($ty, $field) == $off,
                       concat!("offset of ", stringify!($ty), ".", stringify!($field))); )*
        };
    };
}

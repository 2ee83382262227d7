//! One table per enum: each variant is written once, with its value and its
//! text, and the macro derives the enum, `ALL`, the decoder from the raw
//! value, the label, and the parser from the label, so none of them can
//! fall out of step with the others.

/// `id_table! { /// docs  pub enum Name: u8 { from_u8, name } { Variant = 0x01, "LABEL"; ... } }`
///
/// Gives `Name::ALL` (declaration order), `Name::$from(raw) -> Option<Self>`,
/// `Name::$label(self) -> &'static str` and `Name::parse(label) -> Option<Self>`.
/// With a third text per variant (`Variant = 1, "label", "meaning";`) it
/// also gives `Name::describe(self) -> &'static str`.
macro_rules! id_table {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident: $repr:ty { $from:ident, $label:ident }
        { $($(#[$doc:meta])* $var:ident = $v:literal, $text:literal;)* }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr($repr)]
        $vis enum $name { $($(#[$doc])* $var = $v,)* }

        impl $name {
            /// Every variant, in table order.
            pub const ALL: [Self; [$($v),*].len()] = [$(Self::$var),*];

            /// The variant whose raw value is `v`.
            pub const fn $from(v: $repr) -> Option<Self> {
                match v {
                    $($v => Some(Self::$var),)*
                    _ => None,
                }
            }

            /// Its text in tools and logs.
            pub const fn $label(self) -> &'static str {
                match self {
                    $(Self::$var => $text,)*
                }
            }

            /// The variant whose text is `text`.
            pub fn parse(text: &str) -> Option<Self> {
                Self::ALL.into_iter().find(|v| v.$label() == text)
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident: $repr:ty { $from:ident, $label:ident, describe }
        { $($(#[$doc:meta])* $var:ident = $v:literal, $text:literal, $meaning:literal;)* }
    ) => {
        id_table! {
            $(#[$meta])*
            $vis enum $name: $repr { $from, $label }
            { $($(#[$doc])* $var = $v, $text;)* }
        }

        impl $name {
            /// What it means, in a sentence fragment.
            pub const fn describe(self) -> &'static str {
                match self {
                    $(Self::$var => $meaning,)*
                }
            }
        }
    };
}

//! Command lines as a shell takes them: the replay lines `race`, `stress`
//! and `sweep` print, and the scripts `campaign sbatch` writes. A leaf
//! module, so every command can print one without importing another's.

/// `s` as one shell word: bare where it is plain, else single-quoted.
pub fn quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+".contains(c)) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// `cqlab ARGV...`, each argument quoted where it needs it (helper-49: a
/// firmware path with a space broke the printed line).
pub fn cqlab_line(argv: &[String]) -> String {
    let words: Vec<String> = argv.iter().map(|a| quote(a)).collect();
    format!("cqlab {}", words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_words_stay_bare_and_others_are_single_quoted() {
        assert_eq!(quote("depth=1..5:2"), "depth=1..5:2");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(cqlab_line(&["sweep".into(), "/tmp/a b".into()]), "cqlab sweep '/tmp/a b'");
    }
}

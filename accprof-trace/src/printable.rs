//! Strings from a trace, made safe to show. A trace can come from anyone, and its strings
//! (arguments, host name, file, function and variable names) end up on terminals, in text
//! tables, SVG and JSON. A control character there acts instead of showing: an escape
//! sequence sets a terminal's title, clears it or writes its clipboard (OSC 52), a carriage
//! return writes over what was shown, and none of them may appear in XML. The reader writes
//! each such character as a visible escape (`\x1b`, `\r`, `\u{202e}`) when it reads the
//! string, so every view shows the same safe text. Newlines and tabs stay: some strings are
//! lists of lines (a device's properties), and neither acts on a terminal or breaks XML.

use std::borrow::Cow;

/// Whether `c` acts on a display rather than showing: C0 controls but newline and tab, DEL,
/// C1 controls, and the bidirectional overrides and isolates, which reorder what follows.
pub fn acts(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with every character that [`acts`] written as a visible escape.
pub fn printable(s: &str) -> Cow<'_, str> {
    if !s.chars().any(acts) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\r' => out.push_str("\\r"),
            c if acts(c) && (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if acts(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_show_and_ordinary_text_is_untouched() {
        assert!(matches!(printable("laplace.c"), Cow::Borrowed(_)));
        assert_eq!(printable("Ämter/ü.f90"), "Ämter/ü.f90");
        assert_eq!(
            printable("\x1b]52;c;ZWNobw==\x07title"),
            "\\x1b]52;c;ZWNobw==\\x07title"
        );
        assert_eq!(printable("a\nb\tc\u{7f}\r"), "a\nb\tc\\x7f\\r");
        assert_eq!(printable("\u{9b}2J"), "\\u{9b}2J", "C1 CSI");
        assert_eq!(printable("abc\u{202e}fed"), "abc\\u{202e}fed");
    }
}

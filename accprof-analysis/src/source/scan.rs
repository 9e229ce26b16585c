//! Statement structure read from source lines: loops, the blocks they open, directives and their
//! continuation lines. A light scanner, not a parser: it knows C/C++ braces and `for`/`while`/`do`,
//! and Fortran `do` ... `end do`, and skips comments and string literals while matching.

use super::Language;

/// A source file's lines and language. Line numbers are 1-based, as the trace's.
#[derive(Clone, Debug)]
pub struct SourceText {
    pub language: Language,
    lines: Vec<String>,
}

/// A loop statement: the line it starts on and the line that closes it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct LoopSpan {
    pub start: i64,
    pub end: i64,
}

impl SourceText {
    pub fn new(language: Language, text: &str) -> Self {
        SourceText {
            language,
            lines: text.lines().map(str::to_string).collect(),
        }
    }

    /// The file's lines.
    pub(crate) fn lines(&self) -> &[String] {
        &self.lines
    }

    /// The C/C++ code of each line, comments, strings and preprocessor lines blanked.
    pub(crate) fn code_lines(&self) -> Vec<String> {
        self.c_code()
    }

    fn line(&self, n: i64) -> Option<&str> {
        usize::try_from(n - 1)
            .ok()
            .and_then(|i| self.lines.get(i))
            .map(String::as_str)
    }

    /// Every loop statement of the file with its extent.
    pub fn loops(&self) -> Vec<LoopSpan> {
        match self.language {
            Language::C => self.c_loops(),
            Language::Fortran => self.fortran_loops(),
        }
    }

    /// The innermost loop that encloses lines `first`..=`last` (the loop around every construct
    /// that ran again and again), if the file has one.
    pub fn enclosing_loop(&self, first: i64, last: i64) -> Option<LoopSpan> {
        self.loops()
            .into_iter()
            .filter(|l| l.start < first && l.end >= last)
            .min_by_key(|l| l.end - l.start)
    }

    /// The line that closes the construct whose directive is on `line`: the `}` matching the
    /// block after a C/C++ pragma (or the end of its single statement), or Fortran's
    /// `!$acc end <construct>` (or the `end do` of a combined loop construct without one).
    pub fn region_end(&self, line: i64) -> Option<i64> {
        let after = self.directive_last_line(line) + 1;
        match self.language {
            Language::C => self.c_statement_end(after),
            Language::Fortran => {
                let text = self.directive_text(line).to_ascii_lowercase();
                let body = text.trim_start().trim_start_matches("!$acc").trim_start();
                let word = body
                    .split(|c: char| !c.is_ascii_alphabetic())
                    .next()
                    .unwrap_or("")
                    .to_string();
                if word.is_empty() {
                    return None;
                }
                let mut depth = 0;
                for n in after..=(self.lines.len() as i64) {
                    let l = self.line(n).unwrap_or("").trim().to_ascii_lowercase();
                    let Some(rest) = l.strip_prefix("!$acc") else {
                        continue;
                    };
                    let rest = rest.trim_start();
                    if rest.starts_with(&word) {
                        depth += 1;
                    } else if rest.starts_with("end") && rest[3..].trim_start().starts_with(&word) {
                        if depth == 0 {
                            return Some(n);
                        }
                        depth -= 1;
                    }
                }
                // `!$acc parallel loop` without its end directive: the loop after it.
                self.fortran_loops()
                    .into_iter()
                    .find(|l| l.start == after)
                    .map(|l| l.end)
            }
        }
    }

    /// Whether the construct whose directive is on `line` writes `name` before anything in it
    /// reads it: the first time its body mentions the array (as a whole word), it assigns to an
    /// element (`Anew[j][i] = ...`, `tnew(i, j) = ...`). `None` when the body does not mention
    /// it or its end is not found.
    pub fn written_before_read(&self, line: i64, name: &str) -> Option<bool> {
        let end = self.region_end(line)?;
        let first = self.directive_last_line(line) + 1;
        let fortran = self.language == Language::Fortran;
        let code = if fortran {
            self.lines.clone()
        } else {
            self.c_code()
        };
        let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
        for n in first..=end {
            let Some(l) = code.get((n - 1) as usize) else {
                break;
            };
            let l = if fortran {
                l.split('!').next().unwrap_or("").to_ascii_lowercase()
            } else {
                l.clone()
            };
            let want = if fortran {
                name.to_ascii_lowercase()
            } else {
                name.to_string()
            };
            for (i, _) in l.match_indices(&want) {
                let before = &l[..i];
                let after = &l[i + want.len()..];
                if before.ends_with(is_word) || after.starts_with(is_word) {
                    continue;
                }
                // Past the element's subscripts: `[j][i]`, `(i, j)`.
                let mut rest = after.trim_start();
                while let Some(open) = rest.chars().next().filter(|c| *c == '[' || *c == '(') {
                    let close = if open == '[' { ']' } else { ')' };
                    let mut depth = 0;
                    let mut cut = rest.len();
                    for (k, c) in rest.char_indices() {
                        if c == open {
                            depth += 1;
                        } else if c == close {
                            depth -= 1;
                            if depth == 0 {
                                cut = k + 1;
                                break;
                            }
                        }
                    }
                    rest = rest[cut..].trim_start();
                }
                let assigned = rest.starts_with('=') && !rest.starts_with("==");
                return Some(assigned);
            }
        }
        None
    }

    /// The directive on `line` with its continuation lines, as one string.
    pub fn directive_text(&self, line: i64) -> String {
        (line..=self.directive_last_line(line))
            .filter_map(|n| self.line(n))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Whether `line` starts an OpenACC directive (`#pragma acc`, `!$acc`): a construct's line
    /// must, or the file on disk is not the one the program was built from.
    pub fn is_directive(&self, line: i64) -> bool {
        let Some(l) = self.line(line) else {
            return false;
        };
        let t = l.trim_start().to_ascii_lowercase();
        match self.language {
            Language::C => t.strip_prefix('#').is_some_and(|r| {
                r.trim_start()
                    .strip_prefix("pragma")
                    .is_some_and(|r| r.trim_start().starts_with("acc"))
            }),
            Language::Fortran => t.starts_with("!$acc"),
        }
    }

    /// Whether the directive on `line` names `clause` (e.g. `async`) as a word of its own.
    pub fn directive_has_clause(&self, line: i64, clause: &str) -> bool {
        let text = self.directive_text(line).to_ascii_lowercase();
        text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|w| w == clause)
    }

    /// The last line of the directive starting on `line` (C: lines ending in `\`; Fortran: `&`).
    fn directive_last_line(&self, line: i64) -> i64 {
        let mut n = line;
        while let Some(l) = self.line(n) {
            let t = l.trim_end();
            let continues = match self.language {
                Language::C => t.ends_with('\\'),
                Language::Fortran => t.ends_with('&'),
            };
            if !continues {
                break;
            }
            n += 1;
        }
        n
    }

    /// The code of each line with comments, string literals and preprocessor lines blanked (C/C++).
    fn c_code(&self) -> Vec<String> {
        let mut out = Vec::with_capacity(self.lines.len());
        let mut in_block = false;
        for l in &self.lines {
            let mut code = String::with_capacity(l.len());
            let b: Vec<char> = l.chars().collect();
            let mut i = 0;
            let mut quote: Option<char> = None;
            while i < b.len() {
                let c = b[i];
                let next = b.get(i + 1).copied();
                if in_block {
                    if c == '*' && next == Some('/') {
                        in_block = false;
                        i += 1;
                    }
                } else if let Some(q) = quote {
                    if c == '\\' {
                        i += 1;
                    } else if c == q {
                        quote = None;
                    }
                } else if c == '/' && next == Some('*') {
                    in_block = true;
                    i += 1;
                } else if c == '/' && next == Some('/') {
                    break;
                } else if c == '"' || c == '\'' {
                    quote = Some(c);
                } else {
                    code.push(c);
                }
                i += 1;
            }
            if code.trim_start().starts_with('#') {
                code.clear();
            }
            out.push(code);
        }
        out
    }

    /// The tokens that statement structure depends on (words and `{}();`), with their lines,
    /// from line `from` on.
    fn c_tokens(code: &[String], from: i64) -> Vec<(i64, String)> {
        let mut toks = Vec::new();
        for (i, l) in code.iter().enumerate().skip((from - 1).max(0) as usize) {
            let n = i as i64 + 1;
            let mut word = String::new();
            for c in l.chars() {
                if c.is_ascii_alphanumeric() || c == '_' {
                    word.push(c);
                    continue;
                }
                if !word.is_empty() {
                    toks.push((n, std::mem::take(&mut word)));
                }
                if "{}();".contains(c) {
                    toks.push((n, c.to_string()));
                }
            }
            if !word.is_empty() {
                toks.push((n, word));
            }
        }
        toks
    }

    /// The last line of the C/C++ statement that starts at or after line `from`.
    fn c_statement_end(&self, from: i64) -> Option<i64> {
        let toks = Self::c_tokens(&self.c_code(), from);
        statement_end(&toks, 0).map(|(line, _)| line)
    }

    fn c_loops(&self) -> Vec<LoopSpan> {
        let code = self.c_code();
        let toks = Self::c_tokens(&code, 1);
        let mut out = Vec::new();
        for (i, (line, t)) in toks.iter().enumerate() {
            if !matches!(t.as_str(), "for" | "while" | "do") {
                continue;
            }
            // The `while` that closes a do loop is part of that loop.
            if t == "while" {
                if let Some(after) = skip_parens(&toks, i + 1) {
                    if toks.get(after).map(|t| t.1.as_str()) == Some(";")
                        && i > 0
                        && toks[i - 1].1 == "}"
                    {
                        continue;
                    }
                }
            }
            if let Some((end, _)) = statement_end(&toks, i) {
                out.push(LoopSpan { start: *line, end });
            }
        }
        out
    }

    fn fortran_loops(&self) -> Vec<LoopSpan> {
        let mut out = Vec::new();
        let mut open: Vec<i64> = Vec::new();
        for (i, l) in self.lines.iter().enumerate() {
            let n = i as i64 + 1;
            let code = l
                .split('!')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            // A construct name (`outer: do`) may come first.
            let code = match code.split_once(':') {
                Some((label, rest))
                    if !label.is_empty()
                        && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
                {
                    rest.trim().to_string()
                }
                _ => code,
            };
            let first = code
                .split(|c: char| !c.is_ascii_alphanumeric())
                .next()
                .unwrap_or("");
            if first == "do" {
                open.push(n);
            } else if code.starts_with("end do") || code.starts_with("enddo") {
                if let Some(start) = open.pop() {
                    out.push(LoopSpan { start, end: n });
                }
            }
        }
        out
    }
}

/// Where the statement starting at token `i` ends: (its last line, the index after it).
fn statement_end(toks: &[(i64, String)], i: usize) -> Option<(i64, usize)> {
    let t = &toks.get(i)?.1;
    match t.as_str() {
        "{" => {
            let mut depth = 0;
            for (j, (l, t)) in toks.iter().enumerate().skip(i) {
                match t.as_str() {
                    "{" => depth += 1,
                    "}" => {
                        depth -= 1;
                        if depth == 0 {
                            return Some((*l, j + 1));
                        }
                    }
                    _ => {}
                }
            }
            None
        }
        "for" | "while" | "if" | "switch" => {
            let after = skip_parens(toks, i + 1)?;
            if toks.get(after).map(|t| t.1.as_str()) == Some(";") {
                return Some((toks[after].0, after + 1));
            }
            let (l, next) = statement_end(toks, after)?;
            if t == "if" && toks.get(next).map(|t| t.1.as_str()) == Some("else") {
                return statement_end(toks, next + 1);
            }
            Some((l, next))
        }
        "do" => {
            let (_, next) = statement_end(toks, i + 1)?;
            if toks.get(next).map(|t| t.1.as_str()) != Some("while") {
                return None;
            }
            let after = skip_parens(toks, next + 1)?;
            let semi = toks.get(after)?;
            Some((semi.0, after + 1))
        }
        _ => {
            let mut depth = 0i32;
            for (j, (l, t)) in toks.iter().enumerate().skip(i) {
                match t.as_str() {
                    "(" | "{" => depth += 1,
                    ")" | "}" => depth -= 1,
                    ";" if depth <= 0 => return Some((*l, j + 1)),
                    _ => {}
                }
            }
            None
        }
    }
}

/// The index after the parenthesized group starting at `i`.
fn skip_parens(toks: &[(i64, String)], i: usize) -> Option<usize> {
    if toks.get(i)?.1 != "(" {
        return None;
    }
    let mut depth = 0;
    for (j, (_, t)) in toks.iter().enumerate().skip(i) {
        match t.as_str() {
            "(" => depth += 1,
            ")" => {
                depth -= 1;
                if depth == 0 {
                    return Some(j + 1);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: &str = "int main(void)\n{\n    while (e > t && i < 9) {\n        e = 0;\n#pragma acc parallel loop \\\n    reduction(max:e) async(1)\n        for (int j = 1; j < n; j++) {\n            a[j] = b[j]; /* } */\n        }\n#pragma acc parallel loop\n        for (int j = 1; j < n; j++)\n            b[j] = a[j];\n        i++;\n    }\n    do { x++; } while (x < 3);\n}\n";

    #[test]
    fn c_loops_match_braces_and_single_statements() {
        let s = SourceText::new(Language::C, C);
        assert_eq!(
            s.enclosing_loop(5, 12),
            Some(LoopSpan { start: 3, end: 14 })
        );
        assert!(s.loops().contains(&LoopSpan { start: 11, end: 12 }));
        assert!(s.loops().contains(&LoopSpan { start: 15, end: 15 }));
        assert_eq!(
            s.region_end(5),
            Some(9),
            "the pragma's loop ends at its brace"
        );
        assert_eq!(s.region_end(10), Some(12));
        assert!(s.directive_has_clause(5, "async"));
        assert!(!s.directive_has_clause(10, "async"));
    }

    const F: &str = "program p\n  do while (err > 1.0)\n    !$acc parallel loop &\n    !$acc& async(2)\n    do j = 1, m\n    end do\n    !$acc kernels\n    do j = 1, m\n    enddo\n    !$acc end kernels\n  end do\nend program p\n";

    #[test]
    fn arrays_written_before_read_in_a_construct() {
        let c = "#pragma acc parallel loop\nfor (j = 1; j < n; j++) {\n    Anew[j][i] = 0.25 * A[j][i+1];\n    err = fmax(err, Anew[j][i] - A[j][i]);\n}\n";
        let s = SourceText::new(Language::C, c);
        assert_eq!(s.written_before_read(1, "Anew"), Some(true));
        assert_eq!(s.written_before_read(1, "A"), Some(false));
        assert_eq!(s.written_before_read(1, "B"), None);
        let k = "#pragma acc kernels\n{\nfor (;;) Anew[j] = A[j+1];\nfor (;;) A[j] = Anew[j];\n}\n";
        let s = SourceText::new(Language::C, k);
        assert_eq!(s.written_before_read(1, "A"), Some(false));
        assert_eq!(s.written_before_read(1, "Anew"), Some(true));
        let f = "!$acc parallel loop\ndo j = 2, n\n  TNEW(i, j) = t(i, j)\nend do\n";
        let s = SourceText::new(Language::Fortran, f);
        assert_eq!(s.written_before_read(1, "tnew"), Some(true));
        assert_eq!(s.written_before_read(1, "t"), Some(false));
    }

    #[test]
    fn fortran_loops_and_end_directives() {
        let s = SourceText::new(Language::Fortran, F);
        assert_eq!(s.enclosing_loop(3, 7), Some(LoopSpan { start: 2, end: 11 }));
        assert_eq!(s.region_end(7), Some(10));
        assert_eq!(
            s.region_end(3),
            Some(6),
            "a combined construct without its end: the loop after it"
        );
        assert!(s.directive_has_clause(3, "async"));
        assert_eq!(Language::of("heat_mod.F90"), Language::Fortran);
        assert_eq!(Language::Fortran.directive("wait(1)"), "!$acc wait(1)");
    }
}

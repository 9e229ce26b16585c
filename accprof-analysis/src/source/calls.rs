//! Where a function is called and which function a line is in: what placing a data region in
//! the caller's loop needs, read from the source (C and C++ calls `name(`, Fortran `call name`
//! and function references), never from the binary.

use super::scan::SourceText;
use super::Language;

/// The name a call writes for a function as debug information names it: `relax` for
/// `Field::relax()`, `smooth` for `Grid<double>::smooth(int, double)`, `step` for `step`.
pub fn callable_name(function: &str) -> &str {
    let no_args = match function.find('(') {
        Some(i) if i > 0 => &function[..i],
        _ => function,
    };
    // Skip template arguments when looking for the last `::`.
    let mut depth = 0;
    let mut start = 0;
    let b = no_args.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'<' => depth += 1,
            b'>' => depth -= 1,
            b':' if depth == 0 && b.get(i + 1) == Some(&b':') => {
                start = i + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    no_args[start..].trim()
}

impl SourceText {
    /// The lines that call `name` (a call, not its definition or declaration).
    pub fn calls_of(&self, name: &str) -> Vec<i64> {
        if name.is_empty() {
            return Vec::new();
        }
        match self.language {
            Language::C => self.c_calls_of(name),
            Language::Fortran => self.fortran_calls_of(name),
        }
    }

    fn c_calls_of(&self, name: &str) -> Vec<i64> {
        let code = self.code_lines();
        let mut out = Vec::new();
        let mut depth = 0i32;
        for (i, l) in code.iter().enumerate() {
            let chars: Vec<char> = l.chars().collect();
            let mut j = 0;
            while j < chars.len() {
                let c = chars[j];
                if c == '{' {
                    depth += 1;
                } else if c == '}' {
                    depth -= 1;
                } else if is_word(c) && (j == 0 || !is_word(chars[j - 1])) {
                    let end = (j..chars.len())
                        .find(|&k| !is_word(chars[k]))
                        .unwrap_or(chars.len());
                    let word: String = chars[j..end].iter().collect();
                    if word == name && depth > 0 {
                        let after: String = chars[end..].iter().collect();
                        if after.trim_start().starts_with('(')
                            && !self.c_is_definition(&code, i, end)
                        {
                            out.push(i as i64 + 1);
                        }
                    }
                    j = end;
                    continue;
                }
                j += 1;
            }
        }
        out.dedup();
        out
    }

    /// Whether the `name(` ending at `end` on line `i` opens a definition (its `)` followed by a
    /// `{`, or a declaration's type before it) rather than a call.
    fn c_is_definition(&self, code: &[String], i: usize, end: usize) -> bool {
        let rest: String = std::iter::once(code[i].chars().skip(end).collect::<String>())
            .chain(code.iter().skip(i + 1).take(4).cloned())
            .collect::<Vec<_>>()
            .join("\n");
        let mut depth = 0;
        for (k, c) in rest.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        let after = rest[k + 1..].trim_start();
                        return after.starts_with('{')
                            || after.starts_with("const")
                            || after.starts_with("override")
                            || after.starts_with(':');
                    }
                }
                _ => {}
            }
        }
        false
    }

    fn fortran_calls_of(&self, name: &str) -> Vec<i64> {
        let name = name.to_ascii_lowercase();
        let mut out = Vec::new();
        for (i, l) in self.lines().iter().enumerate() {
            let code = l.split('!').next().unwrap_or("").to_ascii_lowercase();
            let t = code.trim();
            if t.is_empty()
                || [
                    "subroutine",
                    "function",
                    "end",
                    "module procedure",
                    "interface",
                ]
                .iter()
                .any(|k| t.starts_with(k))
                || t.contains(&format!("function {name}"))
                || t.contains(&format!("subroutine {name}"))
            {
                continue;
            }
            let words: Vec<(usize, &str)> = word_spans(t);
            let calls = words.iter().enumerate().any(|(k, (at, w))| {
                *w == name
                    && (k > 0 && words[k - 1].1 == "call"
                        || t[at + w.len()..].trim_start().starts_with('('))
            });
            if calls {
                out.push(i as i64 + 1);
            }
        }
        out
    }

    /// The function (C, C++) or procedure (Fortran) whose body holds `line`.
    pub fn function_at(&self, line: i64) -> Option<String> {
        match self.language {
            Language::C => self.c_function_at(line),
            Language::Fortran => self.fortran_function_at(line),
        }
    }

    fn c_function_at(&self, line: i64) -> Option<String> {
        let code = self.code_lines();
        // Per open brace: the function whose body it opens, if it does.
        let mut open: Vec<Option<String>> = Vec::new();
        // The text since the last `;`, `{` or `}`: a function's header before its `{`.
        let mut header = String::new();
        for l in code.iter().take(usize::try_from(line).unwrap_or(0)) {
            for c in l.chars() {
                match c {
                    '{' => {
                        open.push(function_name_of_header(&header));
                        header.clear();
                    }
                    '}' => {
                        open.pop();
                        header.clear();
                    }
                    ';' => header.clear(),
                    c => header.push(c),
                }
            }
            header.push(' ');
        }
        open.into_iter().flatten().next_back()
    }

    fn fortran_function_at(&self, line: i64) -> Option<String> {
        let mut stack: Vec<String> = Vec::new();
        for (i, l) in self.lines().iter().enumerate() {
            if i as i64 + 1 > line {
                break;
            }
            let code = l
                .split('!')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            let words: Vec<&str> = word_spans(&code).into_iter().map(|(_, w)| w).collect();
            if words.first() == Some(&"end") {
                if matches!(
                    words.get(1),
                    Some(&"subroutine") | Some(&"function") | Some(&"program")
                ) {
                    stack.pop();
                }
                continue;
            }
            if let Some(k) = words
                .iter()
                .position(|w| matches!(*w, "subroutine" | "function" | "program"))
            {
                // `real(dp) function f(x)`, `recursive subroutine s`, not `x = function_of(y)`.
                let prefix_ok = words[..k].iter().all(|w| {
                    matches!(
                        *w,
                        "recursive"
                            | "pure"
                            | "elemental"
                            | "module"
                            | "real"
                            | "integer"
                            | "logical"
                            | "double"
                            | "precision"
                            | "complex"
                            | "character"
                            | "type"
                            | "dp"
                            | "kind"
                            | "8"
                            | "4"
                    )
                });
                if prefix_ok && !code.contains('=') || k == 0 {
                    if let Some(name) = words.get(k + 1) {
                        stack.push(name.to_string());
                    }
                }
            }
        }
        stack.last().cloned()
    }
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The words of `s` with their byte offsets.
fn word_spans(s: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in s.char_indices() {
        match (is_word(c), start) {
            (true, None) => start = Some(i),
            (false, Some(b)) => {
                out.push((b, &s[b..i]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(b) = start {
        out.push((b, &s[b..]));
    }
    out
}

/// The function a header (`static double sweep(double *t, int n)`, `void Field::relax()`)
/// defines, if it is one: a name followed by a parameter list, not a control statement.
fn function_name_of_header(header: &str) -> Option<String> {
    let h = header.trim();
    // A constructor's initializer list: `Grid(int n) : n_(n), u_(...)`.
    let h = match h.find(") :") {
        Some(i) => &h[..=i],
        None => h,
    };
    let h = h
        .trim_end_matches("const")
        .trim_end()
        .trim_end_matches("override")
        .trim_end();
    if !h.ends_with(')') {
        return None;
    }
    let open = {
        let mut depth = 0;
        let mut at = None;
        for (i, c) in h.char_indices().rev() {
            match c {
                ')' => depth += 1,
                '(' => {
                    depth -= 1;
                    if depth == 0 {
                        at = Some(i);
                        break;
                    }
                }
                _ => {}
            }
        }
        at?
    };
    let before = h[..open].trim_end();
    let name_start = before
        .rfind(|c: char| !(is_word(c) || c == ':' || c == '~'))
        .map_or(0, |i| i + 1);
    let name = &before[name_start..];
    let simple = name.rsplit("::").next().unwrap_or(name);
    if simple.is_empty()
        || matches!(
            simple,
            "if" | "for" | "while" | "switch" | "catch" | "do" | "else" | "return" | "sizeof"
        )
        || simple.chars().next().is_some_and(|c| c.is_ascii_digit())
    {
        return None;
    }
    Some(simple.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: &str = "static void sweep(double *t, int n);\n\
static void sweep(double *t, int n)\n{\n#pragma acc parallel loop\n    for (int i = 0; i < n; i++) t[i] = 0;\n}\n\
int main(void)\n{\n    double *T = 0;\n    for (int s = 0; s < 9; s++) {\n        sweep(T, 4);\n    }\n    if (T) sweep(T, 2);\n    return 0;\n}\n";

    #[test]
    fn c_calls_and_functions() {
        let s = SourceText::new(Language::C, C);
        assert_eq!(s.calls_of("sweep"), [11, 13]);
        assert_eq!(s.function_at(5).as_deref(), Some("sweep"));
        assert_eq!(s.function_at(11).as_deref(), Some("main"));
        assert_eq!(s.function_at(1), None);
        assert_eq!(callable_name("Grid<double>::smooth(int, double)"), "smooth");
        assert_eq!(callable_name("Field::relax()"), "relax");
        assert_eq!(callable_name("main"), "main");
    }

    #[test]
    fn cpp_methods_in_a_class_body() {
        let src = "class F {\n    double *a;\npublic:\n    F(int n) : a(new double[n]) {}\n    void relax()\n    {\n        a[0] = 1;\n    }\n};\nint main() {\n    F f(3);\n    for (int i = 0; i < 3; i++)\n        f.relax();\n}\n";
        let s = SourceText::new(Language::C, src);
        assert_eq!(s.function_at(7).as_deref(), Some("relax"));
        assert_eq!(s.calls_of("relax"), [13]);
    }

    #[test]
    fn fortran_calls_and_procedures() {
        let src = "module m\ncontains\n  subroutine step()\n    x = 1\n  end subroutine step\n  real(dp) function energy(a)\n    energy = 0\n  end function energy\nend module m\nprogram p\n  use m\n  do s = 1, 9\n    call step()\n    e = energy(x) + 1\n  end do\nend program p\n";
        let s = SourceText::new(Language::Fortran, src);
        assert_eq!(s.calls_of("step"), [13]);
        assert_eq!(s.calls_of("energy"), [14]);
        assert_eq!(s.function_at(4).as_deref(), Some("step"));
        assert_eq!(s.function_at(7).as_deref(), Some("energy"));
        assert_eq!(s.function_at(13).as_deref(), Some("p"));
    }
}

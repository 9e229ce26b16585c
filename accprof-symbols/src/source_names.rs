//! The variable a heap block was stored in, read from the statement that allocated it: GCC's
//! debug information gives the allocation's line (`double *T = malloc(nx * ny * sizeof *T);`),
//! and the statement names the pointer (`T`), how many elements it holds (`nx * ny`) and often
//! their type. A light reader of one statement, not a parser: what it cannot read it says
//! ([`Unnamed`]) rather than guesses.

/// A source file's language, as far as naming goes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Syntax {
    /// C and C++.
    C,
    Fortran,
}

impl Syntax {
    /// Fortran for .f, .for, .f90 ... (any case); C and C++ otherwise.
    pub fn of(file: &str) -> Syntax {
        let ext = file
            .rsplit_once('.')
            .map(|(_, e)| e.to_ascii_lowercase())
            .unwrap_or_default();
        if matches!(
            ext.as_str(),
            "f" | "for" | "ftn" | "f77" | "f90" | "f95" | "f03" | "f08"
        ) {
            Syntax::Fortran
        } else {
            Syntax::C
        }
    }
}

/// What an allocation statement says about the block it allocates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocTarget {
    /// The pointer or array as written: `T`, `g->a`, `arr` (`this->` dropped), `t`, `grid%u`.
    pub name: String,
    /// The element count as written (`nx * ny`), when the size is a count times `sizeof`; for
    /// Fortran, the shape (`nx, ny`).
    pub extent: Option<String>,
    /// The element size in bytes, when the statement names a basic type.
    pub element_bytes: Option<u64>,
}

/// Why a statement names no variable, in a word or two for the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unnamed {
    /// `return malloc(...)`: a helper allocates it; its caller's variable is not on this line.
    Returned,
    /// The line holds no allocation call we know (a library's allocator, a macro).
    NoAllocation,
    /// The allocation is not stored in a variable on this line (passed straight to a call).
    NotStored,
    /// Several allocations on the line and the trace cannot tell which one this is.
    Ambiguous,
}

impl Unnamed {
    /// The reason as the report words it.
    pub fn word(self) -> &'static str {
        match self {
            Unnamed::Returned => "returned",
            Unnamed::NoAllocation => "no allocation call",
            Unnamed::NotStored => "not stored",
            Unnamed::Ambiguous => "ambiguous",
        }
    }
}

/// The block allocated by the statement around `line` (1-based) of `lines`, the `ordinal`-th
/// allocation on that line (from 1; `None` when the trace used one allocation there).
pub fn allocation_target(
    lines: &[&str],
    line: usize,
    syntax: Syntax,
    ordinal: Option<usize>,
) -> Result<AllocTarget, Unnamed> {
    match syntax {
        Syntax::C => c_target(&c_statements(lines, line), ordinal),
        Syntax::Fortran => fortran_target(&fortran_statement(lines, line), ordinal),
    }
}

/// The std::vector a C++ line constructs or grows at `column` (from 1): `u` of a constructor's
/// initializer `u(n, 0.0)`, `y` of `std::vector<double> x(n), y(m);`, `g.v` of `g.v.resize(k)`.
pub fn vector_at(line: &str, column: u32) -> Option<AllocTarget> {
    let chars: Vec<char> = line.chars().collect();
    let at = usize::try_from(column).ok()?.checked_sub(1)?;
    let start = (0..=at.min(chars.len())).rev().find(|&i| {
        i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == '.' || chars[i - 1] == '>')
    })?;
    let rest: String = chars[start..].iter().collect();
    let name_end = rest
        .find(|c: char| !(is_ident(c) || c == '.' || c == '-' || c == '>'))
        .unwrap_or(rest.len());
    let (path, tail) = rest.split_at(name_end);
    let tail = tail.trim_start();
    let (receiver, call) = match path.rsplit_once('.') {
        // `g.v.resize(k)`: the method's receiver.
        Some((r, m)) if matches!(m, "resize" | "assign" | "reserve") => (r, Some(m)),
        _ => (path, None),
    };
    let name = lvalue_of(receiver.trim_start_matches("this->"))?;
    let args = if tail.starts_with('(') {
        group(tail, '(', ')').map(arguments)
    } else {
        None
    };
    Some(AllocTarget {
        extent: Some(vector_extent(
            &name,
            call.unwrap_or("vector"),
            args.as_deref(),
        )),
        name: format!("{name}{CONTAINER_DATA}"),
        element_bytes: None,
    })
}

/// How many elements a vector's data holds after `how` (`vector`: its construction, or the
/// method called on it) with `args`: the count a construction, `resize` or `assign` gives,
/// else (grown by an element, to a capacity, or with no count written) all it holds.
fn vector_extent(name: &str, how: &str, args: Option<&[String]>) -> String {
    let count = args
        .and_then(|a| a.first())
        .filter(|a| !a.is_empty() && matches!(how, "vector" | "resize" | "assign"));
    count.map_or_else(|| format!("{name}.size()"), |a| tidy(a))
}

/// The bytes of one element of C basic type `ty` (`double`, `unsigned long`, `float _Complex`).
pub fn c_type_bytes(ty: &str) -> Option<u64> {
    let words: Vec<&str> = ty
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| {
            !w.is_empty()
                && !matches!(
                    *w,
                    "const" | "volatile" | "restrict" | "__restrict" | "__restrict__" | "std"
                )
        })
        .collect();
    let complex = words.iter().any(|w| *w == "_Complex" || *w == "complex");
    let base: Vec<&str> = words
        .iter()
        .copied()
        .filter(|w| !matches!(*w, "signed" | "unsigned" | "_Complex" | "complex"))
        .collect();
    let bytes = match base.as_slice() {
        ["double"] => 8,
        ["long", "double"] => 16,
        ["float"] => 4,
        ["char"] | ["int8_t"] | ["uint8_t"] | ["bool"] | ["_Bool"] => 1,
        ["short"] | ["short", "int"] | ["int16_t"] | ["uint16_t"] => 2,
        ["int"] | ["int32_t"] | ["uint32_t"] => 4,
        [] if ty.contains("unsigned") || ty.contains("signed") => 4,
        ["long"] | ["long", "int"] | ["long", "long"] | ["long", "long", "int"] => 8,
        ["int64_t"] | ["uint64_t"] | ["size_t"] | ["ptrdiff_t"] | ["intptr_t"] | ["uintptr_t"] => 8,
        _ => return None,
    };
    Some(if complex { bytes * 2 } else { bytes })
}

/// The C statements that line `line` is part of (several when the line holds several, as a
/// constructor's body on one line does), comments and strings blanked.
fn c_statements(lines: &[&str], line: usize) -> Vec<String> {
    if line == 0 || line > lines.len() {
        return Vec::new();
    }
    // A statement rarely spans more than a few lines: look that far either way.
    let from = line.saturating_sub(4).max(1);
    let to = (line + 4).min(lines.len());
    let mut text = String::new();
    let (mut line_start, mut line_end) = (0, 0);
    for n in from..=to {
        if n == line {
            line_start = text.len();
        }
        let l = lines[n - 1];
        // Preprocessor lines are not statements.
        if l.trim_start().starts_with('#') {
            text.push_str(&" ".repeat(l.len()));
        } else {
            text.push_str(l);
        }
        if n == line {
            line_end = text.len();
        }
        text.push('\n');
    }
    let code = blank_c_comments(&text);
    // Statements end at `;`, `{` and `}` outside parentheses and brackets.
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut begin = 0;
    for (i, b) in code.bytes().enumerate() {
        match b {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b';' | b'{' | b'}' if depth <= 0 => {
                // Its first character on or before the line, its end on or after it.
                let first = code[begin..i]
                    .find(|c: char| !c.is_whitespace())
                    .map(|k| begin + k);
                if i >= line_start && first.is_some_and(|f| f < line_end) {
                    out.push(code[begin..i].to_string());
                }
                depth = 0;
                begin = i + 1;
            }
            _ => {}
        }
    }
    if code[begin..].trim_start().len() > code.len() - line_end {
        out.push(code[begin..].to_string());
    }
    out
}

/// `text` with comments and string and character literals replaced by spaces.
fn blank_c_comments(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('*') {
            let mut j = i + 2;
            while j + 1 < b.len() && !(b[j] == '*' && b[j + 1] == '/') {
                j += 1;
            }
            let stop = (j + 2).min(b.len());
            for &k in &b[i..stop] {
                out.push(if k == '\n' { '\n' } else { ' ' });
            }
            i = stop;
        } else if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '"' || c == '\'' {
            out.push(' ');
            i += 1;
            while i < b.len() && b[i] != c && b[i] != '\n' {
                if b[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                out.push(' ');
                i += 1;
            }
            if i < b.len() {
                out.push(' ');
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// An allocation in a C/C++ statement: where its call starts, its callee and its arguments.
struct CallSite {
    start: usize,
    callee: String,
    /// The arguments' text (`new T[n]`: the bracket's contents and the type).
    args: Vec<String>,
    /// For `new T[n]`: `T`; for a std::vector's construction: its element type.
    new_type: Option<String>,
    /// For a std::vector constructed or resized: the vector (`x` of `std::vector<double>
    /// x(n)`, `g.v` of `g.v.resize(n)`).
    container: Option<String>,
}

/// The name a std::vector's data goes by: the vector's, with `.data()` (a clause takes a
/// pointer to it: data_label::pointer_for).
pub const CONTAINER_DATA: &str = ".data()";

/// The std::vector constructions of a statement that allocate: declarators with a count
/// (`std::vector<double> x(n, 1.0), y(n);`, `vector<float> z = vector<float>(n);`), each with
/// the position of its name.
fn vector_declarations(chars: &[char], at: usize) -> Vec<CallSite> {
    let rest: String = chars[at..].iter().collect();
    let Some(args) = group(&rest, '<', '>') else {
        return Vec::new();
    };
    let ty = args.trim().to_string();
    let after_at = at + args.chars().count() + 2;
    let after: String = chars[after_at..].iter().collect();
    let mut out = Vec::new();
    let mut offset = after_at;
    for decl in split_top(&after, ',') {
        let start = offset + decl.chars().count() - decl.trim_start().chars().count();
        offset += decl.chars().count() + 1;
        let d = decl.trim();
        let name_end = d.find(|c: char| !is_ident(c)).unwrap_or(d.len());
        let name = &d[..name_end];
        let tail = d[name_end..].trim_start();
        let call_args = if tail.starts_with('(') {
            group(tail, '(', ')')
        } else if let Some(init) = tail.strip_prefix('=') {
            // `= std::vector<double>(n)`: the count in the constructor's parentheses.
            init.find('(').and_then(|i| group(&init[i..], '(', ')'))
        } else {
            None
        };
        let Some(call_args) = call_args.filter(|a| !a.trim().is_empty()) else {
            continue;
        };
        if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        out.push(CallSite {
            start,
            callee: "vector".into(),
            args: arguments(call_args),
            new_type: Some(ty.clone()),
            container: Some(name.to_string()),
        });
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether a called function allocates: the C library's allocators, OpenACC's acc_malloc, and
/// any function whose name says it does (`xmalloc`, `aligned_alloc_f`).
fn is_allocator(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    (lower.contains("alloc") || lower.ends_with("memalign"))
        && !lower.contains("free")
        && !lower.starts_with("de")
}

/// The allocation calls of a statement, in order.
fn c_calls(stmt: &str) -> Vec<CallSite> {
    let chars: Vec<char> = stmt.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !is_ident(chars[i]) || (i > 0 && is_ident(chars[i - 1])) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len() && is_ident(chars[j]) {
            j += 1;
        }
        let word: String = chars[i..j].iter().collect();
        let mut k = j;
        while k < chars.len() && chars[k].is_whitespace() {
            k += 1;
        }
        if word == "new" {
            // `new T[n]`, `new (std::nothrow) T[n]`: the type up to `[`, `(` or the end.
            let rest: String = chars[k..].iter().collect();
            let rest = rest.trim_start();
            let rest = match rest.strip_prefix('(') {
                Some(r) => r.split_once(')').map_or(r, |(_, after)| after).trim_start(),
                None => rest,
            };
            let ty_end = rest.find(['[', '(', ';', ',', ')']).unwrap_or(rest.len());
            let ty = rest[..ty_end].trim().to_string();
            let args = if rest[ty_end..].starts_with('[') {
                group(&rest[ty_end..], '[', ']')
                    .map(|g| vec![g.to_string()])
                    .unwrap_or_default()
            } else {
                Vec::new()
            };
            out.push(CallSite {
                start: i,
                callee: "new".into(),
                args,
                new_type: Some(ty),
                container: None,
            });
            i = j;
            continue;
        }
        if word == "vector" && chars.get(k) == Some(&'<') {
            out.extend(vector_declarations(&chars, k));
            i = j;
            continue;
        }
        if matches!(
            word.as_str(),
            "resize" | "assign" | "reserve" | "push_back" | "emplace_back" | "insert"
        ) && chars.get(k) == Some(&'(')
            && i > 0
            && chars[i - 1] == '.'
        {
            // `x.resize(n)`, `g.v.assign(n, 0.0)`, `v.push_back(x)` (growing it): the vector
            // before the dot.
            let before: String = chars[..i - 1].iter().collect();
            let receiver = last_postfix(before.trim_end());
            let rest: String = chars[k..].iter().collect();
            if let (false, Some(inner)) = (receiver.is_empty(), group(&rest, '(', ')')) {
                out.push(CallSite {
                    start: i,
                    callee: word,
                    args: arguments(inner),
                    new_type: None,
                    container: Some(receiver.to_string()),
                });
            }
            i = j;
            continue;
        }
        if chars.get(k) == Some(&'(') && is_allocator(&word) {
            // A qualified name starts at its qualifier: `std::malloc`.
            let mut start = i;
            while start >= 2 && chars[start - 1] == ':' && chars[start - 2] == ':' {
                start -= 2;
                while start > 0 && is_ident(chars[start - 1]) {
                    start -= 1;
                }
            }
            let rest: String = chars[k..].iter().collect();
            if let Some(inner) = group(&rest, '(', ')') {
                out.push(CallSite {
                    start,
                    callee: word,
                    args: arguments(inner),
                    new_type: None,
                    container: None,
                });
            }
        }
        i = j;
    }
    out
}

/// A call's arguments, each trimmed.
fn arguments(inner: &str) -> Vec<String> {
    split_top(inner, ',')
        .into_iter()
        .map(|a| a.trim().to_string())
        .collect()
}

/// The contents of the group that `s` starts with (`s` begins with `open`).
fn group(s: &str, open: char, close: char) -> Option<&str> {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(&s[open.len_utf8()..i]);
            }
        }
    }
    None
}

/// `s` split at `sep` outside parentheses and brackets.
fn split_top(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            c if c == sep && depth == 0 => {
                out.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn c_target(statements: &[String], ordinal: Option<usize>) -> Result<AllocTarget, Unnamed> {
    let calls: Vec<(&str, CallSite)> = statements
        .iter()
        .flat_map(|s| c_calls(s).into_iter().map(move |c| (s.as_str(), c)))
        .collect();
    let (stmt, call) = match (calls.len(), ordinal) {
        (0, _) => return Err(Unnamed::NoAllocation),
        (1, None | Some(1)) => &calls[0],
        (_, Some(k)) if k >= 1 && k <= calls.len() => &calls[k - 1],
        _ => return Err(Unnamed::Ambiguous),
    };
    if let Some(v) = &call.container {
        // A vector's data, `count` elements of its type (`x(n)`, `x(n, 1.0)`, `x.resize(n)`);
        // grown by an element (`push_back`) or to a capacity (`reserve`): all it holds.
        let name = lvalue_of(v).ok_or(Unnamed::NotStored)?;
        return Ok(AllocTarget {
            extent: Some(vector_extent(&name, &call.callee, Some(&call.args))),
            name: format!("{name}{CONTAINER_DATA}"),
            element_bytes: call.new_type.as_deref().and_then(c_type_bytes),
        });
    }
    let chars: Vec<char> = stmt.chars().collect();
    let before: String = chars[..call.start].iter().collect();
    let (extent, mut element_bytes) = c_extent(call);
    // posix_memalign(&p, align, size): the first argument.
    if call.callee == "posix_memalign" {
        let first = call.args.first().ok_or(Unnamed::NotStored)?;
        let name = strip_casts(first).trim_start_matches('&').trim();
        let name = lvalue_of(name).ok_or(Unnamed::NotStored)?;
        return Ok(AllocTarget {
            name,
            extent,
            element_bytes,
        });
    }
    let lhs = before.trim_end();
    // Casts between the assignment and the call: `(double *)`, `static_cast<double *>(`.
    let (lhs, cast) = strip_trailing_casts(lhs);
    if element_bytes.is_none() {
        element_bytes = cast.as_deref().and_then(c_type_bytes);
    }
    if let Some(assign) = lhs.strip_suffix('=') {
        if assign.ends_with(['=', '!', '<', '>']) {
            return Err(Unnamed::NotStored);
        }
        let assign = assign.trim_end();
        let name = lvalue_of(assign).ok_or(Unnamed::NotStored)?;
        if element_bytes.is_none() {
            // The declaration on the same statement: `double *restrict T = ...`.
            let decl = &assign[..assign.len() - last_postfix(assign).len()];
            if decl.contains('*') {
                element_bytes = c_type_bytes(decl.trim_end().trim_end_matches('*'));
            }
        }
        return Ok(AllocTarget {
            name,
            extent,
            element_bytes,
        });
    }
    let trimmed = lhs.trim_end();
    if trimmed.ends_with("return") {
        return Err(Unnamed::Returned);
    }
    // A constructor's member initializer: `u_(new T[n])` after `:` or `,`.
    if let Some(open) = trimmed.strip_suffix('(') {
        let name = last_postfix(open.trim_end());
        let before_name = open.trim_end()[..open.trim_end().len() - name.len()].trim_end();
        if !name.is_empty()
            && name.chars().all(is_ident)
            && (before_name.ends_with(':') || before_name.ends_with(','))
        {
            return Ok(AllocTarget {
                name: name.to_string(),
                extent,
                element_bytes,
            });
        }
    }
    Err(Unnamed::NotStored)
}

/// The element count and size of an allocation call's size argument.
fn c_extent(call: &CallSite) -> (Option<String>, Option<u64>) {
    if let Some(ty) = &call.new_type {
        let bytes = c_type_bytes(ty);
        return (call.args.first().map(|a| tidy(a)), bytes);
    }
    let size = match call.callee.as_str() {
        "calloc" => {
            let n = call.args.first().map(|a| tidy(a));
            let bytes = call.args.get(1).and_then(|s| sizeof_type(s));
            return (n, bytes);
        }
        "realloc" | "aligned_alloc" => call.args.get(1),
        "posix_memalign" => call.args.get(2),
        _ => call.args.first(),
    };
    let Some(size) = size else {
        return (None, None);
    };
    let factors = split_top(size, '*');
    let sizeofs: Vec<usize> = factors
        .iter()
        .enumerate()
        .filter(|(_, f)| f.trim_start().starts_with("sizeof"))
        .map(|(i, _)| i)
        .collect();
    let [i] = sizeofs[..] else {
        return (None, None);
    };
    // `sizeof *T` splits at its `*`: the operand is the next factor.
    let operand = (factors[i].trim() == "sizeof").then_some(i + 1);
    let bytes = sizeof_type(factors[i]);
    let rest: Vec<&str> = factors
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != i && Some(*j) != operand)
        .map(|(_, f)| f.trim())
        .collect();
    let extent = if rest.is_empty() {
        "1".to_string()
    } else {
        tidy(&rest.join(" * "))
    };
    (Some(extent), bytes)
}

/// The bytes of `sizeof(type)`, when the type is a basic one.
fn sizeof_type(s: &str) -> Option<u64> {
    let inner = s.trim().strip_prefix("sizeof")?.trim();
    let inner = group(inner, '(', ')')?;
    c_type_bytes(inner)
}

/// An expression as compact as a clause writes it (`nx*ny`: whitespace only between words),
/// without the outer parentheses of a whole expression.
fn tidy(s: &str) -> String {
    let mut t = String::with_capacity(s.len());
    let mut gap = false;
    for c in s.chars() {
        if c.is_whitespace() {
            gap = true;
            continue;
        }
        if gap && t.ends_with(is_ident) && is_ident(c) {
            t.push(' ');
        }
        gap = false;
        t.push(c);
    }
    while t.starts_with('(') && group(&t, '(', ')').map(str::len) == Some(t.len() - 2) {
        t = t[1..t.len() - 1].trim().to_string();
    }
    t
}

/// `lhs` without the casts at its end, and the first cast's type.
fn strip_trailing_casts(lhs: &str) -> (&str, Option<String>) {
    let mut s = lhs.trim_end();
    let mut ty = None;
    loop {
        if let Some(open) = s.strip_suffix('(') {
            // `static_cast<double *>(`, `reinterpret_cast<T*>(`.
            if let Some(lt) = open.trim_end().strip_suffix('>') {
                if let Some(pos) = lt.rfind('<') {
                    let kw = lt[..pos].trim_end();
                    if kw.ends_with("_cast") {
                        ty.get_or_insert_with(|| {
                            lt[pos + 1..]
                                .trim()
                                .trim_end_matches('*')
                                .trim()
                                .to_string()
                        });
                        s = kw[..kw.len() - last_postfix(kw).len()].trim_end();
                        continue;
                    }
                }
            }
            // A parenthesis around the call, `(malloc(n))`, not a call's: `u_(new T[n])`.
            if !open.trim_end().ends_with(is_ident) {
                s = open.trim_end();
                continue;
            }
            return (s, ty);
        }
        if let Some(close) = s.strip_suffix(')') {
            // `(double *)`: a type in parentheses ends in `*`.
            if let Some(pos) = close.rfind('(') {
                let inner = close[pos + 1..].trim();
                if inner.ends_with('*') {
                    ty.get_or_insert_with(|| inner.trim_end_matches('*').trim().to_string());
                    s = close[..pos].trim_end();
                    continue;
                }
            }
        }
        return (s, ty);
    }
}

fn strip_casts(s: &str) -> &str {
    let mut s = s.trim();
    while let Some(rest) = s.strip_prefix('(') {
        match rest.find(')') {
            Some(end) if rest[..end].trim_end().ends_with('*') => s = rest[end + 1..].trim(),
            _ => break,
        }
    }
    s
}

/// The postfix expression `s` ends with: identifiers joined by `->`, `.` and `::`, with
/// subscripts (`g->a`, `this->arr`, `p[i]`).
fn last_postfix(s: &str) -> &str {
    let b = s.as_bytes();
    let mut i = b.len();
    loop {
        // An identifier.
        let end = i;
        while i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
            i -= 1;
        }
        if i == end {
            // A subscript `[...]` before which another part comes.
            if i > 0 && b[i - 1] == b']' {
                let mut depth = 0;
                while i > 0 {
                    i -= 1;
                    match b[i] {
                        b']' => depth += 1,
                        b'[' => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                continue;
            }
            return &s[i..];
        }
        // Joined to what comes before by `->`, `.` or `::`?
        let t = &s[..i];
        if t.ends_with("->") || t.ends_with("::") {
            i -= 2;
        } else if t.ends_with('.') {
            i -= 1;
        } else {
            return &s[i..];
        }
    }
}

/// The variable an assignment's left side names, as the program writes it where it is used:
/// `this->` dropped, and nothing but a postfix expression.
fn lvalue_of(lhs: &str) -> Option<String> {
    let name = last_postfix(lhs.trim()).trim();
    let name = name.strip_prefix("this->").unwrap_or(name);
    let first = name.chars().next()?;
    (first.is_ascii_alphabetic() || first == '_').then(|| name.to_string())
}

/// The text of the Fortran statement at line `line`, with continuation lines joined and
/// comments dropped.
fn fortran_statement(lines: &[&str], line: usize) -> String {
    if line == 0 || line > lines.len() {
        return String::new();
    }
    let code = |n: usize| -> String {
        let l = lines[n - 1];
        // A `!` outside a string starts a comment.
        let mut out = String::new();
        let mut quote = None;
        for c in l.chars() {
            match quote {
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None if c == '\'' || c == '"' => quote = Some(c),
                None if c == '!' => break,
                None => {}
            }
            out.push(c);
        }
        out
    };
    // Back to the statement's first line: the lines before that end in `&`.
    let mut first = line;
    while first > 1 && code(first - 1).trim_end().ends_with('&') {
        first -= 1;
    }
    let mut text = String::new();
    let mut n = first;
    while n <= lines.len() {
        let c = code(n);
        let t = c.trim();
        let t = t.strip_prefix('&').unwrap_or(t);
        let continues = t.ends_with('&');
        text.push_str(t.trim_end_matches('&'));
        text.push(' ');
        if !continues {
            break;
        }
        n += 1;
    }
    text
}

fn fortran_target(stmt: &str, ordinal: Option<usize>) -> Result<AllocTarget, Unnamed> {
    let lower = stmt.to_ascii_lowercase();
    let Some(pos) = lower
        .match_indices("allocate")
        .map(|(i, _)| i)
        .find(|&i| i == 0 || !is_ident(lower[..i].chars().next_back().unwrap_or(' ')))
    else {
        return Err(Unnamed::NoAllocation);
    };
    let rest = stmt[pos + "allocate".len()..].trim_start();
    let inner = group(rest, '(', ')').ok_or(Unnamed::NoAllocation)?;
    let objects: Vec<&str> = split_top(inner, ',')
        .into_iter()
        .map(str::trim)
        .filter(|o| !o.contains('=') && !o.contains("::") && !o.is_empty())
        .collect();
    let object = match (objects.len(), ordinal) {
        (0, _) => return Err(Unnamed::NoAllocation),
        (1, None | Some(1)) => objects[0],
        (_, Some(k)) if k >= 1 && k <= objects.len() => objects[k - 1],
        _ => return Err(Unnamed::Ambiguous),
    };
    // `t(nx, ny)`, `grid%u(0:n+1)`: the name and the shape.
    let (name, shape) = match object.rfind('(') {
        Some(open) if object.ends_with(')') => (
            object[..open].trim(),
            Some(tidy(&object[open + 1..object.len() - 1])),
        ),
        _ => (object, None),
    };
    if name.is_empty() {
        return Err(Unnamed::NotStored);
    }
    Ok(AllocTarget {
        name: name.to_ascii_lowercase().replace(' ', ""),
        extent: shape,
        element_bytes: None,
    })
}

/// The pointer the free on `line` releases: the first argument of `acc_free(...)` or
/// `free(...)` (C), or of `deallocate(...)` (Fortran).
pub fn freed_pointer(lines: &[&str], line: usize, syntax: Syntax) -> Option<String> {
    let text = lines.get(line.checked_sub(1)?)?;
    let lower = text.to_ascii_lowercase();
    let call = match syntax {
        Syntax::C => ["acc_free", "free"].iter().find_map(|f| {
            lower
                .match_indices(f)
                .map(|(i, _)| i)
                .find(|&i| {
                    (i == 0 || !is_ident(lower[..i].chars().next_back().unwrap_or(' ')))
                        && lower[i + f.len()..].trim_start().starts_with('(')
                })
                .map(|i| i + f.len())
        })?,
        Syntax::Fortran => lower.find("deallocate")? + "deallocate".len(),
    };
    let rest = text[call..].trim_start();
    let inner = group(rest, '(', ')')?;
    let first = split_top(inner, ',').into_iter().next()?;
    lvalue_of(strip_casts(first))
}

/// The line that closes the data region whose directive is on `line`: Fortran's `!$acc end
/// data` (nested regions counted), or in C and C++ the `}` of the block after the pragma.
pub fn data_region_end(lines: &[&str], line: usize, syntax: Syntax) -> Option<usize> {
    if line == 0 || line > lines.len() {
        return None;
    }
    match syntax {
        Syntax::Fortran => {
            let mut depth = 0;
            for (i, l) in lines.iter().enumerate().skip(line) {
                let t = l.trim_start().to_ascii_lowercase();
                let Some(rest) = t.strip_prefix("!$acc") else {
                    continue;
                };
                let words: Vec<&str> = rest.split_whitespace().collect();
                match words.as_slice() {
                    ["data", ..] => depth += 1,
                    ["end", "data", ..] | ["enddata", ..] => {
                        if depth == 0 {
                            return Some(i + 1);
                        }
                        depth -= 1;
                    }
                    _ => {}
                }
            }
            None
        }
        Syntax::C => {
            // The directive may continue over `\` lines; the block starts after it.
            let mut first = line;
            while first <= lines.len() && lines[first - 1].trim_end().ends_with('\\') {
                first += 1;
            }
            let text: Vec<String> = lines[first..]
                .iter()
                .map(|l| {
                    if l.trim_start().starts_with('#') {
                        String::new()
                    } else {
                        l.to_string()
                    }
                })
                .collect();
            let code = blank_c_comments(&text.join("\n"));
            let mut depth = 0;
            let mut n = first + 1;
            for c in code.chars() {
                match c {
                    '\n' => n += 1,
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(n);
                        }
                    }
                    // A region over one statement (no block): it ends with the statement.
                    ';' if depth == 0 => return Some(n),
                    _ => {}
                }
            }
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(src: &str, line: usize, ordinal: Option<usize>) -> Result<AllocTarget, Unnamed> {
        let lines: Vec<&str> = src.lines().collect();
        allocation_target(&lines, line, Syntax::C, ordinal)
    }

    fn name(r: Result<AllocTarget, Unnamed>) -> (String, Option<String>, Option<u64>) {
        let t = r.expect("a target");
        (t.name, t.extent, t.element_bytes)
    }

    #[test]
    fn c_declarations_assignments_and_members() {
        assert_eq!(
            name(c(
                "    double *T = malloc(nx * ny * sizeof(double));",
                1,
                None
            )),
            ("T".into(), Some("nx*ny".into()), Some(8))
        );
        assert_eq!(
            name(c(
                "double *restrict Tnew = (double *)calloc(nx*ny, sizeof(double));",
                1,
                None
            )),
            ("Tnew".into(), Some("nx*ny".into()), Some(8))
        );
        assert_eq!(
            name(c(
                "  g->a = malloc(sizeof(double) * g->n); /* = x */",
                1,
                None
            )),
            ("g->a".into(), Some("g->n".into()), Some(8))
        );
        assert_eq!(
            name(c("float *p = malloc((n + 2) * sizeof *p);", 1, None)),
            ("p".into(), Some("n+2".into()), Some(4)),
            "sizeof of an expression: the type from the declaration"
        );
        assert_eq!(
            name(c("this->arr = new double[n];", 1, None)),
            ("arr".into(), Some("n".into()), Some(8))
        );
        assert_eq!(
            name(c(
                "    arr = static_cast<float *>(std::malloc(n * sizeof(float)));",
                1,
                None
            )),
            ("arr".into(), Some("n".into()), Some(4))
        );
        assert_eq!(
            name(c(
                "if (posix_memalign((void **)&buf, 64, n * sizeof(double)) != 0)",
                1,
                None
            )),
            ("buf".into(), Some("n".into()), Some(8))
        );
        assert_eq!(
            name(c("  s.v[k] = malloc(bytes);", 1, None)),
            ("s.v[k]".into(), None, None)
        );
    }

    #[test]
    fn the_vector_at_a_column_is_named() {
        let init = "    Field(int n_) : n(n_), u(n_, 1.0), v(n_, 0.0) {}";
        let at = |c: u32| vector_at(init, c).map(|t| (t.name, t.extent));
        assert_eq!(at(28), Some(("u.data()".into(), Some("n_".into()))));
        assert_eq!(at(40), Some(("v.data()".into(), Some("n_".into()))));
        let decl = "  std::vector<float> a(n), b(2 * n);";
        assert_eq!(
            vector_at(decl, 29).map(|t| (t.name, t.extent)),
            Some(("b.data()".into(), Some("2*n".into())))
        );
        assert_eq!(
            vector_at("    g.v.resize(k);", 5).map(|t| (t.name, t.extent)),
            Some(("g.v.data()".into(), Some("k".into())))
        );
    }

    #[test]
    fn std_vectors_are_named_by_their_data() {
        let two = "    std::vector<double> x(n, 1.0), y(n * 2);";
        assert_eq!(
            name(c(two, 1, Some(1))),
            ("x.data()".into(), Some("n".into()), Some(8))
        );
        assert_eq!(
            name(c(two, 1, Some(2))),
            ("y.data()".into(), Some("n*2".into()), Some(8))
        );
        assert_eq!(
            name(c("vector<float> z = vector<float>(nx * ny);", 1, None)),
            ("z.data()".into(), Some("nx*ny".into()), Some(4))
        );
        assert_eq!(
            name(c("  g.v.resize(g.n);", 1, None)),
            ("g.v.data()".into(), Some("g.n".into()), None)
        );
        assert_eq!(
            name(c("      v.push_back(x * 2);", 1, None)),
            ("v.data()".into(), Some("v.size()".into()), None)
        );
        // `w` allocates nothing: the one allocation is `u`'s.
        assert_eq!(name(c("std::vector<int> w, u(m);", 1, None)).0, "u.data()");
    }

    #[test]
    fn c_statements_over_several_lines_and_initializer_lists() {
        let src = "int main(void)\n{\n    double *T =\n        malloc(n * sizeof(double));\n}\n";
        assert_eq!(name(c(src, 4, None)).0, "T");
        let two = "    double *T = malloc(n * sizeof(double));\n    double *U = malloc(n * sizeof(double));\n";
        assert_eq!(
            name(c(two, 1, None)).0,
            "T",
            "the next line's statement is not this line's"
        );
        assert_eq!(name(c(two, 2, None)).0, "U");
        let init = "    explicit Grid(std::size_t n) : n_(n), u_(new T[n]), v_(new T[n])\n    {\n";
        assert_eq!(name(c(init, 1, Some(1))).0, "u_");
        assert_eq!(
            name(c(init, 1, Some(2))),
            ("v_".into(), Some("n".into()), None)
        );
        assert_eq!(c(init, 1, None), Err(Unnamed::Ambiguous));
        let body = "    Field(int m) : n(m) { arr = new double[n]; for (int i = 0; i < n; i++) arr[i] = 0; }";
        assert_eq!(
            name(c(body, 1, None)),
            ("arr".into(), Some("n".into()), Some(8))
        );
    }

    #[test]
    fn c_allocations_that_name_nothing_say_why() {
        assert_eq!(c("    return malloc(n);", 1, None), Err(Unnamed::Returned));
        assert_eq!(
            c("    fill(malloc(n), 3);", 1, None),
            Err(Unnamed::NotStored)
        );
        assert_eq!(
            c("    x = make_grid(n);", 1, None),
            Err(Unnamed::NoAllocation)
        );
        assert_eq!(
            c("    if (malloc(n) == p) {", 1, None),
            Err(Unnamed::NotStored)
        );
    }

    #[test]
    fn fortran_allocate_lists() {
        let src = "  allocate(t(nx, ny), &\n           tnew(nx, ny), stat=ierr) ! both\n";
        let lines: Vec<&str> = src.lines().collect();
        let f = |line, k| allocation_target(&lines, line, Syntax::Fortran, k);
        assert_eq!(
            name(f(1, Some(1))),
            ("t".into(), Some("nx,ny".into()), None)
        );
        assert_eq!(name(f(2, Some(2))).0, "tnew");
        assert_eq!(f(1, None), Err(Unnamed::Ambiguous));
        let one = ["    ALLOCATE ( Grid%U(0:N+1) )"];
        assert_eq!(
            name(allocation_target(&one, 1, Syntax::Fortran, None)),
            ("grid%u".into(), Some("0:N+1".into()), None)
        );
        assert_eq!(
            allocation_target(&["x = 1"], 1, Syntax::Fortran, None),
            Err(Unnamed::NoAllocation)
        );
    }

    #[test]
    fn data_regions_end_at_their_closing_line() {
        let f = [
            "  !$acc data copy(t)",
            "  !$acc data create(u)",
            "  x = 1",
            "  !$acc end data",
            "  !$acc end data",
            "end subroutine",
        ];
        assert_eq!(data_region_end(&f, 1, Syntax::Fortran), Some(5));
        assert_eq!(data_region_end(&f, 2, Syntax::Fortran), Some(4));
        let c = [
            "#pragma acc data copy(a[0:n]) \\",
            "    create(b[0:n])",
            "{",
            "    /* } */ f(\"}\");",
            "}",
            "return;",
        ];
        assert_eq!(data_region_end(&c, 1, Syntax::C), Some(5));
    }

    #[test]
    fn frees_name_their_pointer() {
        assert_eq!(
            freed_pointer(&["    acc_free(tmp);"], 1, Syntax::C).as_deref(),
            Some("tmp")
        );
        assert_eq!(
            freed_pointer(&["free((void *)g->a);"], 1, Syntax::C).as_deref(),
            Some("g->a")
        );
        assert_eq!(
            freed_pointer(&["  deallocate(t, tnew)"], 1, Syntax::Fortran).as_deref(),
            Some("t")
        );
        assert_eq!(freed_pointer(&["  x = freelist(3);"], 1, Syntax::C), None);
    }

    #[test]
    fn basic_types_have_sizes() {
        assert_eq!(c_type_bytes("double"), Some(8));
        assert_eq!(c_type_bytes("const unsigned long"), Some(8));
        assert_eq!(c_type_bytes("unsigned"), Some(4));
        assert_eq!(c_type_bytes("double _Complex"), Some(16));
        assert_eq!(c_type_bytes("struct cell"), None);
        assert_eq!(Syntax::of("a.F90"), Syntax::Fortran);
        assert_eq!(Syntax::of("a.cpp"), Syntax::C);
    }
}

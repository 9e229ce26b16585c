//! The directives a fix writes: an array as a clause takes it, and a directive of the program
//! with one array moved from one clause to another (`copy(a, b)` to `copy(a) copyout(b)`).

use super::names::Name;
use super::source::{Lang, Line};
use accprof_analysis::advise::clauses::clause_item;
use accprof_symbols::base_name;

/// How the fix's clause names the array: the trace's source name as the advice writes it in
/// the program's language (`T[0:nx*ny]`, a Fortran array by its name), or, for a C pointer
/// whose name has no section, `p[0:n]` from its declaration in the source; None when the array
/// has no name a clause can take.
pub fn item(name: &Name, bytes: u64, source: Option<&Line>, lang: Lang) -> Option<String> {
    let clause = clause_item(name.clause.as_ref()?, lang.language())?;
    if lang == Lang::Fortran || clause.contains(['[', '(']) {
        return Some(clause);
    }
    let text = source.and_then(|l| super::source::read_source(&l.file));
    Some(
        text.and_then(|t| pointer_section(&t, &clause, bytes))
            .unwrap_or(clause),
    )
}

/// `p[0:n]` when the C source declares `p` as a pointer to a type of known size that divides
/// `bytes`.
fn pointer_section(text: &str, var: &str, bytes: u64) -> Option<String> {
    for (ty, size) in [
        ("double", 8),
        ("float", 4),
        ("int", 4),
        ("long", 8),
        ("char", 1),
    ] {
        let pointer = text.lines().any(|l| {
            let l: String = l.split_whitespace().collect::<Vec<_>>().join(" ");
            [
                format!("{ty} *{var}"),
                format!("{ty}* {var}"),
                format!("{ty} * {var}"),
            ]
            .iter()
            .any(|d| {
                l.match_indices(d.as_str()).any(|(i, _)| {
                    !l[i + d.len()..]
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                })
            })
        });
        if pointer && bytes.is_multiple_of(size) {
            return Some(format!("{var}[0:{}]", bytes / size));
        }
    }
    None
}

/// A directive of the fix: `body` in the program's language, with the array the clause
/// cannot name said in words.
pub fn directive(lang: Lang, body: &str, item: &Option<String>, name: &Name) -> String {
    match item {
        Some(x) => lang.directive(&body.replace("{}", x)),
        None => format!(
            "{} for {} (under the name your code holds it by)",
            lang.directive(&body.replace("{}", "...")),
            name.variable
        ),
    }
}

/// The directive at `line` with `var` given `clause`: taken out of the clause it is in among
/// `replacing` (the clause dropped when it names nothing else), or added to the directive when
/// it is in none of them, as the fix for a construct's data clauses.
pub fn moved(
    line: Option<&Line>,
    lang: Lang,
    var: &str,
    clause: &str,
    replacing: &[&str],
) -> String {
    let text = line.and_then(Line::text).map(|t| t.trim().to_string());
    match text {
        Some(t) if t.contains("acc") => {
            let (directive, comment) = split_comment(&t, lang);
            let directive = directive.trim_end_matches('\\').trim_end();
            let taken = replacing
                .iter()
                .find_map(|from| take_from_clause(directive, from, var));
            let fixed = match taken {
                Some((rest, item)) => format!("{rest} {clause}({item})"),
                None => format!("{directive} {clause}({var})"),
            };
            match comment {
                Some(c) => format!("{fixed} {c}"),
                None => fixed,
            }
        }
        _ => lang.directive(&format!("data {clause}({var})")),
    }
}

/// Whether the directive at `line` names `var` in a `clause(...)` list.
pub fn names_in(line: Option<&Line>, lang: Lang, clause: &str, var: &str) -> bool {
    line.and_then(Line::text)
        .is_some_and(|t| take_from_clause(split_comment(t.trim(), lang).0, clause, var).is_some())
}

/// Whether the construct at `line` names `var` in its directive or in the loop under it (the
/// lines up to the first blank one, at most 40): a kernel in a function that takes the array
/// as a pointer parameter names it otherwise.
pub fn kernel_names(line: &Line, var: &str) -> bool {
    let Some(text) = super::source::read_source(&line.file) else {
        // Without the source, the array's own name is the best guess.
        return true;
    };
    let start = (line.line as usize).saturating_sub(1);
    text.lines()
        .skip(start)
        .take(40)
        .take_while(|l| !l.trim().is_empty())
        .any(|l| names_word(l, base_name(var)))
}

/// Whether `text` holds `word` as a whole identifier.
fn names_word(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    !word.is_empty()
        && text.match_indices(word).any(|(i, _)| {
            !text[..i].chars().next_back().is_some_and(ident)
                && !text[i + word.len()..].chars().next().is_some_and(ident)
        })
}

/// A directive line's text and its trailing comment, if any.
fn split_comment(t: &str, lang: Lang) -> (&str, Option<&str>) {
    let at = match lang {
        Lang::C => t.find("/*").or_else(|| t.find("//")),
        // The directive's own `!$acc` is not a comment.
        Lang::Fortran => t
            .char_indices()
            .skip(1)
            .find(|&(i, c)| c == '!' && !t[i..].starts_with("!$acc"))
            .map(|(i, _)| i),
    };
    match at {
        Some(i) => (t[..i].trim_end(), Some(t[i..].trim())),
        None => (t, None),
    }
}

/// The directive with `var` taken out of its `clause(...)` list, and the list's item that
/// named it (`b` or `b[0:n]`); None when no such clause names it.
fn take_from_clause(directive: &str, clause: &str, var: &str) -> Option<(String, String)> {
    let want = base_name(var);
    let mut from = 0;
    while let Some(k) = directive[from..].find(&format!("{clause}(")) {
        let start = from + k;
        // A whole word: `copy(` is not the end of `pcopy(`.
        let whole = !directive[..start]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        let open = start + clause.len();
        let close = matching_paren(directive, open)?;
        if whole {
            let items = split_items(&directive[open + 1..close]);
            if let Some(i) = items.iter().position(|it| base_name(it.trim()) == want) {
                let item = items[i].trim().to_string();
                let rest: Vec<&str> = items
                    .iter()
                    .enumerate()
                    .filter(|&(j, _)| j != i)
                    .map(|(_, it)| it.trim())
                    .collect();
                let replaced = if rest.is_empty() {
                    String::new()
                } else {
                    format!("{clause}({})", rest.join(", "))
                };
                let out = format!(
                    "{}{}{}",
                    &directive[..start],
                    replaced,
                    &directive[close + 1..]
                );
                let out = out.split_whitespace().collect::<Vec<_>>().join(" ");
                return Some((out, item));
            }
        }
        from = close + 1;
    }
    None
}

/// The index of the parenthesis closing the one at `open`.
fn matching_paren(s: &str, open: usize) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in s[open..].char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// A clause's list split at its top-level commas (`a[0:n], b` is two items).
fn split_items(list: &str) -> Vec<&str> {
    let (mut items, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in list.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&list[start..]);
    items
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_array_moves_from_one_clause_to_another_and_the_rest_stays() {
        let d = "#pragma acc parallel loop copy(a, b[0:n]) present(c)";
        assert_eq!(
            take_from_clause(d, "copy", "b"),
            Some((
                "#pragma acc parallel loop copy(a) present(c)".into(),
                "b[0:n]".into()
            ))
        );
        assert_eq!(
            take_from_clause("!$acc data pcopy(x) copy(y)", "copy", "y"),
            Some(("!$acc data pcopy(x)".into(), "y".into()))
        );
        assert_eq!(take_from_clause(d, "copyin", "b"), None);
        assert_eq!(
            split_comment("!$acc data copy(y)  ! BUG: here", Lang::Fortran),
            ("!$acc data copy(y)", Some("! BUG: here"))
        );
    }

    #[test]
    fn a_name_is_a_whole_identifier() {
        assert!(names_word("    p[i] *= 2;", "p"));
        assert!(!names_word("    pq[i] *= 2;", "p"));
        assert!(!names_word("  for (int i = 0; i < n; i++)", "a"));
    }

    #[test]
    fn a_c_pointer_gets_its_section_from_its_declaration() {
        let src = "double *p = malloc(n);\nint *pq;\n";
        assert_eq!(pointer_section(src, "p", 800), Some("p[0:100]".into()));
        assert_eq!(pointer_section(src, "pq", 800), Some("pq[0:200]".into()));
        assert_eq!(pointer_section(src, "q", 800), None);
    }
}

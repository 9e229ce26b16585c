//! Data clauses a user can paste: the arrays as the program's source writes them, in its
//! language, and only those. Memory the trace could not name (`heap@util.c:12 (returned)`,
//! `host 0x7ffd...`) is never put in a clause: the advice names it in words instead.

use crate::source::Language;
use accprof_symbols::{base_name, is_source_text, pointer_for};
use std::collections::BTreeMap;

/// How `name` goes into a data clause of `lang`, if it can: C and C++ as the name is (a
/// pointer with its section, `T[0:nx*ny]`); Fortran whole arrays by their name (`t`), sections
/// as written (`t(1:10)`).
pub fn clause_item(name: &str, lang: Language) -> Option<String> {
    if !is_source_text(name) {
        return None;
    }
    Some(match lang {
        // A std::vector's data: through the pointer [`pointer_note`] declares.
        Language::C => pointer_for(name).map_or_else(|| name.to_string(), |(p, _)| p),
        // A C-style section cannot be Fortran (a runtime's name for it, or a C file's array).
        Language::Fortran if name.contains('[') => base_name(name).to_string(),
        Language::Fortran => name.to_string(),
    })
}

/// How `name` goes into a clause when no array of the directive has a name a clause can take
/// (`stand_in`): its label in angle brackets (`<host 0x7ffd...+32 KiB>`), for the user to
/// replace, so that the directive still says which array takes which clause; otherwise as
/// [`clause_item`] says.
pub fn clause_item_or_stand_in(name: &str, lang: Language, stand_in: bool) -> Option<String> {
    clause_item(name, lang).or_else(|| stand_in.then(|| format!("<{name}>")))
}

/// Whether none of `names` can go into a clause of `lang`: the directive then takes stand-ins
/// ([`clause_item_or_stand_in`]).
pub fn none_nameable<'a>(mut names: impl Iterator<Item = &'a str>, lang: Language) -> bool {
    names.all(|n| clause_item(n, lang).is_none())
}

/// The sentence that declares the pointers a directive's clauses take for std::vectors' data
/// (`x.data()[0:n]` goes in as `x_data[0:n]`): empty when there are none.
pub(crate) fn pointer_note<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let mut decls: Vec<String> = Vec::new();
    for (_, d) in names.filter_map(pointer_for) {
        if !decls.contains(&d) {
            decls.push(d);
        }
    }
    if decls.is_empty() {
        return String::new();
    }
    format!(
        "; a clause takes a pointer, not a std::vector: put `{}` just before the directive",
        decls.join(" ")
    )
}

/// `copy(A) copyin(B) create(C)` from clause name -> items, in the order OpenACC guides write
/// them.
pub(crate) fn clause_text(clauses: &BTreeMap<&str, Vec<String>>) -> String {
    let order = ["copy", "copyin", "copyout", "create"];
    order
        .iter()
        .filter_map(|k| {
            clauses
                .get(k)
                .filter(|v| !v.is_empty())
                .map(|v| format!("{k}({})", v.join(", ")))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The sentence for memory no clause can name: what it is, and what the user adds for it (or,
/// when the directive holds stand-ins for all of it, replaces).
pub(crate) fn unnamed_note(unnamed: &[String], stand_ins: bool) -> String {
    if unnamed.is_empty() {
        return String::new();
    }
    if stand_ins {
        return "; no array here has a name a clause can take (each label says what the memory is and why): put the name your code holds each by in place of its <label>".to_string();
    }
    format!(
        "; {} moved the same way but has no name a clause can take (the label says what it is and why): add it to the clause under the name your code holds it by",
        unnamed.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_source_names_go_into_clauses_in_their_language() {
        assert_eq!(
            clause_item("T[0:nx*ny]", Language::C).as_deref(),
            Some("T[0:nx*ny]")
        );
        assert_eq!(clause_item("t", Language::Fortran).as_deref(), Some("t"));
        assert_eq!(
            clause_item("a[0:n]", Language::Fortran).as_deref(),
            Some("a")
        );
        assert_eq!(clause_item("heap@x.c:3 (returned)", Language::C), None);
        assert_eq!(clause_item("host 0x7ffd0000+64 KiB", Language::C), None);
        assert_eq!(clause_item("t (descriptor)", Language::Fortran), None);
        let mut c = BTreeMap::new();
        c.insert("create", vec!["Anew".to_string()]);
        c.insert("copy", vec!["A".to_string()]);
        c.insert("copyin", vec![]);
        assert_eq!(clause_text(&c), "copy(A) create(Anew)");
    }

    #[test]
    fn a_vectors_data_goes_in_through_a_pointer_the_note_declares() {
        assert_eq!(
            clause_item("x.data()[0:n]", Language::C).as_deref(),
            Some("x_data[0:n]")
        );
        assert_eq!(
            pointer_note(["x.data()[0:n]", "A", "x.data()[0:n]"].into_iter()),
            "; a clause takes a pointer, not a std::vector: put `auto *x_data = x.data();` just before the directive"
        );
        assert_eq!(pointer_note(["A"].into_iter()), "");
    }

    #[test]
    fn a_directive_with_no_nameable_array_takes_stand_ins() {
        let labels = ["host 0x7ffd0000+64 KiB", "heap@x.c:3 (returned)"];
        assert!(none_nameable(labels.into_iter(), Language::C));
        assert!(!none_nameable(["A", labels[0]].into_iter(), Language::C));
        assert_eq!(
            clause_item_or_stand_in(labels[0], Language::C, true).as_deref(),
            Some("<host 0x7ffd0000+64 KiB>")
        );
        assert_eq!(clause_item_or_stand_in(labels[0], Language::C, false), None);
        assert_eq!(
            clause_item_or_stand_in("A", Language::C, true).as_deref(),
            Some("A")
        );
    }
}

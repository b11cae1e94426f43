//! Soufflé's fact-file format, as text in and text out (the files themselves are the
//! caller's business: the engine does no I/O).
//!
//! Reading: one tuple per line, columns separated by the delimiter (tab by default), no
//! quoting; only as many columns as the relation declares are read; an empty field is an
//! empty symbol; the last line may lack its newline. A record column is written as Soufflé
//! writes it, `[1, a, [2, b]]` or `nil` (a symbol field may be quoted, `"a, b"`); when the
//! delimiter holds a comma, one inside brackets does not end a column.

use std::sync::Arc;

use crate::ir::RelInfo;
use crate::value::{RecordType, Type, Value};
use crate::{Fact, FactSet};

/// A line of a fact file that does not fit its relation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}")]
pub struct TsvError {
    /// File name as given.
    pub file: String,
    /// One-based line.
    pub line: usize,
    /// One-based column (field number).
    pub column: usize,
    /// What is wrong, and how to fix it.
    pub message: String,
}

/// The `delimiter` parameter of an I/O directive, tab by default.
pub fn delimiter(params: &[(String, String)]) -> String {
    params
        .iter()
        .find(|(k, _)| k == "delimiter")
        .map_or_else(|| "\t".to_string(), |(_, v)| v.clone())
}

/// The `filename` parameter of an I/O directive, or `default`.
pub fn filename(params: &[(String, String)], default: &str) -> String {
    params
        .iter()
        .find(|(k, _)| k == "filename")
        .map_or_else(|| default.to_string(), |(_, v)| v.clone())
}

/// Parses the text of a fact file for `rel` into `out`, labelling each fact `FILE:LINE`;
/// `records` are the program's record types ([`crate::ir::Ir::records`]).
pub fn parse_facts(
    text: &str,
    file: &str,
    rel: &RelInfo,
    delimiter: &str,
    records: &[RecordType],
    out: &mut FactSet,
) -> Result<usize, TsvError> {
    let has_records = rel.types.iter().any(|t| matches!(t, Type::Record(_)));
    let mut lines: Vec<&str> = text.split('\n').collect();
    if lines.last() == Some(&"") {
        lines.pop();
    }
    let mut n = 0;
    for (i, line) in lines.iter().enumerate() {
        let fields: Vec<&str> = if rel.arity() == 0 {
            Vec::new()
        } else if delimiter.is_empty() {
            vec![line]
        } else if has_records && delimiter.contains(',') {
            split_outside_brackets(line, delimiter)
        } else {
            line.split(delimiter).collect()
        };
        if fields.len() < rel.arity() {
            return Err(TsvError {
                file: file.to_string(),
                line: i + 1,
                column: fields.len() + 1,
                message: format!(
                    "`{}` has {} columns but the line has {}; separate columns with {}",
                    rel.name,
                    rel.arity(),
                    fields.len(),
                    if delimiter == "\t" {
                        "a tab".to_string()
                    } else {
                        format!("`{delimiter}`")
                    }
                ),
            });
        }
        let mut values = Vec::with_capacity(rel.arity());
        for (c, ty) in rel.types.iter().enumerate() {
            let field = fields[c];
            let v = parse_value_in(field, *ty, records).ok_or_else(|| TsvError {
                file: file.to_string(),
                line: i + 1,
                column: c + 1,
                message: format!(
                    "`{field}` is not a `{}` (column `{}` of `{}`){}",
                    rel.type_names[c],
                    rel.attrs[c],
                    rel.name,
                    match ty {
                        Type::Record(id)
                            if records
                                .get(usize::from(*id))
                                .is_some_and(RecordType::is_adt) =>
                        {
                            "; write a branch as `$Name(1, a)`, or `$Name` without fields"
                        }
                        Type::Record(_) =>
                            "; write a record as `[1, a]` or `nil`, one value per field (nested at most 1000 deep)",
                        _ => "",
                    }
                ),
            })?;
            values.push(v);
        }
        out.push(
            Fact {
                relation: rel.name.clone(),
                values,
            },
            Arc::from(format!("{file}:{}", i + 1)),
        );
        n += 1;
    }
    Ok(n)
}

/// Parses one field as a value of type `ty` (not a record type: [`parse_value_in`]).
pub fn parse_value(field: &str, ty: Type) -> Option<Value> {
    parse_value_in(field, ty, &[])
}

/// Parses one field as a value of type `ty`, whose record types are `records`.
pub fn parse_value_in(field: &str, ty: Type, records: &[RecordType]) -> Option<Value> {
    if let Type::Record(_) = ty {
        let mut text = field;
        let v = record(&mut text, ty, records)?;
        return text.trim().is_empty().then_some(v);
    }
    match ty {
        Type::Symbol => Some(Value::sym(field)),
        Type::Number => parse_int(field)
            .and_then(|n| i32::try_from(n).ok())
            .map(Value::Number),
        Type::Unsigned => parse_int(field)
            .and_then(|n| u32::try_from(n).ok())
            .map(Value::Unsigned),
        Type::Float => field.trim().parse::<f32>().ok().map(Value::Float),
        Type::Record(_) => None,
    }
}

/// Splits a line at `delimiter`, except inside `[..]`.
fn split_outside_brackets<'a>(line: &'a str, delimiter: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    let (mut depth, mut start, mut i) = (0usize, 0, 0);
    let bytes = line.as_bytes();
    while i < bytes.len() {
        match bytes[i] {
            b'[' => depth += 1,
            b']' => depth = depth.saturating_sub(1),
            _ if depth == 0 && line[i..].starts_with(delimiter) => {
                out.push(&line[start..i]);
                i += delimiter.len();
                start = i;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(&line[start..]);
    out
}

/// Reads a value of `ty` from the front of `text` (a record, `nil`, a branch `$B(..)`, or one
/// of their fields: up to the next `,`, or `]` in a record, `)` in a branch), leaving the rest.
fn record(text: &mut &str, ty: Type, records: &[RecordType]) -> Option<Value> {
    record_field(text, ty, records, ']', 0)
}

fn record_field(
    text: &mut &str,
    ty: Type,
    records: &[RecordType],
    close: char,
    depth: u16,
) -> Option<Value> {
    *text = text.trim_start();
    let Type::Record(id) = ty else {
        let end = if ty == Type::Symbol && text.starts_with('"') {
            return quoted(text).map(Value::sym);
        } else {
            text.find([',', close]).unwrap_or(text.len())
        };
        let (field, rest) = text.split_at(end);
        *text = rest;
        return parse_value(field, ty);
    };
    if depth >= crate::value::MAX_RECORD_DEPTH {
        return None;
    }
    let rt = records.get(usize::from(id))?;
    if rt.is_adt() {
        // `$Name(a, b)`, `$Name` for a branch without fields (Soufflé's `[A-Za-z0-9_?.]` names).
        let rest = text.strip_prefix('$')?;
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '?' | '.')))
            .unwrap_or(rest.len());
        let (name, rest) = rest.split_at(end);
        let (_, branch) = rt.branch(name)?;
        *text = rest;
        let mut args = Vec::with_capacity(branch.fields.len());
        if !branch.fields.is_empty() {
            *text = text.trim_start().strip_prefix('(')?;
            for (i, (_, ft)) in branch.fields.iter().enumerate() {
                if i > 0 {
                    *text = text.trim_start().strip_prefix(',')?;
                }
                args.push(record_field(text, *ft, records, ')', depth + 1)?);
            }
            *text = text.trim_start().strip_prefix(')')?;
        }
        return Some(Value::Adt {
            branch: Arc::from(name),
            args: args.into(),
        });
    }
    if let Some(rest) = text.strip_prefix("nil") {
        *text = rest;
        return Some(Value::Nil);
    }
    *text = text.strip_prefix('[')?;
    let mut values = Vec::with_capacity(rt.fields.len());
    for (i, (_, ft)) in rt.fields.iter().enumerate() {
        if i > 0 {
            *text = text.trim_start().strip_prefix(',')?;
        }
        values.push(record_field(text, *ft, records, ']', depth + 1)?);
    }
    *text = text.trim_start().strip_prefix(']')?;
    Some(Value::Record(values.into()))
}

/// A double-quoted symbol at the front of `text` (`\x` reads as `x`), leaving the rest.
fn quoted(text: &mut &str) -> Option<String> {
    let mut out = String::new();
    let mut chars = text.char_indices().skip(1);
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                *text = &text[i + 1..];
                return Some(out);
            }
            '\\' => out.push(chars.next()?.1),
            c => out.push(c),
        }
    }
    None
}

fn parse_int(s: &str) -> Option<i64> {
    let s = s.trim();
    let (neg, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let v = if let Some(h) = digits.strip_prefix("0x") {
        i64::from_str_radix(h, 16).ok()?
    } else if let Some(b) = digits.strip_prefix("0b") {
        i64::from_str_radix(b, 2).ok()?
    } else {
        digits.parse::<i64>().ok()?
    };
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Span;

    fn rel(types: &[Type]) -> RelInfo {
        RelInfo {
            name: "r".into(),
            attrs: (0..types.len()).map(|i| format!("a{i}")).collect(),
            types: types.to_vec(),
            type_names: types.iter().map(|t| t.as_str().to_string()).collect(),
            span: Span::default(),
            input: None,
            output: None,
            printsize: false,
        }
    }

    #[test]
    fn extra_columns_are_ignored_and_empty_fields_are_empty_symbols() {
        let mut out = FactSet::new();
        let n = parse_facts(
            "a\t1\textra\n\t2",
            "r.facts",
            &rel(&[Type::Symbol, Type::Number]),
            "\t",
            &[],
            &mut out,
        )
        .unwrap();
        assert_eq!(n, 2);
        let facts: Vec<_> = out
            .iter()
            .map(|(f, o)| (f.values.clone(), o.to_string()))
            .collect();
        assert_eq!(
            facts[0],
            (
                vec![Value::sym("a"), Value::Number(1)],
                "r.facts:1".to_string()
            )
        );
        assert_eq!(
            facts[1],
            (
                vec![Value::sym(""), Value::Number(2)],
                "r.facts:2".to_string()
            )
        );
    }

    #[test]
    fn a_bad_number_names_file_line_and_column() {
        let mut out = FactSet::new();
        let err = parse_facts(
            "a\t1\nb\tx\n",
            "r.facts",
            &rel(&[Type::Symbol, Type::Number]),
            "\t",
            &[],
            &mut out,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "r.facts:2:2: `x` is not a `number` (column `a1` of `r`)"
        );
    }
}

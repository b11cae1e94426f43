//! Soufflé's fact-file format, as text in and text out (the files themselves are the
//! caller's business: the engine does no I/O).
//!
//! Reading: one tuple per line, columns separated by the delimiter (tab by default), no
//! quoting; only as many columns as the relation declares are read; an empty field is an
//! empty symbol; the last line may lack its newline.

use std::sync::Arc;

use crate::ir::RelInfo;
use crate::value::{Type, Value};
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

/// Parses the text of a fact file for `rel` into `out`, labelling each fact `FILE:LINE`.
pub fn parse_facts(
    text: &str,
    file: &str,
    rel: &RelInfo,
    delimiter: &str,
    out: &mut FactSet,
) -> Result<usize, TsvError> {
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
            let v = parse_value(field, *ty).ok_or_else(|| TsvError {
                file: file.to_string(),
                line: i + 1,
                column: c + 1,
                message: format!(
                    "`{field}` is not a `{ty}` (column `{}` of `{}`)",
                    rel.attrs[c], rel.name
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

/// Parses one field as a value of type `ty`.
pub fn parse_value(field: &str, ty: Type) -> Option<Value> {
    match ty {
        Type::Symbol => Some(Value::sym(field)),
        Type::Number => parse_int(field)
            .and_then(|n| i32::try_from(n).ok())
            .map(Value::Number),
        Type::Unsigned => parse_int(field)
            .and_then(|n| u32::try_from(n).ok())
            .map(Value::Unsigned),
        Type::Float => field.trim().parse::<f32>().ok().map(Value::Float),
    }
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
            &mut out,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "r.facts:2:2: `x` is not a `number` (column `a1` of `r`)"
        );
    }
}

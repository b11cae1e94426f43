//! `#if` conditions: integer expressions with C's operators and precedence (after `defined`
//! and macros are replaced; a name left over is 0, as in C).

/// The value of a condition.
pub(super) fn evaluate(text: &str) -> Result<i64, String> {
    let tokens = tokens(text)?;
    if tokens.is_empty() {
        return Err("`#if` needs a condition".into());
    }
    let mut p = Parser { tokens, pos: 0 };
    let v = p.binary(0)?;
    match p.tokens.get(p.pos) {
        None => Ok(v),
        Some(t) => Err(format!("unexpected `{}` in the condition", t.text())),
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(i64),
    Op(&'static str),
}

impl Tok {
    fn text(&self) -> String {
        match self {
            Tok::Num(n) => n.to_string(),
            Tok::Op(o) => (*o).to_string(),
        }
    }
}

const OPS: [&str; 23] = [
    "||", "&&", "==", "!=", "<=", ">=", "<<", ">>", "<", ">", "+", "-", "*", "/", "%", "!", "~",
    "(", ")", "&", "|", "^", "?",
];

fn tokens(text: &str) -> Result<Vec<Tok>, String> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_whitespace() {
            i += 1;
        } else if b.is_ascii_digit() {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Num(number(&text[start..i])?));
        } else if b.is_ascii_alphabetic() || b == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Num(0));
        } else if let Some(op) = OPS.iter().find(|o| text[i..].starts_with(**o)) {
            if *op == "?" {
                return Err("`? :` in conditions is not supported".into());
            }
            out.push(Tok::Op(op));
            i += op.len();
        } else {
            let c = text[i..].chars().next().unwrap_or('?');
            return Err(format!("unexpected `{c}` in the condition"));
        }
    }
    Ok(out)
}

/// A C integer literal: decimal, `0x` hex, `0` octal, with `u`/`l` suffixes ignored.
fn number(text: &str) -> Result<i64, String> {
    let digits = text.trim_end_matches(['u', 'U', 'l', 'L']);
    let parsed = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        i64::from_str_radix(hex, 16)
    } else if digits.len() > 1 && digits.starts_with('0') {
        i64::from_str_radix(&digits[1..], 8)
    } else {
        digits.parse()
    };
    parsed.map_err(|_| format!("`{text}` is not an integer"))
}

/// Binary operators by level, loosest first.
const LEVELS: [&[&str]; 10] = [
    &["||"],
    &["&&"],
    &["|"],
    &["^"],
    &["&"],
    &["==", "!="],
    &["<", ">", "<=", ">="],
    &["<<", ">>"],
    &["+", "-"],
    &["*", "/", "%"],
];

struct Parser {
    tokens: Vec<Tok>,
    pos: usize,
}

impl Parser {
    fn peek_op(&self) -> Option<&'static str> {
        match self.tokens.get(self.pos) {
            Some(Tok::Op(o)) => Some(o),
            _ => None,
        }
    }

    fn binary(&mut self, level: usize) -> Result<i64, String> {
        if level == LEVELS.len() {
            return self.unary(0);
        }
        let mut lhs = self.binary(level + 1)?;
        while let Some(op) = self.peek_op().filter(|o| LEVELS[level].contains(o)) {
            self.pos += 1;
            let rhs = self.binary(level + 1)?;
            lhs = apply(op, lhs, rhs)?;
        }
        Ok(lhs)
    }

    fn unary(&mut self, depth: usize) -> Result<i64, String> {
        if depth > 256 {
            return Err("the condition nests too deeply".into());
        }
        let tok = self.tokens.get(self.pos).cloned();
        self.pos += 1;
        match tok {
            Some(Tok::Num(n)) => Ok(n),
            Some(Tok::Op("!")) => Ok(i64::from(self.unary(depth + 1)? == 0)),
            Some(Tok::Op("~")) => Ok(!self.unary(depth + 1)?),
            Some(Tok::Op("-")) => Ok(self.unary(depth + 1)?.wrapping_neg()),
            Some(Tok::Op("+")) => self.unary(depth + 1),
            Some(Tok::Op("(")) => {
                let v = self.binary(0)?;
                match self.tokens.get(self.pos) {
                    Some(Tok::Op(")")) => {
                        self.pos += 1;
                        Ok(v)
                    }
                    _ => Err("expected `)` in the condition".into()),
                }
            }
            Some(t) => Err(format!("unexpected `{}` in the condition", t.text())),
            None => Err("the condition ends too early".into()),
        }
    }
}

fn apply(op: &str, a: i64, b: i64) -> Result<i64, String> {
    Ok(match op {
        "||" => i64::from(a != 0 || b != 0),
        "&&" => i64::from(a != 0 && b != 0),
        "|" => a | b,
        "^" => a ^ b,
        "&" => a & b,
        "==" => i64::from(a == b),
        "!=" => i64::from(a != b),
        "<" => i64::from(a < b),
        ">" => i64::from(a > b),
        "<=" => i64::from(a <= b),
        ">=" => i64::from(a >= b),
        "<<" => a.wrapping_shl(u32::try_from(b & 63).unwrap_or(0)),
        ">>" => a.wrapping_shr(u32::try_from(b & 63).unwrap_or(0)),
        "+" => a.wrapping_add(b),
        "-" => a.wrapping_sub(b),
        "*" => a.wrapping_mul(b),
        "/" | "%" if b == 0 => return Err("division by zero in the condition".into()),
        "/" => a.wrapping_div(b),
        _ => a.wrapping_rem(b),
    })
}

#[cfg(test)]
mod tests {
    use super::evaluate;

    #[test]
    fn c_precedence_and_values() {
        for (text, want) in [
            ("1 + 2 * 3", 7),
            ("(1 + 2) * 3", 9),
            ("1 || 0 && 0", 1),
            ("!0 && 2 > 1", 1),
            ("0x10 == 16", 1),
            ("010", 8),
            ("-3 / 2", -1),
            ("7 % 3 << 2", 4),
            ("UNDEFINED_NAME", 0),
            ("1 | 2 ^ 3 & 4", 3),
        ] {
            assert_eq!(evaluate(text), Ok(want), "{text}");
        }
        assert!(evaluate("1 / 0").is_err());
        assert!(evaluate("(1").is_err());
        assert!(evaluate("").is_err());
        assert!(evaluate("1 ? 2 : 3").is_err());
    }
}

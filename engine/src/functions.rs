//! The meaning of every operator and functor, on typed 32-bit slots.
//!
//! Shared by the evaluator, the naive reference evaluator and the proof checker, so that all
//! three agree on what `-7 / 2` or `substr("abc", 3, 1)` is. Soufflé's conventions apply:
//! wrapping 32-bit arithmetic, division truncating toward zero, `%` taking the sign of the left
//! operand, whole-string `match`, needle-first `contains`, clipped zero-based `substr`.
//! Where Soufflé aborts the whole program (division by zero, `to_number` of a non-number) the
//! rule instance yields nothing instead.

use std::cmp::Ordering;
use std::sync::{Arc, RwLock};

use regex::Regex;
use rustc_hash::FxHashMap as HashMap;

use crate::ast::{ArithOp, CmpOp, Conversion, TestFn, UnaryOp};
use crate::value::Type;

/// Applies an arithmetic operator. `None` for division or remainder by zero. A power is
/// computed as Soufflé computes it, in floating point (`std::pow`) converted back as the
/// x86-64 machines Soufflé runs on convert: see [`signed_pow`] and [`unsigned_pow`].
pub fn arith(op: ArithOp, ty: Type, a: u32, b: u32) -> Option<u32> {
    Some(match ty {
        Type::Number => {
            let (a, b) = (a as i32, b as i32);
            let truth = |x: bool| i32::from(x);
            (match op {
                ArithOp::Add => a.wrapping_add(b),
                ArithOp::Sub => a.wrapping_sub(b),
                ArithOp::Mul => a.wrapping_mul(b),
                ArithOp::Div => a
                    .checked_div(b)
                    .or_else(|| (b == -1).then(|| a.wrapping_neg()))?,
                ArithOp::Mod => a.checked_rem(b).or_else(|| (b == -1).then_some(0))?,
                ArithOp::Pow => signed_pow(a, b),
                ArithOp::BAnd => a & b,
                ArithOp::BOr => a | b,
                ArithOp::BXor => a ^ b,
                // Shift counts are taken modulo 32, as the hardware Soufflé runs on does.
                ArithOp::BShl => a.wrapping_shl(b as u32),
                ArithOp::BShr => a.wrapping_shr(b as u32),
                ArithOp::BShrU => (a as u32).wrapping_shr(b as u32) as i32,
                ArithOp::LAnd => truth(a != 0 && b != 0),
                ArithOp::LOr => truth(a != 0 || b != 0),
                ArithOp::LXor => truth((a != 0) != (b != 0)),
            }) as u32
        }
        Type::Unsigned => {
            let truth = |x: bool| u32::from(x);
            match op {
                ArithOp::Add => a.wrapping_add(b),
                ArithOp::Sub => a.wrapping_sub(b),
                ArithOp::Mul => a.wrapping_mul(b),
                ArithOp::Div => a.checked_div(b)?,
                ArithOp::Mod => a.checked_rem(b)?,
                ArithOp::Pow => unsigned_pow(a, b),
                ArithOp::BAnd => a & b,
                ArithOp::BOr => a | b,
                ArithOp::BXor => a ^ b,
                ArithOp::BShl => a.wrapping_shl(b),
                ArithOp::BShr | ArithOp::BShrU => a.wrapping_shr(b),
                ArithOp::LAnd => truth(a != 0 && b != 0),
                ArithOp::LOr => truth(a != 0 || b != 0),
                ArithOp::LXor => truth((a != 0) != (b != 0)),
            }
        }
        Type::Float => {
            let (a, b) = (f32::from_bits(a), f32::from_bits(b));
            (match op {
                ArithOp::Add => a + b,
                ArithOp::Sub => a - b,
                ArithOp::Mul => a * b,
                ArithOp::Div => a / b,
                ArithOp::Mod => a % b,
                ArithOp::Pow => a.powf(b),
                // The checker refuses bitwise and logical operators on floats.
                _ => return None,
            })
            .to_bits()
        }
        Type::Symbol | Type::Record(_) => return None,
    })
}

/// `a ^ b` on numbers, as Soufflé gives it: `std::pow` of the two as doubles, converted to a
/// 32-bit integer. Exact where the result fits; a negative exponent truncates the fraction
/// toward zero (`2 ^ -1` is 0, `-1 ^ -3` is -1); a result out of range or infinite (`0 ^ -1`)
/// is what x86-64's conversion gives for it, the "integer indefinite" -2147483648.
fn signed_pow(a: i32, b: i32) -> i32 {
    let x = f64::from(a).powf(f64::from(b));
    if x.is_finite() && x > -2_147_483_649.0 && x < 2_147_483_648.0 {
        x as i32
    } else {
        i32::MIN
    }
}

/// `a ^ b` on unsigneds, as Soufflé gives it: `static_cast<uint32_t>(std::pow(a, b))`, which
/// x86-64 compiles as a conversion to a 64-bit integer keeping the low 32 bits — so
/// `2u ^ 32u` is 0 and `2^32-5` in an unsigned column is 4294967291 (Soufflé's
/// `indexed_inequalities` test); a result of 2^63 or more converts to 2^63, whose low bits are 0.
fn unsigned_pow(a: u32, b: u32) -> u32 {
    let x = f64::from(a).powf(f64::from(b));
    if x < 9_223_372_036_854_775_808.0 {
        x as i64 as u32
    } else {
        0
    }
}

/// Applies a unary operator: minus, `bnot`, `lnot` (the last two on integers only).
pub fn unary(op: UnaryOp, ty: Type, a: u32) -> Option<u32> {
    match (op, ty) {
        (UnaryOp::Neg, Type::Number) => Some((a as i32).wrapping_neg() as u32),
        (UnaryOp::Neg, Type::Unsigned) => Some(a.wrapping_neg()),
        (UnaryOp::Neg, Type::Float) => Some((-f32::from_bits(a)).to_bits()),
        (UnaryOp::BNot, Type::Number | Type::Unsigned) => Some(!a),
        (UnaryOp::LNot, Type::Number | Type::Unsigned) => Some(u32::from(a == 0)),
        _ => None,
    }
}

/// Converts a slot between numeric types, as Soufflé's `static_cast`s do where C++ defines
/// them: a number and an unsigned keep their bits; a float is truncated toward zero, and one
/// out of the target's range (or not finite) gives `None`: the rule instance yields nothing.
pub fn convert(c: Conversion, a: u32) -> Option<u32> {
    match c {
        Conversion::IToU | Conversion::UToI => Some(a),
        Conversion::IToF => Some((a as i32 as f32).to_bits()),
        Conversion::UToF => Some((a as f32).to_bits()),
        Conversion::FToI => {
            let t = f32::from_bits(a).trunc();
            (-2_147_483_648.0..2_147_483_648.0)
                .contains(&t)
                .then_some(t as i32 as u32)
        }
        Conversion::FToU => {
            let t = f32::from_bits(a).trunc();
            (0.0..4_294_967_296.0).contains(&t).then_some(t as u32)
        }
    }
}

/// The values of `range(from, to)` or `range(from, to, step)` in slots of type `ty`, in order,
/// as Soufflé gives them: with a positive step, from `from` while below `to`; with a negative
/// one, while above `to`; a zero step gives `from` once unless the range is empty; without a
/// step, 1 if `from <= to` else -1 (an unsigned range without a step counts down by one, as
/// Soufflé's `runRangeBackward`; with a step, every unsigned step is positive, so one going
/// down is empty). A step past the type's bounds ends the range.
pub fn range(ty: Type, from: u32, to: u32, step: Option<u32>) -> Range {
    Range {
        ty,
        next: Some(from),
        to,
        down: ty == Type::Unsigned && step.is_none() && from > to,
        step: step.unwrap_or_else(|| {
            let up = cmp_numeric(ty, from, to) != Ordering::Greater;
            match (ty, up) {
                (Type::Float, true) => 1.0f32.to_bits(),
                (Type::Float, false) => (-1.0f32).to_bits(),
                (_, true) => 1,
                (_, false) => u32::MAX, // -1 as a number; the largest unsigned
            }
        }),
        zero_step_done: false,
    }
}

/// The iterator [`range`] returns.
#[derive(Debug, Clone)]
pub struct Range {
    ty: Type,
    next: Option<u32>,
    to: u32,
    step: u32,
    /// An unsigned range without a step, from above `to`: counts down by one.
    down: bool,
    zero_step_done: bool,
}

impl Iterator for Range {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        let x = self.next?;
        if self.down {
            if x <= self.to {
                self.next = None;
                return None;
            }
            self.next = x.checked_sub(1);
            return Some(x);
        }
        let zero = to_bits_zero(self.ty);
        let step_sign = cmp_numeric(self.ty, self.step, zero);
        let within = match step_sign {
            Ordering::Greater => cmp_numeric(self.ty, x, self.to) == Ordering::Less,
            Ordering::Less => cmp_numeric(self.ty, x, self.to) == Ordering::Greater,
            Ordering::Equal => {
                let once =
                    !self.zero_step_done && cmp_numeric(self.ty, x, self.to) != Ordering::Equal;
                self.zero_step_done = true;
                self.next = None;
                return once.then_some(x);
            }
        };
        if !within {
            self.next = None;
            return None;
        }
        self.next = match self.ty {
            Type::Number => (x as i32).checked_add(self.step as i32).map(|n| n as u32),
            Type::Unsigned => x.checked_add(self.step),
            Type::Float => {
                let n = f32::from_bits(x) + f32::from_bits(self.step);
                (n.is_finite() && n != f32::from_bits(x)).then_some(n.to_bits())
            }
            Type::Symbol | Type::Record(_) => None,
        };
        Some(x)
    }
}

impl Range {
    /// Whether `x` is one of the values, without counting up to it for integers (a bound
    /// `x = range(0, 2000000000)` is one test, not two billion steps); floats, whose steps
    /// round, are followed until they pass `x`.
    pub fn contains(self, x: u32) -> bool {
        let Some(from) = self.next else {
            return false;
        };
        let ty = self.ty;
        if self.down {
            return self.to < x && x <= from;
        }
        let step_sign = cmp_numeric(ty, self.step, to_bits_zero(ty));
        let wide = |v: u32| match ty {
            Type::Unsigned => i64::from(v),
            _ => i64::from(v as i32),
        };
        if matches!(ty, Type::Number | Type::Unsigned) {
            let (from, to, step, x) = (wide(from), wide(self.to), wide(self.step), wide(x));
            return match step_sign {
                Ordering::Equal => x == from && from != to,
                Ordering::Greater => from <= x && x < to && (x - from) % step == 0,
                Ordering::Less => to < x && x <= from && (from - x) % (-step) == 0,
            };
        }
        let up = step_sign != Ordering::Less;
        for v in self {
            match cmp_numeric(ty, v, x) {
                Ordering::Equal => return true,
                Ordering::Greater if up => return false,
                Ordering::Less if !up => return false,
                _ => {}
            }
        }
        false
    }
}

fn to_bits_zero(ty: Type) -> u32 {
    match ty {
        Type::Float => 0.0f32.to_bits(),
        _ => 0,
    }
}

/// The `mean` aggregate's running state. Soufflé adds the values as 32-bit floats in the order
/// it meets them and divides by their count; the sum here is kept in 64 bits, exact for any
/// order unless the values' magnitudes lie more than about 2^29 apart, so that the evaluators
/// (each meets the values in an order of its own) agree, and rounded to 32 bits before the
/// division: Soufflé's result whenever its own partial sums are exact.
#[derive(Debug, Default, Clone, Copy)]
pub struct Mean {
    sum: f64,
    n: u32,
}

impl Mean {
    /// Counts one value.
    pub fn add(&mut self, x: f32) {
        self.sum += f64::from(x);
        self.n = self.n.wrapping_add(1);
    }

    /// The mean, or none for no values (no tuple, as `min` and `max` over nothing).
    pub fn value(self) -> Option<f32> {
        (self.n > 0).then(|| (self.sum as f32) / (self.n as f32))
    }
}

/// Orders two slots of one numeric type.
pub fn cmp_numeric(ty: Type, a: u32, b: u32) -> Ordering {
    match ty {
        Type::Number => (a as i32).cmp(&(b as i32)),
        Type::Float => f32::from_bits(a)
            .partial_cmp(&f32::from_bits(b))
            .unwrap_or(Ordering::Equal),
        Type::Unsigned | Type::Symbol | Type::Record(_) => a.cmp(&b),
    }
}

/// Whether an ordering satisfies a comparison operator.
pub fn holds(op: CmpOp, ord: Ordering) -> bool {
    match op {
        CmpOp::Eq => ord == Ordering::Equal,
        CmpOp::Ne => ord != Ordering::Equal,
        CmpOp::Lt => ord == Ordering::Less,
        CmpOp::Le => ord != Ordering::Greater,
        CmpOp::Gt => ord == Ordering::Greater,
        CmpOp::Ge => ord != Ordering::Less,
    }
}

/// `substr(s, start, len)`: zero-based on characters, clipped at the end; a negative start or
/// length, or a start past the end, gives `None` (Soufflé prints an error and yields `""`
/// only for some of these; failing the instance is the safe reading).
pub fn substr(s: &str, start: i32, len: i32) -> Option<String> {
    let start = usize::try_from(start).ok()?;
    let len = usize::try_from(len).ok()?;
    let count = s.chars().count();
    if start > count {
        return None;
    }
    Some(s.chars().skip(start).take(len).collect())
}

/// `to_number(s)`: a decimal integer with optional sign, surrounding whitespace allowed.
pub fn to_number(s: &str) -> Option<i32> {
    s.trim().parse::<i32>().ok()
}

/// Compiled patterns for `match` and `glob`, cached by pattern text. Clones share one cache
/// (thread-safe), so a model compiles each pattern once for all its queries: compiling a glob
/// costs far more than matching it.
#[derive(Debug, Default, Clone)]
pub struct PatternCache {
    shared: Arc<RwLock<Compiled>>,
    /// The program's record types, for the reference evaluator, which builds an algebraic
    /// data type's value by its branch's name ([`PatternCache::for_program`]).
    record_types: Arc<[crate::value::RecordType]>,
}

#[derive(Debug, Default)]
struct Compiled {
    regexes: HashMap<Arc<str>, Option<Regex>>,
    globs: HashMap<Arc<str>, Option<CompiledGlob>>,
}

/// A compiled glob. The common shapes of policy patterns (a literal name, `prefix*`, `*`) are
/// matched directly; everything else by `globset`. With `literal_separator`, `*` is `[^/]*`,
/// so the direct forms are exactly globset's meaning (`fast_globs_agree_with_globset`).
#[derive(Debug)]
enum CompiledGlob {
    /// No metacharacter: the subject equals the pattern.
    Literal(Box<str>),
    /// `PREFIX*` with a literal prefix: the subject starts with it, no `/` after.
    Prefix(Box<str>),
    Matcher(globset::GlobMatcher),
}

impl CompiledGlob {
    fn new(pattern: &str) -> Result<CompiledGlob, String> {
        let literal = |s: &str| !s.contains(['*', '?', '[', ']', '{', '}', '\\']);
        if literal(pattern) {
            return Ok(CompiledGlob::Literal(pattern.into()));
        }
        if let Some(prefix) = pattern.strip_suffix('*')
            && literal(prefix)
        {
            return Ok(CompiledGlob::Prefix(prefix.into()));
        }
        compile_glob(pattern).map(CompiledGlob::Matcher)
    }

    fn is_match(&self, subject: &str) -> bool {
        match self {
            CompiledGlob::Literal(l) => subject == &**l,
            CompiledGlob::Prefix(p) => subject
                .strip_prefix(&**p)
                .is_some_and(|rest| !rest.contains('/')),
            CompiledGlob::Matcher(m) => m.is_match(subject),
        }
    }
}

/// Patterns kept per cache at most; past that, new ones are compiled each time (patterns
/// usually come from policy, but a program may take them from requests).
const MAX_CACHED_PATTERNS: usize = 10_000;

impl PatternCache {
    /// A cache for evaluating over values the program whose record types are `record_types`.
    pub fn for_program(record_types: Arc<[crate::value::RecordType]>) -> Self {
        PatternCache {
            record_types,
            ..PatternCache::default()
        }
    }

    /// The name of branch `b` of type `t`.
    pub(crate) fn branch_name(&self, t: u16, b: u16) -> Option<Arc<str>> {
        let rt = self.record_types.get(usize::from(t))?;
        Some(Arc::from(rt.branches.get(usize::from(b))?.name.as_str()))
    }

    /// Evaluates a test functor. An invalid pattern never matches (the checker reports
    /// invalid constant patterns before evaluation).
    pub fn test(&mut self, func: TestFn, pattern: &str, subject: &str) -> bool {
        match func {
            TestFn::Contains => subject.contains(pattern),
            TestFn::Match => {
                if let Ok(c) = self.shared.read()
                    && let Some(re) = c.regexes.get(pattern)
                {
                    return re.as_ref().is_some_and(|re| re.is_match(subject));
                }
                let re = compile_regex(pattern).ok();
                let hit = re.as_ref().is_some_and(|re| re.is_match(subject));
                if let Ok(mut c) = self.shared.write()
                    && c.regexes.len() < MAX_CACHED_PATTERNS
                {
                    c.regexes.insert(Arc::from(pattern), re);
                }
                hit
            }
            TestFn::Glob => {
                if let Ok(c) = self.shared.read()
                    && let Some(g) = c.globs.get(pattern)
                {
                    return g.as_ref().is_some_and(|g| g.is_match(subject));
                }
                let g = CompiledGlob::new(pattern).ok();
                let hit = g.as_ref().is_some_and(|g| g.is_match(subject));
                if let Ok(mut c) = self.shared.write()
                    && c.globs.len() < MAX_CACHED_PATTERNS
                {
                    c.globs.insert(Arc::from(pattern), g);
                }
                hit
            }
        }
    }
}

/// Compiles a `match` pattern anchored at both ends (whole-string semantics).
pub fn compile_regex(pattern: &str) -> Result<Regex, String> {
    Regex::new(&format!("^(?:{pattern})$")).map_err(|e| e.to_string())
}

/// Compiles a `glob` pattern: `*` and `?` stay within one `/`-separated segment, `**` crosses
/// segments, `[abc]` and `{a,b}` are classes and alternatives. Tool names without `/`
/// (`fs.read`, `shell.*`) therefore glob as plain strings.
pub fn compile_glob(pattern: &str) -> Result<globset::GlobMatcher, String> {
    globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .empty_alternates(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn range_contains_agrees_with_its_values() {
        for from in -6i32..6 {
            for to in -6i32..6 {
                for step in [None, Some(-3), Some(-1), Some(0), Some(1), Some(2)] {
                    let r = || {
                        super::range(
                            Type::Number,
                            from as u32,
                            to as u32,
                            step.map(|s: i32| s as u32),
                        )
                    };
                    let values: Vec<u32> = r().collect();
                    for x in -8i32..8 {
                        assert_eq!(
                            r().contains(x as u32),
                            values.contains(&(x as u32)),
                            "{from} {to} {step:?} {x}"
                        );
                    }
                }
            }
        }
        assert!(super::range(Type::Number, 0, 2_000_000_000, None).contains(1_999_999_999));
        let u = |a, b, s: Option<u32>, x| super::range(Type::Unsigned, a, b, s).contains(x);
        assert!(u(2, 9, Some(3), 8) && !u(2, 9, Some(3), 7));
        // Without a step an unsigned range counts down (Soufflé's `runRangeBackward`); with
        // one, every unsigned step goes up, so a range from above is empty.
        assert!(u(9, 2, None, 5) && u(9, 2, None, 9) && !u(9, 2, None, 2) && !u(9, 2, Some(1), 5));
        let down: Vec<u32> = super::range(Type::Unsigned, 3, 0, None).collect();
        assert_eq!(down, [3, 2, 1]);
    }

    #[test]
    fn range_counts_like_souffle() {
        let n = |v: i32| v as u32;
        let nums = |from, to, step: Option<i32>| -> Vec<i32> {
            super::range(Type::Number, n(from), n(to), step.map(n))
                .map(|x| x as i32)
                .collect()
        };
        assert_eq!(nums(1, 5, None), [1, 2, 3, 4]);
        assert_eq!(nums(5, 1, None), [5, 4, 3, 2]);
        assert_eq!(nums(3, 3, None), Vec::<i32>::new());
        assert_eq!(nums(0, 10, Some(3)), [0, 3, 6, 9]);
        assert_eq!(nums(10, 0, Some(-4)), [10, 6, 2]);
        assert_eq!(nums(0, 10, Some(-1)), Vec::<i32>::new());
        assert_eq!(nums(2, 5, Some(0)), [2]);
        assert_eq!(nums(5, 5, Some(0)), Vec::<i32>::new());
        assert_eq!(nums(i32::MAX - 2, i32::MAX, Some(5)), [i32::MAX - 2]);
        let uns: Vec<u32> = super::range(Type::Unsigned, 2, 5, None).collect();
        assert_eq!(uns, [2, 3, 4]);
        let down: Vec<u32> = super::range(Type::Unsigned, 5, 2, None).collect();
        assert_eq!(down, [5, 4, 3]);
        assert_eq!(super::range(Type::Unsigned, 5, 2, Some(1)).count(), 0);
        let floats: Vec<f32> = super::range(Type::Float, 0.5f32.to_bits(), 2.0f32.to_bits(), None)
            .map(f32::from_bits)
            .collect();
        assert_eq!(floats, [0.5, 1.5]);
    }

    use super::*;

    fn num(n: i32) -> u32 {
        n as u32
    }

    #[test]
    fn division_truncates_toward_zero_and_modulo_follows_left_sign() {
        let d = |a, b| arith(ArithOp::Div, Type::Number, num(a), num(b)).map(|x| x as i32);
        let m = |a, b| arith(ArithOp::Mod, Type::Number, num(a), num(b)).map(|x| x as i32);
        assert_eq!(d(-7, 2), Some(-3));
        assert_eq!(d(7, -2), Some(-3));
        assert_eq!(m(-7, 2), Some(-1));
        assert_eq!(m(7, -2), Some(1));
        assert_eq!(d(1, 0), None);
        assert_eq!(d(i32::MIN, -1), Some(i32::MIN));
    }

    #[test]
    fn arithmetic_wraps_at_32_bits() {
        let r = arith(ArithOp::Add, Type::Number, num(i32::MAX), num(1));
        assert_eq!(r.map(|x| x as i32), Some(i32::MIN));
    }

    #[test]
    fn substr_is_zero_based_and_clipped() {
        assert_eq!(substr("hello", 1, 3).as_deref(), Some("ell"));
        assert_eq!(substr("hello", 3, 10).as_deref(), Some("lo"));
        assert_eq!(substr("hello", 5, 1).as_deref(), Some(""));
        assert_eq!(substr("hello", 6, 1), None);
    }

    #[test]
    fn match_is_whole_string_and_contains_is_needle_first() {
        let mut p = PatternCache::default();
        assert!(p.test(TestFn::Match, "a.*", "abc"));
        assert!(!p.test(TestFn::Match, "a.*", "xab"));
        assert!(p.test(TestFn::Contains, "b", "abc"));
        assert!(!p.test(TestFn::Contains, "abc", "b"));
    }

    #[test]
    fn glob_star_stays_in_a_segment() {
        let mut p = PatternCache::default();
        assert!(p.test(TestFn::Glob, "shell.*", "shell.exec"));
        assert!(p.test(TestFn::Glob, "src/*.rs", "src/main.rs"));
        assert!(!p.test(TestFn::Glob, "src/*.rs", "src/a/main.rs"));
        assert!(p.test(TestFn::Glob, "src/**/*.rs", "src/a/main.rs"));
        assert!(!p.test(TestFn::Glob, "fs.read", "fs.write"));
    }

    #[test]
    fn patterns_are_compiled_once_per_model_not_per_query() {
        // A model hands a clone of its cache to every query; all clones share what is compiled.
        let model = PatternCache::default();
        let mut query_a = model.clone();
        let mut query_b = model.clone();
        assert!(query_a.test(TestFn::Glob, "fs.read*", "fs.read_file"));
        assert!(query_b.test(TestFn::Glob, "fs.read*", "fs.read_dir"));
        assert!(!query_b.test(TestFn::Match, "a+", "b"));
        let compiled = model.shared.read().unwrap();
        assert_eq!((compiled.globs.len(), compiled.regexes.len()), (1, 1));
    }

    #[test]
    fn fast_globs_agree_with_globset() {
        let patterns = [
            "", "*", "fs.read", "fs.read*", "cat03.*", "a/*", "a/", "src/", "é*", "a b*", "a.b.c",
            "org:acme", "/", "//*",
        ];
        let subjects = [
            "",
            "fs.read",
            "fs.read_file",
            "fs.readx/y",
            "cat03.tool001",
            "cat03.",
            "cat030",
            "a/",
            "a/b",
            "a/b/c",
            "a",
            "/",
            "//",
            "//x",
            "x/",
            "é",
            "éa",
            "éa/b",
            "a b c",
            "a.b.c",
            "aXb.c",
            "org:acme",
            "org:acme/repo",
        ];
        for p in patterns {
            let fast = CompiledGlob::new(p).unwrap();
            assert!(!matches!(fast, CompiledGlob::Matcher(_)), "{p}");
            let slow = compile_glob(p).unwrap();
            for s in subjects {
                assert_eq!(fast.is_match(s), slow.is_match(s), "`{p}` on `{s}`");
            }
        }
    }

    #[test]
    fn glob_empty_alternative_matches_the_empty_choice() {
        let mut p = PatternCache::default();
        assert!(p.test(TestFn::Glob, "a{,b}", "a"));
        assert!(p.test(TestFn::Glob, "a{,b}", "ab"));
        assert!(p.test(TestFn::Glob, "org:acme{,/**}", "org:acme"));
        assert!(p.test(TestFn::Glob, "org:acme{,/**}", "org:acme/repo:api"));
    }
}

//! The syntax tree of a Datalog program, as written, with byte spans into its source.
//!
//! The parser produces it, the checker validates and lowers it, the proof checker re-reads it.
//! Nothing here is resolved yet: names are strings, types are names.

use std::fmt;

use crate::value::Type;

/// A half-open byte range `start..end` into the source text of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Span {
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

impl Span {
    /// A span from `start` to `end`.
    pub fn new(start: usize, end: usize) -> Self {
        Span {
            start: u32::try_from(start).unwrap_or(u32::MAX),
            end: u32::try_from(end).unwrap_or(u32::MAX),
        }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span {
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

/// A name with where it was written.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Ident {
    /// The name as written.
    pub name: String,
    /// Where.
    pub span: Span,
}

impl fmt::Display for Ident {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// A whole program: one source file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Program {
    /// `.type` declarations, in source order.
    pub types: Vec<TypeDecl>,
    /// `.decl` declarations, in source order.
    pub decls: Vec<RelDecl>,
    /// `.input` / `.output` / `.printsize` directives, in source order.
    pub directives: Vec<Directive>,
    /// Facts and rules, in source order. A fact is a clause with an empty body.
    pub clauses: Vec<Clause>,
    /// `.pragma "key" "value"` directives, in source order.
    pub pragmas: Vec<Pragma>,
    /// `.comp` definitions, in source order (expanded away by `components::expand`).
    pub components: Vec<Component>,
    /// `.init` instantiations, in source order (expanded away by `components::expand`).
    pub inits: Vec<Init>,
    /// `.override r` lines (only meaningful in a component's body).
    pub overrides: Vec<Ident>,
    /// `.functor` declarations, in source order.
    pub functors: Vec<FunctorDecl>,
}

/// `.functor name(x: T, ...): R`: a functor implemented by the host (see `functors`).
#[derive(Debug, Clone, PartialEq)]
pub struct FunctorDecl {
    /// Its name (called as `@name(...)`).
    pub name: Ident,
    /// The parameters' types.
    pub params: Vec<Ident>,
    /// The type of its value.
    pub ret: Ident,
    /// The whole declaration.
    pub span: Span,
}

/// `.comp Name<T, ...> : Base<A, ...>, ... { body }`.
#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    /// The component's name.
    pub name: Ident,
    /// Its type parameters.
    pub params: Vec<Ident>,
    /// The components it inherits from, with their type arguments.
    pub bases: Vec<CompRef>,
    /// What it declares: types, relations, clauses, directives, nested components and
    /// instantiations, overrides.
    pub body: Program,
    /// From `.comp` to the closing `}`.
    pub span: Span,
}

/// A component named with its type arguments: `Graph<N>`, `DiGraph`.
#[derive(Debug, Clone, PartialEq)]
pub struct CompRef {
    /// The component's name.
    pub name: Ident,
    /// Its type arguments, in order.
    pub args: Vec<Ident>,
    /// Where it was written.
    pub span: Span,
}

/// `.init name = Component<Args>`: an instance whose relations are named `name.relation`.
#[derive(Debug, Clone, PartialEq)]
pub struct Init {
    /// The instance's name.
    pub name: Ident,
    /// The component instantiated.
    pub comp: CompRef,
    /// The whole directive.
    pub span: Span,
}

/// `.pragma "key"` or `.pragma "key" "value"`: a Soufflé command-line option set in the program.
#[derive(Debug, Clone, PartialEq)]
pub struct Pragma {
    /// The option's name (`fact-dir`, `jobs`, ...).
    pub key: String,
    /// Its value (`""` when the pragma gives none, as Soufflé sets a flag).
    pub value: String,
    /// The whole directive.
    pub span: Span,
}

/// `.type Name <: base`, `.type Name = base` or `.type Name = A | B`.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeDecl {
    /// The new type's name.
    pub name: Ident,
    /// What it stands for: one or more type names (several for a union `A | B`); none for a
    /// record type.
    pub bases: Vec<Ident>,
    /// A record type's fields (`.type P = [a: number, b: P]`): names and type names.
    pub fields: Option<Vec<FieldDecl>>,
    /// An algebraic data type's branches (`.type T = A {x: number} | B {}`), as written:
    /// each branch's name and fields.
    pub branches: Option<Vec<(Ident, Vec<FieldDecl>)>>,
    /// The whole declaration.
    pub span: Span,
}

/// A field of a record type or a branch: its name and its type's name.
pub type FieldDecl = (Ident, Ident);

/// `.decl name(attr: type, ...)`.
#[derive(Debug, Clone, PartialEq)]
pub struct RelDecl {
    /// Relation name.
    pub name: Ident,
    /// Attributes in order.
    pub attrs: Vec<Attr>,
    /// Whether declared `overridable` (a derived component may replace its rules).
    pub overridable: bool,
    /// Whether declared `inline` (its rules replace its atoms where they are used,
    /// [`crate::inline`]).
    pub inline: bool,
    /// The whole declaration.
    pub span: Span,
}

/// One attribute of a relation declaration.
#[derive(Debug, Clone, PartialEq)]
pub struct Attr {
    /// Attribute name.
    pub name: Ident,
    /// Type name as written (`symbol`, `number`, `unsigned`, `float` or a declared type).
    pub ty: Ident,
}

/// Which I/O directive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirectiveKind {
    /// `.input`
    Input,
    /// `.output`
    Output,
    /// `.printsize`
    PrintSize,
}

/// `.input r`, `.output a, b`, `.input r(filename="x.tsv", delimiter=",")`.
#[derive(Debug, Clone, PartialEq)]
pub struct Directive {
    /// Which directive.
    pub kind: DirectiveKind,
    /// The relations it names.
    pub relations: Vec<Ident>,
    /// `key="value"` parameters, in order (`filename`, `delimiter`, `IO`, ...).
    pub params: Vec<(Ident, String)>,
    /// The whole directive.
    pub span: Span,
}

/// A fact (`body` empty) or a rule `heads :- body.`
#[derive(Debug, Clone, PartialEq)]
pub struct Clause {
    /// The stable rule id given by a `// @id NAME` comment line directly before the clause.
    pub id: Option<Ident>,
    /// One or more heads (`a(x), b(x) :- c(x).`).
    pub heads: Vec<Atom>,
    /// The body in disjunctive form: alternatives separated by `;` at the top level.
    /// Empty for a fact.
    pub body: Vec<Vec<Literal>>,
    /// The whole clause including the final `.`.
    pub span: Span,
}

/// One element of a rule body.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// A positive atom `r(x, "a", _)`.
    Atom(Atom),
    /// A negated atom `!r(x)`; the span covers the `!`.
    Negated(Atom, Span),
    /// A comparison `lhs op rhs`.
    Compare {
        /// Operator.
        op: CmpOp,
        /// Left operand.
        lhs: Expr,
        /// Right operand.
        rhs: Expr,
        /// The whole comparison.
        span: Span,
    },
    /// A boolean functor: `match(re, s)`, `contains(needle, s)`, `glob(pattern, s)`,
    /// possibly negated with `!`.
    Test {
        /// Which test.
        func: TestFn,
        /// Arguments.
        args: Vec<Expr>,
        /// Whether written with a leading `!`.
        negated: bool,
        /// The whole literal.
        span: Span,
    },
    /// A bracketed disjunction `( a(x) ; b(x), c(x) )` inside a body.
    Disjunction(Vec<Vec<Literal>>, Span),
}

impl Literal {
    /// Where this literal was written.
    pub fn span(&self) -> Span {
        match self {
            Literal::Atom(a) => a.span,
            Literal::Negated(_, s)
            | Literal::Compare { span: s, .. }
            | Literal::Test { span: s, .. }
            | Literal::Disjunction(_, s) => *s,
        }
    }
}

/// `relation(arg, ...)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Atom {
    /// Relation name.
    pub relation: Ident,
    /// Arguments (any expression, including `_`).
    pub args: Vec<Expr>,
    /// From the name to the closing parenthesis.
    pub span: Span,
}

/// Comparison operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CmpOp {
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CmpOp {
    /// The operator that holds exactly when this one does not (`<` and `>=`, `=` and `!=`):
    /// how Soufflé negates a constraint under `!`.
    pub fn negated(self) -> CmpOp {
        match self {
            CmpOp::Eq => CmpOp::Ne,
            CmpOp::Ne => CmpOp::Eq,
            CmpOp::Lt => CmpOp::Ge,
            CmpOp::Le => CmpOp::Gt,
            CmpOp::Gt => CmpOp::Le,
            CmpOp::Ge => CmpOp::Lt,
        }
    }

    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

/// Binary arithmetic operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ArithOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (truncates toward zero)
    Div,
    /// `%` (sign of the left operand)
    Mod,
    /// `^`: power (right-associative, binding tighter than `*`)
    Pow,
    /// `band`: bitwise and
    BAnd,
    /// `bor`: bitwise or
    BOr,
    /// `bxor`: bitwise exclusive or
    BXor,
    /// `bshl`: shift left
    BShl,
    /// `bshr`: shift right (arithmetic on numbers, logical on unsigned)
    BShr,
    /// `bshru`: shift right, logical
    BShrU,
    /// `land`: logical and (1 or 0)
    LAnd,
    /// `lor`: logical or (1 or 0)
    LOr,
    /// `lxor`: logical exclusive or (1 or 0)
    LXor,
}

impl ArithOp {
    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        match self {
            ArithOp::Add => "+",
            ArithOp::Sub => "-",
            ArithOp::Mul => "*",
            ArithOp::Div => "/",
            ArithOp::Mod => "%",
            ArithOp::Pow => "^",
            ArithOp::BAnd => "band",
            ArithOp::BOr => "bor",
            ArithOp::BXor => "bxor",
            ArithOp::BShl => "bshl",
            ArithOp::BShr => "bshr",
            ArithOp::BShrU => "bshru",
            ArithOp::LAnd => "land",
            ArithOp::LOr => "lor",
            ArithOp::LXor => "lxor",
        }
    }

    /// Whether the operator works on the bits or truth of integers only (not on floats).
    pub fn integral(self) -> bool {
        !matches!(
            self,
            ArithOp::Add | ArithOp::Sub | ArithOp::Mul | ArithOp::Div | ArithOp::Mod | ArithOp::Pow
        )
    }
}

/// Unary operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UnaryOp {
    /// `-x`
    Neg,
    /// `bnot x`: bitwise not
    BNot,
    /// `lnot x`: logical not (1 or 0)
    LNot,
}

impl UnaryOp {
    /// The operator as written, with the space a word operator needs before its operand.
    pub fn as_prefix(self) -> &'static str {
        match self {
            UnaryOp::Neg => "-",
            UnaryOp::BNot => "bnot ",
            UnaryOp::LNot => "lnot ",
        }
    }
}

/// Functors that compute a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Functor {
    /// `cat(a, b, ...)`: string concatenation (two or more arguments).
    Cat,
    /// `strlen(s)`
    Strlen,
    /// `substr(s, start, len)`: zero-based, clipped.
    Substr,
    /// `to_number(s)`: a symbol parsed as a number; of a float or an unsigned, the checker
    /// makes it `ftoi` or `utoi`.
    ToNumber,
    /// `to_string(n)`
    ToString,
    /// `to_float(x)` of a number or an unsigned: the checker makes it `itof` or `utof`.
    ToFloat,
    /// `to_unsigned(x)` of a number or a float: the checker makes it `itou` or `ftou`.
    ToUnsigned,
    /// A conversion between numeric types (`itof`, `ftoi`, ...).
    Convert(Conversion),
    /// `range(from, to)` or `range(from, to, step)`: every value from `from` toward `to`
    /// (excluded), one row each; only as `x = range(...)`.
    Range,
    /// `as(x, T)`: `x` read as type `T`, its bits unchanged (Soufflé's cast). The parser
    /// leaves `T` as the second argument; the checker resolves it into the type given here.
    As(Type),
    /// `max(a, b, ...)`: the greatest of two or more values of one type (symbols by their
    /// bytes). The checker sets the type.
    Max(Type),
    /// `min(a, b, ...)`: the least of two or more values of one type.
    Min(Type),
    /// A record `[a, b, ...]` of the given record type (the checker sets it; until then
    /// [`crate::value::Value::ANY_RECORD`]). Never written as a call.
    Record(Type),
    /// Field `n` of a record of `m` fields (a pattern `[x, _]` is lowered to these); none of
    /// `nil`. Never written as a call.
    Field(u16, u16),
    /// A value of branch `b` of the algebraic data type `t` (`$B(..)`), from its fields.
    Branch(u16, u16),
    /// Field `j` of a value of type `t` that is of branch `b` (a pattern `$B(x, _)` is lowered
    /// to these); none for a value of another branch.
    Arg(u16, u16, u16),
}

impl Functor {
    /// The functor's name as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Functor::Cat => "cat",
            Functor::Strlen => "strlen",
            Functor::Substr => "substr",
            Functor::ToNumber => "to_number",
            Functor::ToString => "to_string",
            Functor::ToFloat => "to_float",
            Functor::ToUnsigned => "to_unsigned",
            Functor::Convert(c) => c.as_str(),
            Functor::Range => "range",
            Functor::As(_) => "as",
            Functor::Max(_) => "max",
            Functor::Min(_) => "min",
            Functor::Record(_) => "record",
            Functor::Field(..) => "field",
            Functor::Branch(..) => "branch",
            Functor::Arg(..) => "arg",
        }
    }
}

/// Soufflé's conversions between numeric types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Conversion {
    /// `itof`: number to float.
    IToF,
    /// `itou`: number to unsigned (the same bits).
    IToU,
    /// `utoi`: unsigned to number (the same bits).
    UToI,
    /// `utof`: unsigned to float.
    UToF,
    /// `ftoi`: float to number, truncated toward zero.
    FToI,
    /// `ftou`: float to unsigned, truncated toward zero.
    FToU,
}

impl Conversion {
    /// Every conversion.
    pub const ALL: [Conversion; 6] = [
        Conversion::IToF,
        Conversion::IToU,
        Conversion::UToI,
        Conversion::UToF,
        Conversion::FToI,
        Conversion::FToU,
    ];

    /// Its name as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Conversion::IToF => "itof",
            Conversion::IToU => "itou",
            Conversion::UToI => "utoi",
            Conversion::UToF => "utof",
            Conversion::FToI => "ftoi",
            Conversion::FToU => "ftou",
        }
    }

    /// The type it takes.
    pub fn source(self) -> Type {
        match self {
            Conversion::IToF | Conversion::IToU => Type::Number,
            Conversion::UToI | Conversion::UToF => Type::Unsigned,
            Conversion::FToI | Conversion::FToU => Type::Float,
        }
    }

    /// The type it gives.
    pub fn target(self) -> Type {
        match self {
            Conversion::IToF | Conversion::UToF => Type::Float,
            Conversion::IToU | Conversion::FToU => Type::Unsigned,
            Conversion::UToI | Conversion::FToI => Type::Number,
        }
    }

    /// The conversion from `from` to `to`, if they differ and both are numeric.
    pub fn between(from: Type, to: Type) -> Option<Conversion> {
        Conversion::ALL
            .into_iter()
            .find(|c| c.source() == from && c.target() == to)
    }
}

/// Functors that hold or not (used as body literals).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TestFn {
    /// `match(regex, s)`: the whole of `s` matches the regular expression.
    Match,
    /// `contains(needle, s)`: `needle` is a substring of `s`.
    Contains,
    /// `glob(pattern, s)`: Tollgate extension; `*` matches within a `/`-separated segment
    /// ... see `functions::glob_matches` for the exact dialect.
    Glob,
}

impl TestFn {
    /// The test's name as written.
    pub fn as_str(self) -> &'static str {
        match self {
            TestFn::Match => "match",
            TestFn::Contains => "contains",
            TestFn::Glob => "glob",
        }
    }
}

/// Aggregate kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AggKind {
    /// `count : { ... }`
    Count,
    /// `sum e : { ... }`
    Sum,
    /// `min e : { ... }`
    Min,
    /// `max e : { ... }`
    Max,
    /// `mean e : { ... }`: the mean of float values (Soufflé's `mean` takes floats).
    Mean,
}

impl AggKind {
    /// The keyword.
    pub fn as_str(self) -> &'static str {
        match self {
            AggKind::Count => "count",
            AggKind::Sum => "sum",
            AggKind::Mean => "mean",
            AggKind::Min => "min",
            AggKind::Max => "max",
        }
    }
}

/// A term or expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A variable.
    Var(Ident),
    /// `_`
    Wildcard(Span),
    /// An integer literal (decimal, or `0x..` / `0b..`), kept wide; the checker range-checks it.
    Number(i64, Span),
    /// An unsigned literal written with a `u` suffix (`7u`).
    Unsigned(u64, Span),
    /// A float literal (`1.5`).
    Float(f64, Span),
    /// A string literal, escapes resolved.
    String(String, Span),
    /// A record term `[a, b, ...]`.
    Record(Vec<Expr>, Span),
    /// The record `nil`.
    Nil(Span),
    /// A branch of an algebraic data type `$Name(a, ..)` (`$Name` without fields).
    Branch(Ident, Vec<Expr>, Span),
    /// A unary operator: minus on a non-literal (`-x`), `bnot x`, `lnot x`.
    Unary(UnaryOp, Box<Expr>, Span),
    /// `lhs op rhs`.
    Binary {
        /// Operator.
        op: ArithOp,
        /// Left.
        lhs: Box<Expr>,
        /// Right.
        rhs: Box<Expr>,
        /// Whole expression.
        span: Span,
    },
    /// A functor call `cat(a, b)`.
    Call {
        /// Which functor.
        func: Functor,
        /// Arguments.
        args: Vec<Expr>,
        /// Whole call.
        span: Span,
    },
    /// A user-defined functor's call `@name(a, b)`.
    UserCall {
        /// The functor's name, without `@`.
        name: Ident,
        /// Arguments.
        args: Vec<Expr>,
        /// Whole call.
        span: Span,
    },
    /// `count : { body }`, `sum e : { body }`, `min e : body_atom` ...
    /// (Soufflé also allows a single atom without braces.)
    Aggregate {
        /// Which aggregate.
        kind: AggKind,
        /// The aggregated expression (none for `count`).
        target: Option<Box<Expr>>,
        /// The aggregate body: a conjunction.
        body: Vec<Literal>,
        /// Whole aggregate.
        span: Span,
    },
}

impl Expr {
    /// Where this expression was written.
    pub fn span(&self) -> Span {
        match self {
            Expr::Var(i) => i.span,
            Expr::Wildcard(s)
            | Expr::Number(_, s)
            | Expr::Unsigned(_, s)
            | Expr::Float(_, s)
            | Expr::String(_, s)
            | Expr::Record(_, s)
            | Expr::Nil(s)
            | Expr::Branch(_, _, s)
            | Expr::Unary(_, _, s)
            | Expr::Binary { span: s, .. }
            | Expr::Call { span: s, .. }
            | Expr::UserCall { span: s, .. }
            | Expr::Aggregate { span: s, .. } => *s,
        }
    }
}

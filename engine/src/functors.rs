//! User-defined functors: `.functor name(x: number, s: symbol): number` declares one, `@name(..)`
//! calls it, and the program's host implements it in Rust, registered in a [`Functors`]
//! registry passed to [`crate::Program::compile_with`]. (Soufflé links C++ functions for the
//! same declarations; Tollgate cannot, so a call without a registered implementation is
//! refused when the program is checked, never at evaluation.)
//!
//! An implementation must be a pure function of its arguments, as the engine's determinism
//! requires: the same arguments give the same value, always. It returns `None` where it has
//! no value (the rule instance then yields nothing, as division by zero does); a value of
//! another type than declared counts as none.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::value::{Type, Value};

/// A functor's implementation.
pub type FunctorFn = Arc<dyn Fn(&[Value]) -> Option<Value> + Send + Sync>;

/// Implementations of user-defined functors, by name (without the `@`).
#[derive(Clone, Default)]
pub struct Functors {
    map: BTreeMap<String, FunctorFn>,
}

impl Functors {
    /// No functors.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `name`'s implementation (replacing any before).
    pub fn register(
        &mut self,
        name: impl Into<String>,
        f: impl Fn(&[Value]) -> Option<Value> + Send + Sync + 'static,
    ) -> &mut Self {
        self.map.insert(name.into(), Arc::new(f));
        self
    }

    /// The implementation of `name`.
    pub fn get(&self, name: &str) -> Option<&FunctorFn> {
        self.map.get(name)
    }

    /// The registered names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(String::as_str)
    }
}

impl fmt::Debug for Functors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.map.keys()).finish()
    }
}

/// A declared functor bound to its implementation, as a checked program holds it.
pub struct UserFunctor {
    /// Its name, without `@`.
    pub name: String,
    /// The types of its parameters.
    pub params: Vec<Type>,
    /// The type of its value.
    pub ret: Type,
    imp: FunctorFn,
}

impl UserFunctor {
    pub(crate) fn new(name: String, params: Vec<Type>, ret: Type, imp: FunctorFn) -> Self {
        UserFunctor {
            name,
            params,
            ret,
            imp,
        }
    }

    /// Its value for `args` (of the declared types), if it has one of the declared type.
    pub fn call(&self, args: &[Value]) -> Option<Value> {
        (self.imp)(args).filter(|v| v.ty() == self.ret)
    }
}

impl fmt::Debug for UserFunctor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "@{}{:?} -> {:?}", self.name, self.params, self.ret)
    }
}

impl PartialEq for UserFunctor {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.params == other.params && self.ret == other.ret
    }
}

//! The program's `.type` declarations: subtypes and unions resolved to their primitive type,
//! record types and algebraic data types numbered (records first by name, so their fields may
//! name any type, themselves too), branches sorted by name as Soufflé numbers them.

use std::collections::HashMap;

use super::{Checker, builtin_type};
use crate::ast::{self, Program};
use crate::diag::{Diagnostic, codes};
use crate::value::{RecordType, Type};

impl Checker<'_> {
    pub(super) fn resolve_types(&mut self, program: &Program) {
        let decls: HashMap<&str, &ast::TypeDecl> = program
            .types
            .iter()
            .map(|t| (t.name.name.as_str(), t))
            .collect();
        // Record types first, by name only: their fields may name any type, themselves too
        // (`.type List = [head: number, tail: List]`).
        for t in &program.types {
            if (t.fields.is_none() && t.branches.is_none()) || builtin_type(&t.name.name).is_some()
            {
                continue;
            }
            if self.types.contains_key(&t.name.name) {
                let msg = format!("type `{}` is declared twice", t.name);
                self.diags.push(
                    Diagnostic::error(codes::TYPE, msg, t.name.span)
                        .with_help("declare each type once"),
                );
                continue;
            }
            let Ok(id) = u16::try_from(self.records.len()) else {
                continue;
            };
            self.types.insert(t.name.name.clone(), Type::Record(id));
            // Branches sorted by name, as Soufflé numbers them; their fields come below.
            let mut branches: Vec<&ast::Ident> =
                t.branches.iter().flatten().map(|(b, _)| b).collect();
            branches.sort_by(|a, b| a.name.cmp(&b.name));
            for (bi, b) in branches.iter().enumerate() {
                if let Some(&(other, _)) = self.branches.get(&b.name) {
                    let msg = format!("branch `{}` is declared twice", b.name);
                    let other = self.records[usize::from(other)].name.clone();
                    let help = format!(
                        "branch names are one namespace in a program, as in Soufflé; `{}` is already a branch of `{other}`",
                        b.name
                    );
                    self.diags
                        .push(Diagnostic::error(codes::TYPE, msg, b.span).with_help(help));
                    continue;
                }
                let bi = u16::try_from(bi).unwrap_or(u16::MAX);
                self.branches.insert(b.name.clone(), (id, bi));
            }
            self.records.push(RecordType {
                name: t.name.name.clone(),
                fields: Vec::new(),
                branches: branches
                    .iter()
                    .map(|b| crate::value::Branch {
                        name: b.name.clone(),
                        fields: Vec::new(),
                    })
                    .collect(),
            });
        }
        for t in &program.types {
            if builtin_type(&t.name.name).is_some() {
                self.diags.push(
                    Diagnostic::error(
                        codes::TYPE,
                        format!("`{}` is a built-in type", t.name),
                        t.name.span,
                    )
                    .with_help("choose another name for the new type"),
                );
                continue;
            }
            if let Some(branches) = &t.branches {
                let Some(&Type::Record(id)) = self.types.get(&t.name.name) else {
                    continue;
                };
                for (branch, fields) in branches {
                    let resolved = self.resolve_fields(&t.name, fields, &decls);
                    let rt = &mut self.records[usize::from(id)];
                    if let Some(b) = rt.branches.iter_mut().find(|b| b.name == branch.name) {
                        b.fields = resolved;
                    }
                }
                continue;
            }
            if let Some(fields) = &t.fields {
                let Some(&Type::Record(id)) = self.types.get(&t.name.name) else {
                    continue;
                };
                self.records[usize::from(id)].fields = self.resolve_fields(&t.name, fields, &decls);
                continue;
            }
            let mut visiting = Vec::new();
            if let Some(ty) = self.resolve_type(&t.name.name, &decls, &mut visiting) {
                if let Type::Record(_) = ty
                    && t.bases.len() > 1
                {
                    let msg = format!("union `{}` has a record type as a member", t.name);
                    self.diags.push(
                        Diagnostic::error(codes::TYPE, msg, t.span)
                            .with_help("a union's members are symbol or numeric types, as in Soufflé; use the record type itself"),
                    );
                    continue;
                }
                self.types.insert(t.name.name.clone(), ty);
            }
        }
    }

    /// The fields of record type or branch (of type `owner`), resolved.
    fn resolve_fields(
        &mut self,
        owner: &ast::Ident,
        fields: &[(ast::Ident, ast::Ident)],
        decls: &HashMap<&str, &ast::TypeDecl>,
    ) -> Vec<(String, Type)> {
        {
            {
                let t = owner;
                let mut resolved: Vec<(String, Type)> = Vec::new();
                for (name, ty) in fields {
                    if resolved.iter().any(|(n, _)| *n == name.name) {
                        let msg = format!(
                            "field `{}` is declared twice in record type `{}`",
                            name, t.name
                        );
                        self.diags.push(
                            Diagnostic::error(codes::TYPE, msg, name.span)
                                .with_help("give each field of a record its own name"),
                        );
                        continue;
                    }
                    let mut visiting = Vec::new();
                    let Some(resolved_ty) = self.resolve_type(&ty.name, decls, &mut visiting)
                    else {
                        if builtin_type(&ty.name).is_none() && !decls.contains_key(ty.name.as_str())
                        {
                            self.diags.push(
                                Diagnostic::error(
                                    codes::TYPE,
                                    format!("unknown type `{}` of field `{}`", ty.name, name),
                                    ty.span,
                                )
                                .with_help("use symbol, number, unsigned, float or a type declared with `.type`"),
                            );
                        }
                        continue;
                    };
                    resolved.push((name.name.clone(), resolved_ty));
                }
                resolved
            }
        }
    }

    /// A type as the user would write it: a record type's name, or a primitive type.
    pub(crate) fn type_name(&self, t: Type) -> String {
        match t {
            Type::Record(id) => self
                .records
                .get(usize::from(id))
                .map_or_else(|| "record".to_string(), |r| r.name.clone()),
            t => t.as_str().to_string(),
        }
    }

    fn resolve_type(
        &mut self,
        name: &str,
        decls: &HashMap<&str, &ast::TypeDecl>,
        visiting: &mut Vec<String>,
    ) -> Option<Type> {
        if let Some(t) = builtin_type(name) {
            return Some(t);
        }
        if let Some(t) = self.types.get(name) {
            return Some(*t);
        }
        let decl = decls.get(name)?;
        if visiting.iter().any(|v| v == name) {
            self.diags.push(
                Diagnostic::error(
                    codes::TYPE,
                    format!("type `{name}` is defined in terms of itself"),
                    decl.span,
                )
                .with_help("every type must come down to symbol, number, unsigned or float"),
            );
            return None;
        }
        visiting.push(name.to_string());
        let mut result: Option<Type> = None;
        for base in &decl.bases {
            let Some(t) = self.resolve_type(&base.name, decls, visiting) else {
                if builtin_type(&base.name).is_none() && !decls.contains_key(base.name.as_str()) {
                    self.diags.push(
                        Diagnostic::error(
                            codes::TYPE,
                            format!("unknown type `{}`", base.name),
                            base.span,
                        )
                        .with_help(
                            "use symbol, number, unsigned, float or a type declared with `.type`",
                        ),
                    );
                }
                return None;
            };
            match result {
                Some(r) if r != t => {
                    self.diags.push(
                        Diagnostic::error(
                            codes::TYPE,
                            format!("union `{name}` mixes `{r}` and `{t}`"),
                            base.span,
                        )
                        .with_help("all members of a union type must have the same primitive type"),
                    );
                    return None;
                }
                _ => result = Some(t),
            }
        }
        visiting.pop();
        result
    }
}

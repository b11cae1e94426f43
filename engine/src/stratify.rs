//! The stratify stage: strongly connected components of the relation dependency graph,
//! ordered so that every relation is computed after the relations it reads; a negation or an
//! aggregation inside a component is an error naming every rule of the cycle.

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use crate::diag::{Diagnostic, Source, codes};
use crate::ir::{IrRule, RelId, RelInfo};

/// The strata of a program.
pub(crate) struct Strata {
    pub strata: Vec<Vec<RelId>>,
    pub stratum_of: Vec<usize>,
    pub recursive: Vec<bool>,
}

pub(crate) fn stratify(
    relations: &[RelInfo],
    rules: &[IrRule],
    source: &Source,
) -> Result<Strata, Vec<Diagnostic>> {
    let n = relations.len();
    let mut edges: Vec<BTreeSet<RelId>> = vec![BTreeSet::new(); n];
    for r in rules {
        for (dep, _, _) in r.dependencies() {
            edges[dep].insert(r.head.rel);
        }
    }
    let comp = tarjan(n, &edges);
    let ncomp = comp.iter().copied().max().map_or(0, |m| m + 1);

    // Negative edges inside a component make the program unstratifiable.
    let mut diags = Vec::new();
    let mut reported = BTreeSet::new();
    for r in rules {
        for (dep, negative, span) in r.dependencies() {
            if !negative || comp[dep] != comp[r.head.rel] || !reported.insert(comp[dep]) {
                continue;
            }
            let c = comp[dep];
            let head = &relations[r.head.rel].name;
            let via = &relations[dep].name;
            let mut d = Diagnostic::error(
                codes::UNSTRATIFIABLE,
                format!("`{head}` depends on `{via}` through negation or aggregation inside a recursive cycle"),
                span,
            )
            .with_label("negated or aggregated here");
            let mut cycle_rules: Vec<&IrRule> = rules
                .iter()
                .filter(|q| {
                    comp[q.head.rel] == c && q.dependencies().iter().any(|(x, _, _)| comp[*x] == c)
                })
                .collect();
            cycle_rules.sort_by_key(|q| (q.span.start, q.head_index, q.disjunct));
            cycle_rules.dedup_by_key(|q| q.clause);
            let mut lines = Vec::new();
            for q in &cycle_rules {
                let line = source.line_col(q.span.start).0;
                lines.push(format!("`{}` (line {line})", q.id));
                d = d.with_secondary(q.span, format!("rule `{}` of the cycle, line {line}", q.id));
            }
            d = d.with_help(format!(
                "the cycle is formed by the rules {}; a relation may only be negated or aggregated after it is complete: move the negation out of the cycle or split the relation",
                lines.join(", ")
            ));
            diags.push(d);
        }
    }
    if !diags.is_empty() {
        return Err(diags);
    }

    // Order components topologically, breaking ties by the smallest declaration index, so the
    // order depends neither on rule order nor on hash order.
    let mut members: Vec<Vec<RelId>> = vec![Vec::new(); ncomp];
    for (rel, &c) in comp.iter().enumerate() {
        members[c].push(rel);
    }
    let mut indegree = vec![0usize; ncomp];
    let mut succ: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); ncomp];
    for (from, tos) in edges.iter().enumerate() {
        for &to in tos {
            let (a, b) = (comp[from], comp[to]);
            if a != b && succ[a].insert(b) {
                indegree[b] += 1;
            }
        }
    }
    let mut ready: BinaryHeap<Reverse<(RelId, usize)>> = (0..ncomp)
        .filter(|&c| indegree[c] == 0)
        .map(|c| Reverse((members[c][0], c)))
        .collect();
    let mut strata = Vec::new();
    let mut stratum_of = vec![0; n];
    while let Some(Reverse((_, c))) = ready.pop() {
        for &r in &members[c] {
            stratum_of[r] = strata.len();
        }
        strata.push(members[c].clone());
        for &s in &succ[c] {
            indegree[s] -= 1;
            if indegree[s] == 0 {
                ready.push(Reverse((members[s][0], s)));
            }
        }
    }
    let mut recursive = vec![false; n];
    for r in rules {
        let s = stratum_of[r.head.rel];
        if r.dependencies().iter().any(|(d, _, _)| stratum_of[*d] == s) {
            for &m in &strata[s] {
                recursive[m] = true;
            }
        }
    }
    Ok(Strata {
        strata,
        stratum_of,
        recursive,
    })
}

/// Tarjan's strongly connected components, iteratively; returns a component number per node.
fn tarjan(n: usize, edges: &[BTreeSet<RelId>]) -> Vec<usize> {
    const UNSEEN: usize = usize::MAX;
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut comp = vec![UNSEEN; n];
    let mut next_index = 0;
    let mut ncomp = 0;
    let adj: Vec<Vec<RelId>> = edges.iter().map(|e| e.iter().copied().collect()).collect();
    for root in 0..n {
        if index[root] != UNSEEN {
            continue;
        }
        let mut work: Vec<(RelId, usize)> = vec![(root, 0)];
        index[root] = next_index;
        low[root] = next_index;
        next_index += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut i)) = work.last_mut() {
            if *i < adj[v].len() {
                let w = adj[v][*i];
                *i += 1;
                if index[w] == UNSEEN {
                    index[w] = next_index;
                    low[w] = next_index;
                    next_index += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
            } else {
                work.pop();
                if let Some(&(parent, _)) = work.last() {
                    low[parent] = low[parent].min(low[v]);
                }
                if low[v] == index[v] {
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        comp[w] = ncomp;
                        if w == v {
                            break;
                        }
                    }
                    ncomp += 1;
                }
            }
        }
    }
    comp
}

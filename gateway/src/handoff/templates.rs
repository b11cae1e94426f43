//! The seed's three contract templates and the lightweight contract, as starter files: each
//! fills every field its template requires (the requirements themselves are facts of the
//! handoff pack, `template_requires`, so they are checked with a proof like any rule).

use super::Template;

/// The starter file of `template`: a complete contract with placeholders (`RUN-ID`, `ORG`…).
pub fn starter(template: Template) -> &'static str {
    match template {
        Template::Lightweight => include_str!("templates/lightweight.yaml"),
        Template::CodePatchReview => include_str!("templates/code_patch_review.yaml"),
        Template::ResearchToImplementation => {
            include_str!("templates/research_to_implementation.yaml")
        }
        Template::PlannerToExecutor => include_str!("templates/planner_to_executor.yaml"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handoff::contract::parse;

    #[test]
    fn every_starter_reads_and_names_its_template() {
        for t in Template::ALL {
            let c = parse(starter(t)).unwrap_or_else(|e| panic!("{}: {e}", t.as_str()));
            assert_eq!(c.template(), t);
        }
    }
}

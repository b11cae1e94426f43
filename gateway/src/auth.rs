//! Who may do what (issue 32): the principals a credential stands for, and what each kind of
//! principal is trusted with.
//!
//! Three kinds: an **agent** opens and drives its own runs and can grant itself nothing; an
//! **approver** (a person) decides approvals and reads what was decided; an **admin** (a
//! policy author or operator) manages envelopes, packs, tokens, memory review and regression
//! versions, and may do what the others do. An agent's credential fixes the agent's name and
//! bounds the scope and the clearance of the runs it opens ([`Principal::open_limits`]).
//!
//! Credentials are the gateway's own tokens (`tokens`, created by an admin, stored as a keyed
//! hash) and the owner's token (`TOLLGATE_TOKEN` or `.tollgate/token`, an admin named
//! `owner`). Which routes admit which kinds is `http::access`.

pub mod audit;
pub mod jwt;
pub mod sessions;
pub mod tokens;
pub mod verified;

use std::path::Path;

use serde::{Deserialize, Serialize};
use tollgate_rules::envelope::Level;

/// What a principal is trusted with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrincipalKind {
    /// An agent: its own runs, nothing that grants rights.
    Agent,
    /// A person who decides approvals and reads receipts.
    Approver,
    /// A policy author or operator.
    Admin,
}

impl PrincipalKind {
    /// Every kind.
    pub const ALL: [PrincipalKind; 3] = [
        PrincipalKind::Agent,
        PrincipalKind::Approver,
        PrincipalKind::Admin,
    ];

    /// The stored and wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            PrincipalKind::Agent => "agent",
            PrincipalKind::Approver => "approver",
            PrincipalKind::Admin => "admin",
        }
    }

    /// The kind named `s`.
    pub fn parse(s: &str) -> Option<PrincipalKind> {
        PrincipalKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl std::fmt::Display for PrincipalKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who is asking: the principal a credential stands for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    /// The credential's id: `owner` for the owner's token, `tok_…` for a token, `local:USER`
    /// for the command line on the store's machine.
    pub id: String,
    /// What it is trusted with.
    pub kind: PrincipalKind,
    /// The agent's name (agents) or the person's (approvers, admins).
    pub name: String,
    /// Agents: the scope every run it opens must lie within.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_scope: Option<String>,
    /// Agents: the highest clearance a run it opens may have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_clearance: Option<Level>,
}

/// The id of the owner's credential (`TOLLGATE_TOKEN` or `.tollgate/token`).
pub const OWNER: &str = "owner";

/// Why a principal may not open a run as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// The run names another agent than the credential's.
    #[error(
        "this credential is agent `{credential}`'s; it cannot open a run as agent `{asked}`\n  help: open it as `{credential}`, or with that agent's own token"
    )]
    OtherAgent {
        /// The credential's agent.
        credential: String,
        /// The agent the run names.
        asked: String,
    },
    /// The run's scope lies outside the credential's.
    #[error(
        "scope `{asked}` is outside this credential's scope `{credential}`\n  help: open the run within `{credential}`, or ask an admin for a token that reaches `{asked}`"
    )]
    OutsideScope {
        /// The credential's scope.
        credential: String,
        /// The run's.
        asked: String,
    },
    /// The run asks for more clearance than the credential holds.
    #[error(
        "clearance `{asked}` is above this credential's `{credential}`\n  help: ask for `{credential}` or less, or ask an admin for a token cleared higher"
    )]
    AboveClearance {
        /// The credential's clearance.
        credential: &'static str,
        /// The run's.
        asked: &'static str,
    },
    /// An agent's credential names envelopes to govern its own run: an agent with no
    /// envelope of its own would choose another agent's rights.
    #[error(
        "an agent's credential cannot choose the envelopes that govern its run (`{envelopes}`)\n  help: envelopes reach an agent through their `attach: {{agents: [...]}}`, or an admin opens the run with `envelopes`"
    )]
    AttachesEnvelopes {
        /// The envelopes named.
        envelopes: String,
    },
    /// The principal reaches a run that is not its own.
    #[error(
        "run `{run}` is agent `{owner}`'s; this credential is agent `{agent}`'s\n  help: an agent reaches only its own runs"
    )]
    NotOwnRun {
        /// The run.
        run: String,
        /// Its agent.
        owner: String,
        /// The credential's agent.
        agent: String,
    },
    /// An approval answered by the agent whose call it is: the credential that opened the
    /// run, or a principal named as its agent.
    #[error(
        "approval `{approval}` gates a call of agent `{agent}`; `{by}` may not decide it with the credential that opened the run, nor under the agent's name\n  help: an approver or admin other than the run's opener decides it (`tollgate tokens create --kind approver`)"
    )]
    OwnCall {
        /// The approval.
        approval: String,
        /// The run's agent.
        agent: String,
        /// Who tried.
        by: String,
    },
    /// A run's scope lies outside the agent credential that reaches it.
    #[error(
        "run `{run}` is at scope `{scope}`, outside this credential's scope `{credential}`\n  help: an agent reaches only its own runs within its credential's scope"
    )]
    RunOutsideScope {
        /// The run.
        run: String,
        /// Its scope.
        scope: String,
        /// The credential's scope.
        credential: String,
    },
}

impl Refusal {
    /// The machine-readable code of the refusal.
    pub fn code(&self) -> crate::codes::ErrorCode {
        use crate::codes::http as codes;
        match self {
            Refusal::OtherAgent { .. } => codes::OTHER_AGENT,
            Refusal::OutsideScope { .. } => codes::OUTSIDE_SCOPE,
            Refusal::AboveClearance { .. } => codes::ABOVE_CLEARANCE,
            Refusal::AttachesEnvelopes { .. } => codes::ATTACHES_ENVELOPES,
            Refusal::NotOwnRun { .. } => codes::NOT_OWN_RUN,
            Refusal::RunOutsideScope { .. } => codes::RUN_OUTSIDE_SCOPE,
            Refusal::OwnCall { .. } => codes::SELF_APPROVAL,
        }
    }
}

impl Principal {
    /// The owner: the admin behind `TOLLGATE_TOKEN` or `.tollgate/token`.
    pub fn owner() -> Principal {
        Principal {
            id: OWNER.into(),
            kind: PrincipalKind::Admin,
            name: OWNER.into(),
            max_scope: None,
            max_clearance: None,
        }
    }

    /// The command line on the machine that holds the store: whoever can open the database
    /// can change anything in it, so it acts as an admin, named by `name` (the OS user).
    pub fn local(name: &str) -> Principal {
        Principal {
            id: format!("local:{name}"),
            kind: PrincipalKind::Admin,
            name: name.to_string(),
            max_scope: None,
            max_clearance: None,
        }
    }

    /// `kind:name (id)`, for logs and refusals.
    pub fn label(&self) -> String {
        format!("{}:{} ({})", self.kind, self.name, self.id)
    }

    /// Whether this is an agent's credential.
    pub fn is_agent(&self) -> bool {
        self.kind == PrincipalKind::Agent
    }

    /// The clearance a run this principal opens gets, when it asked for `asked` (`None`:
    /// the default `public`) as agent `agent` at `scope`; refused when the credential is
    /// another agent's, the scope lies outside its scope, or the clearance above its own.
    /// Admins open runs as any agent; approvers never reach this (`http::access`).
    pub fn open_limits(&self, agent: &str, scope: &str, asked: Level) -> Result<(), Refusal> {
        if !self.is_agent() {
            return Ok(());
        }
        if agent != self.name {
            return Err(Refusal::OtherAgent {
                credential: self.name.clone(),
                asked: agent.to_string(),
            });
        }
        if let Some(max) = &self.max_scope
            && !scope_within(scope, max)
        {
            return Err(Refusal::OutsideScope {
                credential: max.clone(),
                asked: scope.to_string(),
            });
        }
        if let Some(max) = self.max_clearance
            && asked > max
        {
            return Err(Refusal::AboveClearance {
                credential: max.as_str(),
                asked: asked.as_str(),
            });
        }
        Ok(())
    }

    /// Whether this principal may reach run `run` of agent `agent` at `scope`: an agent
    /// only its own runs (same agent, within its scope); approvers and admins any run (the
    /// route says what they may do there).
    pub fn reaches_run(&self, run: &str, agent: &str, scope: &str) -> Result<(), Refusal> {
        if !self.is_agent() {
            return Ok(());
        }
        if agent != self.name {
            return Err(Refusal::NotOwnRun {
                run: run.to_string(),
                owner: agent.to_string(),
                agent: self.name.clone(),
            });
        }
        if let Some(max) = &self.max_scope
            && !scope_within(scope, max)
        {
            return Err(Refusal::RunOutsideScope {
                run: run.to_string(),
                scope: scope.to_string(),
                credential: max.clone(),
            });
        }
        Ok(())
    }
}

/// Whether scope `s` is `ancestor` or below it, segment by segment (`org:acme/repo:api` is
/// within `org:acme`, `org:acme-evil` is not). A scope with an empty, `.` or `..` segment is
/// within nothing: scopes name places in a tree, and such a segment could be read as a climb
/// by whatever consumes the scope next.
pub fn scope_within(s: &str, ancestor: &str) -> bool {
    let plain = |t: &str| {
        t.split('/')
            .all(|seg| !seg.is_empty() && seg != "." && seg != ".." && seg.trim() == seg)
    };
    if !plain(s) || !plain(ancestor) {
        return false;
    }
    s == ancestor
        || s.strip_prefix(ancestor)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Writes `text` and a newline to `path`, readable and writable by its owner only (on Unix).
#[cfg(unix)]
pub fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    file.write_all(b"\n")
}

/// Writes `text` and a newline to `path`.
#[cfg(not(unix))]
pub fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::write(path, format!("{text}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(name: &str, scope: Option<&str>, clearance: Option<Level>) -> Principal {
        Principal {
            id: "tok_1".into(),
            kind: PrincipalKind::Agent,
            name: name.into(),
            max_scope: scope.map(str::to_string),
            max_clearance: clearance,
        }
    }

    #[test]
    fn scopes_are_within_their_ancestors_segment_by_segment() {
        assert!(scope_within("org:acme/repo:api", "org:acme"));
        assert!(scope_within("org:acme", "org:acme"));
        assert!(!scope_within("org:acme-evil", "org:acme"));
        assert!(!scope_within("org:acme/../org:other", "org:acme"));
        assert!(!scope_within("org:acme//x", "org:acme"));
        assert!(!scope_within("org:acme/./x", "org:acme"));
        assert!(!scope_within("org:acme/ x", "org:acme"));
        assert!(!scope_within("org", "org:acme"));
    }

    #[test]
    fn an_agent_credential_fixes_the_agent_and_bounds_scope_and_clearance() {
        let p = agent("coder", Some("org:acme/repo:api"), Some(Level::Internal));
        assert_eq!(
            p.open_limits("coder", "org:acme/repo:api/task:T-1", Level::Internal),
            Ok(())
        );
        assert!(matches!(
            p.open_limits("deployer", "org:acme/repo:api", Level::Public),
            Err(Refusal::OtherAgent { .. })
        ));
        assert!(matches!(
            p.open_limits("coder", "org:acme/repo:web", Level::Public),
            Err(Refusal::OutsideScope { .. })
        ));
        assert!(matches!(
            p.open_limits("coder", "org:acme/repo:api", Level::Secret),
            Err(Refusal::AboveClearance { .. })
        ));
        assert_eq!(
            Principal::owner().open_limits("anyone", "x", Level::Secret),
            Ok(())
        );
    }

    #[test]
    fn an_agent_reaches_only_its_own_runs_within_its_scope() {
        let p = agent("coder", Some("org:acme"), None);
        assert_eq!(p.reaches_run("r", "coder", "org:acme/repo:api"), Ok(()));
        assert!(matches!(
            p.reaches_run("r", "deployer", "org:acme"),
            Err(Refusal::NotOwnRun { .. })
        ));
        assert!(matches!(
            p.reaches_run("r", "coder", "org:other"),
            Err(Refusal::RunOutsideScope { .. })
        ));
        assert_eq!(Principal::owner().reaches_run("r", "x", "y"), Ok(()));
    }
}

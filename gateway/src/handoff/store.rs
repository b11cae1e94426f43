//! The handoff tables (migration 12): contract versions with their validation, the consumer's
//! acknowledgements, delivery checks and the violations they raised. Helpers over a
//! connection, so the flows in [`super::validate`], [`super::deliver`] and the runtime write
//! a version and its events in one transaction.

use crate::store::{Connection, OptionalExtension, Row, params};
use serde::Serialize;
use tollgate_rules::request::Delegation;

use super::{ContractState, HandoffContract, Validation, delegate};
use crate::store::{Store, StoreError};

/// One stored version of a contract.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct StoredContract {
    /// The contract's id.
    pub id: String,
    /// The version (from 1).
    pub version: u32,
    /// blake3 of the contract's canonical JSON.
    pub content_hash: String,
    /// The template.
    pub template: String,
    /// The producing run.
    pub producer_run: String,
    /// The producing agent.
    pub producer_agent: String,
    /// The consuming run (`handoff:ID` until the consumer opens it).
    pub consumer_run: String,
    /// The consuming agent.
    pub consumer_agent: String,
    /// Where it stands.
    pub state: ContractState,
    /// The contract.
    pub contract: HandoffContract,
    /// What the handoff pack said of it, with the decision (the receipt).
    #[schema(value_type = Object)]
    pub validation: Validation,
    /// Its `handoff` event in the producer's run, when it was recorded there.
    pub recorded_seq: Option<u64>,
    /// Who posted it.
    pub created_by: String,
    /// When.
    pub created_at: String,
    /// When its state last changed.
    pub updated_at: String,
}

impl StoredContract {
    /// Whether a consumer may open a run under this version: it is validated or accepted and
    /// hands work to a run not opened yet; otherwise why not.
    pub fn claimable(&self) -> Result<(), String> {
        if !matches!(
            self.state,
            ContractState::Validated | ContractState::Accepted
        ) {
            return Err(format!(
                "contract `{}` is {}: no run can be opened under it\n  help: only a validated or accepted contract hands work over",
                self.id,
                self.state.as_str()
            ));
        }
        if self.consumer_run != super::planned_run(&self.id) {
            return Err(format!(
                "contract `{}` hands work to run `{}`, which is open already",
                self.id, self.consumer_run
            ));
        }
        Ok(())
    }

    /// The contract as it reaches the consumer: its evidence only what crossed.
    pub fn handed(&self) -> HandoffContract {
        let mut c = self.contract.clone();
        c.evidence
            .0
            .retain(|e| self.validation.crossing.contains(&e.item));
        c
    }
}

/// A consumer's answer, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredAck {
    /// The version answered.
    pub version: u32,
    /// `accept`, `reject`, `clarify`.
    pub response: String,
    /// The consuming run, when it was open.
    pub consumer_run: Option<String>,
    /// Who answered.
    pub by: String,
    /// Why.
    pub reason: String,
    /// What it asked.
    pub questions: Vec<String>,
    /// Its event in the consumer's run, when recorded.
    pub recorded_seq: Option<u64>,
    /// When.
    pub at: String,
}

/// One check of a delivery, with the violations it raised.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoredDelivery {
    /// Its id.
    pub id: i64,
    /// The version checked.
    pub version: u32,
    /// The consuming run.
    pub consumer_run: String,
    /// `fulfilled` or `violated`.
    pub state: ContractState,
    /// What the consumer delivered (outputs with the events that show them, actions).
    pub delivered: serde_json::Value,
    /// The handoff pack's decision over the delivery.
    pub decision: serde_json::Value,
    /// The violations raised.
    pub violations: Vec<StoredViolation>,
    /// When.
    pub at: String,
}

/// A violation raised by a delivery check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredViolation {
    /// `missing_output`, `blocked_action_taken`, `deadline_missed`.
    pub code: String,
    /// The output, tool or deadline.
    pub detail: String,
    /// The pack rule.
    pub rule: String,
    /// The alert event in the consumer's run, when recorded.
    pub recorded_seq: Option<u64>,
    /// When.
    pub at: String,
}

const COLUMNS: &str = "id, version, content_hash, template, producer_run, producer_agent, \
     consumer_run, consumer_agent, state, contract, validation, recorded_seq, created_by, \
     created_at, updated_at";

fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::corrupt(what)
}

fn contract_row(r: &Row<'_>) -> Result<StoredContract, StoreError> {
    let state: String = r.get(8)?;
    let contract: String = r.get(9)?;
    let validation: String = r.get(10)?;
    Ok(StoredContract {
        id: r.get(0)?,
        version: r.get(1)?,
        content_hash: r.get(2)?,
        template: r.get(3)?,
        producer_run: r.get(4)?,
        producer_agent: r.get(5)?,
        consumer_run: r.get(6)?,
        consumer_agent: r.get(7)?,
        state: ContractState::parse(&state)
            .ok_or_else(|| corrupt(format!("contract state `{state}`")))?,
        contract: serde_json::from_str(&contract).map_err(corrupt)?,
        validation: serde_json::from_str(&validation).map_err(corrupt)?,
        recorded_seq: r.get::<Option<i64>>(11)?.map(|s| s as u64),
        created_by: r.get(12)?,
        created_at: r.get(13)?,
        updated_at: r.get(14)?,
    })
}

/// The latest version of `id` (or version `version`).
pub fn get_in(
    c: &Connection,
    id: &str,
    version: Option<u32>,
) -> Result<Option<StoredContract>, StoreError> {
    let row = match version {
        Some(v) => c
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM handoff_contracts WHERE id = ?1 AND version = ?2"
            ))?
            .query_row(params![id, v], contract_row)
            .optional()?,
        None => c
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM handoff_contracts WHERE id = ?1 ORDER BY version DESC LIMIT 1"
            ))?
            .query_row(params![id], contract_row)
            .optional()?,
    };
    Ok(row)
}

/// [`get_in`] on a read connection.
pub fn get(
    store: &Store,
    id: &str,
    version: Option<u32>,
) -> Result<Option<StoredContract>, StoreError> {
    let id = id.to_string();
    store.read(move |c| get_in(c, &id, version))
}

/// Every version of `id`, oldest first: `(version, state, content hash, created_at)`.
pub fn versions(
    store: &Store,
    id: &str,
) -> Result<Vec<(u32, ContractState, String, String)>, StoreError> {
    let id = id.to_string();
    store.read(move |c| {
        let mut stmt = c.prepare_cached(
            "SELECT version, state, content_hash, created_at FROM handoff_contracts WHERE id = ?1 ORDER BY version",
        )?;
        let rows = stmt.query_map([&id], |r| {
            let state: String = r.get(1)?;
            Ok((
                r.get(0)?,
                ContractState::parse(&state).ok_or_else(|| corrupt(&state))?,
                r.get(2)?,
                r.get(3)?,
            ))
        })?;
        rows.collect::<Result<_, _>>()
    })
}

/// Stores a new version; its number is the next after the latest.
pub fn insert_in(
    c: &Connection,
    contract: &HandoffContract,
    validation: &Validation,
    producer_agent: &str,
    recorded_seq: Option<u64>,
    by: &str,
    at: &str,
) -> Result<u32, StoreError> {
    let latest: Option<u32> = c
        .prepare_cached("SELECT MAX(version) FROM handoff_contracts WHERE id = ?1")?
        .query_row([&contract.id], |r| r.get(0))?;
    let version = latest.unwrap_or(0) + 1;
    let text = tollgate_rules::canonical::to_canonical_json(contract)
        .map_err(|e| StoreError::Invalid(e.to_string()))?;
    let validation_text =
        serde_json::to_string(validation).map_err(|e| StoreError::Invalid(e.to_string()))?;
    c.prepare_cached(&format!(
        "INSERT INTO handoff_contracts ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?14)"
    ))?
    .execute(params![
        contract.id,
        version,
        contract.content_hash(),
        contract.template().as_str(),
        contract.producer.run,
        producer_agent,
        validation.consumer_run,
        contract.consumer.agent,
        validation.state.as_str(),
        text,
        validation_text,
        recorded_seq.map(|s| s as i64),
        by,
        at,
    ])?;
    Ok(version)
}

/// Moves a version to `state`.
pub fn set_state_in(
    c: &Connection,
    id: &str,
    version: u32,
    state: ContractState,
    at: &str,
) -> Result<(), StoreError> {
    c.prepare_cached(
        "UPDATE handoff_contracts SET state = ?3, updated_at = ?4 WHERE id = ?1 AND version = ?2",
    )?
    .execute(params![id, version, state.as_str(), at])?;
    Ok(())
}

/// Claims contract `id` for the run `run` its consumer opens: the latest version must be
/// validated or accepted and hand work to a run not opened yet; every version's planned run
/// becomes `run`, and a validated contract is accepted by the opening (an answer recorded as
/// such); returns the state it had. One write, so two runs cannot claim one contract.
pub fn claim_in(
    c: &Connection,
    id: &str,
    run: &str,
    at: &str,
) -> Result<ContractState, StoreError> {
    let latest =
        get_in(c, id, None)?.ok_or_else(|| StoreError::NotFound(format!("no contract `{id}`")))?;
    latest.claimable().map_err(StoreError::Invalid)?;
    // Only versions still handing work to the planned run change: if another run claimed the
    // contract since it was read (on another gateway), nothing changes and this claim fails.
    let claimed = c
        .prepare_cached(
            "UPDATE handoff_contracts SET consumer_run = ?2 WHERE id = ?1 AND consumer_run = ?3",
        )?
        .execute(params![id, run, super::planned_run(id)])?;
    if claimed == 0 {
        return Err(StoreError::Invalid(format!(
            "contract `{id}` was claimed by another run meanwhile\n  help: a contract hands its work to one run; post a new version for another"
        )));
    }
    if latest.state == ContractState::Validated {
        set_state_in(c, id, latest.version, ContractState::Accepted, at)?;
        insert_ack_in(
            c,
            id,
            latest.version,
            "accept",
            Some(run),
            &latest.consumer_agent,
            &format!("opened run `{run}` under it"),
            &[],
            None,
            at,
        )?;
    }
    Ok(latest.state)
}

/// Gives a claimed contract back (the run could not be opened after all): its planned run
/// again, and the state it had.
pub fn release_in(
    c: &Connection,
    id: &str,
    run: &str,
    state: ContractState,
) -> Result<(), StoreError> {
    c.prepare_cached(
        "UPDATE handoff_contracts SET consumer_run = ?3 WHERE id = ?1 AND consumer_run = ?2",
    )?
    .execute(params![id, run, super::planned_run(id)])?;
    if state == ContractState::Validated {
        let latest = get_in(c, id, None)?;
        if let Some(l) = latest {
            set_state_in(c, id, l.version, state, &l.updated_at)?;
            c.prepare_cached(
                "DELETE FROM handoff_acks WHERE contract_id = ?1 AND version = ?2 AND consumer_run = ?3 AND recorded_seq IS NULL",
            )?
            .execute(params![id, l.version, run])?;
        }
    }
    Ok(())
}

/// The delegations in force other than `except`'s: the latest version of every other
/// contract whose state still hands work over, as `TASK#AGENT` pairs (a consumer run not yet
/// opened works on its producer's task).
pub fn delegations_in(c: &Connection, except: &str) -> Result<Vec<Delegation>, StoreError> {
    let mut stmt = c.prepare_cached(
        "SELECT COALESCE(rp.task, ''), h.producer_agent, COALESCE(rc.task, rp.task, ''),
                h.consumer_agent, h.state
         FROM handoff_contracts h
         LEFT JOIN runs rp ON rp.id = h.producer_run
         LEFT JOIN runs rc ON rc.id = h.consumer_run
         WHERE h.id <> ?1
           AND h.version = (SELECT MAX(version) FROM handoff_contracts WHERE id = h.id)",
    )?;
    let rows = stmt.query_map([except], |r| {
        Ok((
            r.get::<String>(0)?,
            r.get::<String>(1)?,
            r.get::<String>(2)?,
            r.get::<String>(3)?,
            r.get::<String>(4)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (pt, pa, ct, ca, state) = row?;
        if ContractState::parse(&state).is_some_and(ContractState::in_force) {
            out.push(Delegation {
                producer: delegate(&pt, &pa),
                consumer: delegate(&ct, &ca),
            });
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The latest version of every contract a run takes part in, as producer or consumer.
pub fn for_run(store: &Store, run: &str) -> Result<Vec<StoredContract>, StoreError> {
    let run = run.to_string();
    store.read(move |c| {
        let mut stmt = c.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM handoff_contracts h
             WHERE (h.producer_run = ?1 OR h.consumer_run = ?1)
               AND h.version = (SELECT MAX(version) FROM handoff_contracts WHERE id = h.id)
             ORDER BY h.created_at, h.id"
        ))?;
        let rows = stmt.query_map([&run], contract_row)?;
        rows.collect::<Result<_, _>>()
    })
}

/// The latest version of at most `limit` contracts, most recently changed first.
pub fn list(store: &Store, limit: usize) -> Result<Vec<StoredContract>, StoreError> {
    store.read(move |c| {
        let mut stmt = c.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM handoff_contracts h
             WHERE h.version = (SELECT MAX(version) FROM handoff_contracts WHERE id = h.id)
             ORDER BY h.updated_at DESC, h.id LIMIT ?1"
        ))?;
        let rows = stmt.query_map([limit as i64], contract_row)?;
        rows.collect::<Result<_, _>>()
    })
}

/// Stores an acknowledgement.
#[expect(clippy::too_many_arguments, reason = "one column each")]
pub fn insert_ack_in(
    c: &Connection,
    id: &str,
    version: u32,
    response: &str,
    consumer_run: Option<&str>,
    by: &str,
    reason: &str,
    questions: &[String],
    recorded_seq: Option<u64>,
    at: &str,
) -> Result<(), StoreError> {
    c.prepare_cached(
        "INSERT INTO handoff_acks (contract_id, version, response, consumer_run, answered_by, reason, questions, recorded_seq, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(params![
        id,
        version,
        response,
        consumer_run,
        by,
        reason,
        serde_json::to_string(questions).unwrap_or_else(|_| "[]".into()),
        recorded_seq.map(|s| s as i64),
        at,
    ])?;
    Ok(())
}

/// Every acknowledgement of `id`, oldest first.
pub fn acks(store: &Store, id: &str) -> Result<Vec<StoredAck>, StoreError> {
    let id = id.to_string();
    store.read(move |c| {
        let mut stmt = c.prepare_cached(
            "SELECT version, response, consumer_run, answered_by, reason, questions, recorded_seq, at
             FROM handoff_acks WHERE contract_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([&id], |r| {
            let questions: String = r.get(5)?;
            Ok(StoredAck {
                version: r.get(0)?,
                response: r.get(1)?,
                consumer_run: r.get(2)?,
                by: r.get(3)?,
                reason: r.get(4)?,
                questions: serde_json::from_str(&questions).map_err(corrupt)?,
                recorded_seq: r.get::<Option<i64>>(6)?.map(|s| s as u64),
                at: r.get(7)?,
            })
        })?;
        rows.collect::<Result<_, _>>()
    })
}

/// Stores a delivery check; returns its id.
#[expect(clippy::too_many_arguments, reason = "one column each")]
pub fn insert_delivery_in(
    c: &Connection,
    id: &str,
    version: u32,
    consumer_run: &str,
    state: ContractState,
    delivered: &serde_json::Value,
    decision: &serde_json::Value,
    at: &str,
) -> Result<i64, StoreError> {
    c.prepare_cached(
        "INSERT INTO handoff_deliveries (contract_id, version, consumer_run, state, delivered, decision, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
    )?
    .query_row(
        params![
        id,
        version,
        consumer_run,
        state.as_str(),
        delivered.to_string(),
        decision.to_string(),
        at,
        ],
        |r| r.get(0),
    )
}

/// Stores a violation a delivery check raised.
#[expect(clippy::too_many_arguments, reason = "one column each")]
pub fn insert_violation_in(
    c: &Connection,
    delivery: i64,
    id: &str,
    version: u32,
    code: &str,
    detail: &str,
    rule: &str,
    recorded_seq: Option<u64>,
    at: &str,
) -> Result<(), StoreError> {
    c.prepare_cached(
        "INSERT INTO handoff_violations (delivery_id, contract_id, version, code, detail, rule, recorded_seq, at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        delivery,
        id,
        version,
        code,
        detail,
        rule,
        recorded_seq.map(|s| s as i64),
        at
    ])?;
    Ok(())
}

/// Whether a delivery check of version `version` of `id` raised this violation before.
pub fn raised_in(
    c: &Connection,
    id: &str,
    version: u32,
    code: &str,
    detail: &str,
) -> Result<bool, StoreError> {
    Ok(c.prepare_cached(
        "SELECT 1 FROM handoff_violations
             WHERE contract_id = ?1 AND version = ?2 AND code = ?3 AND detail = ?4 LIMIT 1",
    )?
    .query_row(params![id, version, code, detail], |_| Ok(()))
    .optional()?
    .is_some())
}

/// Every delivery check of `id`, oldest first, with its violations.
pub fn deliveries(store: &Store, id: &str) -> Result<Vec<StoredDelivery>, StoreError> {
    let id = id.to_string();
    store.read(move |c| {
        let mut stmt = c.prepare_cached(
            "SELECT id, version, consumer_run, state, delivered, decision, at
             FROM handoff_deliveries WHERE contract_id = ?1 ORDER BY id",
        )?;
        let mut out: Vec<StoredDelivery> = stmt
            .query_map([&id], |r| {
                let state: String = r.get(3)?;
                let delivered: String = r.get(4)?;
                let decision: String = r.get(5)?;
                Ok(StoredDelivery {
                    id: r.get(0)?,
                    version: r.get(1)?,
                    consumer_run: r.get(2)?,
                    state: ContractState::parse(&state).ok_or_else(|| corrupt(&state))?,
                    delivered: serde_json::from_str(&delivered).map_err(corrupt)?,
                    decision: serde_json::from_str(&decision).map_err(corrupt)?,
                    violations: Vec::new(),
                    at: r.get(6)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        let mut stmt = c.prepare_cached(
            "SELECT delivery_id, code, detail, rule, recorded_seq, at
             FROM handoff_violations WHERE contract_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([&id], |r| {
            Ok((
                r.get::<i64>(0)?,
                StoredViolation {
                    code: r.get(1)?,
                    detail: r.get(2)?,
                    rule: r.get(3)?,
                    recorded_seq: r.get::<Option<i64>>(4)?.map(|s| s as u64),
                    at: r.get(5)?,
                },
            ))
        })?;
        for row in rows {
            let (delivery, v) = row?;
            if let Some(d) = out.iter_mut().find(|d| d.id == delivery) {
                d.violations.push(v);
            }
        }
        Ok(out)
    })
}

/// Whether `run` is running, read inside a write (so an event is appended only to a run that
/// is still open when the write commits).
pub fn running_in(c: &Connection, run: &str) -> Result<bool, StoreError> {
    Ok(c.prepare_cached("SELECT status FROM runs WHERE id = ?1")?
        .query_row([run], |r| r.get::<String>(0))
        .optional()?
        .is_some_and(|s| s == "running"))
}

/// The index of a run's last step (a first one is added when it has none), read inside a
/// write for an event the handoff module appends.
pub fn last_step_in(c: &Connection, run: &str, agent: &str) -> Result<u32, StoreError> {
    let steps: u32 = c
        .prepare_cached("SELECT COUNT(*) FROM steps WHERE run_id = ?1")?
        .query_row([run], |r| r.get(0))?;
    if steps > 0 {
        return Ok(steps - 1);
    }
    c.prepare_cached("INSERT INTO steps (run_id, idx, name, agent) VALUES (?1, 0, 'main', ?2)")?
        .execute(params![run, agent])?;
    Ok(0)
}

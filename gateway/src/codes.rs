//! Every error code the gateway answers with, in one table: its HTTP status, what it means and
//! what to do about it. [`crate::http::ApiError`] takes its codes from here (a code is a
//! constant of this module, never a string written at the call site), so the troubleshooting
//! page that `tollgate reference errors` writes from [`http::ALL`] and [`case_refusals::ALL`]
//! lists every code a client can meet.

/// One error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorCode {
    /// The code, as `error.code` of the answer's body.
    pub code: &'static str,
    /// The HTTP status it is answered with.
    pub status: u16,
    /// What it means: when it is answered.
    pub summary: &'static str,
    /// What to do about it.
    pub remedy: &'static str,
}

/// Declares each code once: a constant per code and `ALL`, the table in order.
macro_rules! table {
    ($($name:ident = $code:literal, $status:literal, $summary:literal, $remedy:literal;)*) => {
        $(
            #[doc = $summary]
            pub const $name: ErrorCode = ErrorCode {
                code: $code,
                status: $status,
                summary: $summary,
                remedy: $remedy,
            };
        )*
        /// Every code of the table, in order.
        pub const ALL: &[ErrorCode] = &[$($name),*];
    };
}

/// The codes of the HTTP API's error answers, `{"error": {"code", "message", "details"}}`.
pub mod http {
    use super::ErrorCode;

    table! {
        MALFORMED_JSON = "malformed_json", 400,
            "The body is not valid JSON.",
            "Send well-formed JSON; the message gives the line and column where reading stopped.";
        UNREADABLE_BODY = "unreadable_body", 400,
            "The body could not be read (not UTF-8 text, or the connection failed while sending it).",
            "Send the body as UTF-8 JSON (or YAML where the route takes it) and retry.";
        UNAUTHORIZED = "unauthorized", 401,
            "No bearer token was sent, or the one sent is not a credential of this gateway (unknown, revoked or expired).",
            "Send `Authorization: Bearer TOKEN` with the owner's token (`.tollgate/token`, or `TOLLGATE_TOKEN`) or one made by `tollgate tokens create`; `tollgate tokens list` shows which are revoked or expired.";
        FORBIDDEN = "forbidden", 403,
            "The credential may not do this (an action outside what its kind or run allows).",
            "Use a credential that may: the message names what was refused and why.";
        FOREIGN_HOST = "foreign_host", 403,
            "The `Host` header names another server than this gateway (a DNS-rebinding guard).",
            "Call the gateway by `127.0.0.1` or `localhost`, or start it with `tollgate serve --allow-host NAME` for the name you use.";
        FOREIGN_ORIGIN = "foreign_origin", 403,
            "A browser request came from a page of another origin.",
            "Open the dashboard from the gateway's own address; other sites' pages may not call it.";
        KIND_NOT_ADMITTED = "kind_not_admitted", 403,
            "The route does not admit this kind of credential (an agent's token on an admin route, say).",
            "Use a credential of a kind the message lists (`tollgate tokens create --kind agent|approver|admin`); the guide's chapter on who may do what has the table of who may call what.";
        POLICY_DENIED = "policy_denied", 403,
            "Policy denied the request; `details` holds the decision, its deciding rules and its receipt.",
            "Read the receipt in `details` (`tollgate runs explain RUN SEQ`, or the dashboard's receipt page) for the proof and why-not; change the request, or the envelope that denies it.";
        OTHER_AGENT = "other_agent", 403,
            "An agent's credential asked to open a run as another agent.",
            "Open the run as the credential's own agent, or with that agent's token.";
        OUTSIDE_SCOPE = "outside_scope", 403,
            "The run's scope lies outside the credential's scope.",
            "Open the run within the credential's scope, or ask an admin for a token whose scope reaches it.";
        ABOVE_CLEARANCE = "above_clearance", 403,
            "The run asks for more clearance than the credential holds.",
            "Ask for the credential's clearance or less, or ask an admin for a token cleared higher.";
        ATTACHES_ENVELOPES = "attaches_envelopes", 403,
            "An agent's credential named the envelopes that govern its own run.",
            "Leave `envelopes` out: envelopes reach an agent through their `attach: {agents: [...]}`, or an admin opens the run with them.";
        NOT_OWN_RUN = "not_own_run", 403,
            "An agent's credential reached a run of another agent.",
            "An agent reaches only its own runs: use the run's agent's token.";
        RUN_OUTSIDE_SCOPE = "run_outside_scope", 403,
            "An agent's credential reached a run whose scope is outside the credential's.",
            "Use a credential whose scope reaches the run's.";
        SELF_APPROVAL = "self_approval", 403,
            "An approval was decided with the credential that opened the run, or under the run's agent's name.",
            "An approver or admin other than the run's opener decides it (`tollgate tokens create --kind approver`).";
        NOT_A_PARTY = "not_a_party", 403,
            "An agent posted or answered a handoff it is not the producer or consumer of.",
            "An agent posts contracts from its own runs and answers the handoffs addressed to it.";
        CONTRACT_REJECTED = "contract_rejected", 403,
            "The handoff's contract was refused before the consumer started (its checks failed).",
            "Fix what the message lists in the producer's output, or publish a contract version that admits it.";
        CASE_READ_ONLY = "case_read_only", 403,
            "The case's pack is not registered on this gateway, so the case can be read but not changed.",
            "Register the pack (`tollgate packs list` shows which are) or work on the case where its pack is.";
        NOT_FOUND = "not_found", 404,
            "The thing named in the path does not exist (a run, receipt, token, case, route...).",
            "Check the id; list what exists with the matching `GET` (`/v1/runs`, `/v1/tokens`, ...).";
        MCP_NOT_CONFIGURED = "mcp_not_configured", 404,
            "This gateway serves no MCP servers.",
            "Start it with `tollgate serve --mcp-config FILE` (the file `tollgate mcp proxy` takes).";
        METHOD_NOT_ALLOWED = "method_not_allowed", 405,
            "The path exists but not with this method; the `Allow` header lists the methods it answers.",
            "Use one of the methods in `Allow`; `GET /openapi.json` lists every operation.";
        CONFLICT = "conflict", 409,
            "The request conflicts with what is stored (a duplicate id, a run already finished, a changed policy version).",
            "Read the current state (the message says what conflicts), then retry against it.";
        VERSION_CONFLICT = "version_conflict", 409,
            "A case append named an expected version that is not the case's current one; `details` has both.",
            "Read the case again and append at its current version.";
        EVENT_ID_REUSED = "event_id_reused", 409,
            "A case event's id is stored already with other content, or an append repeated only some of its ids.",
            "Give a new event a new id; repeat an append whole (same ids, same content) to retry it safely.";
        EVIDENCE_MISSING = "evidence_missing", 409,
            "A capability needs evidence the case does not have yet.",
            "Run the pack's workers first (`tollgate cases collect CASE`), then propose again.";
        PROPOSAL_SETTLED = "proposal_settled", 409,
            "The proposal is committing or committed: it cannot be previewed or committed again.",
            "Propose a new change if another is needed.";
        PREVIEW_REQUIRED = "preview_required", 409,
            "Policy decides a previewed proposal, and this one has no preview yet.",
            "Preview it first (`tollgate cases preview CASE PROPOSAL`).";
        OUT_OF_ORDER = "out_of_order", 409,
            "The proposal is not freshly previewed, so policy cannot decide it now.",
            "Preview it again, then decide it.";
        NO_PENDING_APPROVAL = "no_pending_approval", 409,
            "The proposal has no approval waiting to be decided.",
            "An approval is asked for when policy allows a previewed proposal: decide it first (`tollgate cases decide`).";
        STALE_PREVIEW = "stale_preview", 409,
            "The change the proposal would make now differs from what was previewed.",
            "Preview it again and decide it anew.";
        APPROVAL_REFUSED = "approval_refused", 409,
            "The proposal's approval is final (rejected, expired or used) or could not be decided.",
            "Preview the proposal again and decide it anew: a new decision asks for a new approval.";
        APPROVAL_NOT_USABLE = "approval_not_usable", 409,
            "The approval cannot be used for this commit (used already, expired, or bound to another change).",
            "Have the proposal approved again after a fresh preview.";
        PAYLOAD_TOO_LARGE = "payload_too_large", 413,
            "The body is larger than the gateway's limit (`details.limit`, in bytes).",
            "Send less, or start the gateway with a larger `tollgate serve --body-limit`.";
        UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type", 415,
            "The body was not sent as JSON.",
            "Send it with `Content-Type: application/json`.";
        INVALID = "invalid", 422,
            "The request is well-formed but a value in it is not valid; the message names it and what is allowed.",
            "Fix the value the message names.";
        INVALID_BODY = "invalid_body", 422,
            "The JSON body does not have the operation's shape (a missing field, a wrong type, an array for an object).",
            "Send the fields the operation documents (`GET /openapi.json`); the message names the field.";
        DUPLICATE_KEY = "duplicate_key", 422,
            "The JSON body gives one key twice (parsers disagree on which counts, so it is refused).",
            "Send each key once.";
        INVALID_QUERY = "invalid_query", 422,
            "The query string cannot be read as the operation's parameters, or a parameter is out of range.",
            "Fix the parameter the message names; `GET /openapi.json` lists each with its range.";
        INVALID_PATH = "invalid_path", 422,
            "A path segment does not read as its parameter (a version that is not a number, say).",
            "Fix the segment the message names.";
        INVALID_HASH = "invalid_hash", 422,
            "An MCP pin's hash is too short to name one version.",
            "Give at least its first 12 characters, as `GET /v1/mcp/pins?changed=true` shows it.";
        INVALID_RECORD = "invalid_record", 422,
            "An event sent to the recorder is not valid for its run (its kind, fields or order).",
            "Fix the event as the message says; the guide's runs chapter describes each kind.";
        INVALID_ENVELOPE = "invalid_envelope", 422,
            "An envelope does not check; `details` lists each problem with its file, line and column.",
            "Fix the envelope at the places given (`tollgate policy check FILE` shows the same locally).";
        INVALID_SCENARIO = "invalid_scenario", 422,
            "A replay scenario's mutation does not apply to the run (an unknown item, rule or step).",
            "Fix the mutation named in `details.mutation`.";
        INVALID_CASE = "invalid_case", 422,
            "A regression case file does not read; `details` gives its path and line.",
            "Fix the case file at the line given.";
        INVALID_BUNDLE = "invalid_bundle", 422,
            "A regression case's bundle is unreadable or does not match its pin.",
            "Make the case again from its run (`tollgate regress from-run`).";
        UNSAFE_FIXTURE = "unsafe_fixture", 422,
            "A regression fixture holds something that may not be stored in a case (a secret, say).",
            "Remove or redact what the message names, then add the case again.";
        INVALID_HANDOFF = "invalid_handoff", 422,
            "The handoff request is not valid.",
            "Fix the field the message names.";
        INVALID_CONTRACT = "invalid_contract", 422,
            "A handoff contract does not check; `details.faults` lists each problem with where it is.",
            "Fix the contract at the places given.";
        INVALID_FORMAT = "invalid_format", 422,
            "The format asked for is not one the route renders.",
            "Ask for one of the formats the message lists.";
        INVALID_DECISION = "invalid_decision", 422,
            "An approval decision is neither `approve` nor `reject`.",
            "Send `approve` or `reject`.";
        INVALID_TOKEN_REQUEST = "invalid_token_request", 422,
            "A token request is not valid (an unknown kind, a duration that does not read, a scope that does not parse).",
            "Fix the field the message names: kinds are `agent`, `approver`, `admin`; durations read `30d`, `12h`, `45m`, `90s`.";
        INVALID_CASE_REQUEST = "invalid_case_request", 422,
            "A case request is not valid for its pack (an unknown capability, evidence of the wrong shape).",
            "Fix what the message names; `tollgate packs list` shows each pack's capabilities.";
        RATE_LIMITED = "rate_limited", 429,
            "A rate limit was reached (the upstream provider's, passed on); `Retry-After` and `details.retry_after` give the seconds to wait.",
            "Retry after the seconds given.";
        INTERNAL = "internal", 500,
            "The gateway failed to handle the request; the detail is in its log, never in the answer.",
            "Read the gateway's log (stderr); if the failure is reproducible, report it with the log.";
        UPSTREAM_ERROR = "upstream_error", 502,
            "The model provider failed or could not be reached.",
            "Check the provider the gateway was started with (`TOLLGATE_PROVIDER`, `TOLLGATE_PROVIDER_BASE_URL`, `PROVIDER_API_KEY`) and its status; the message carries its error without secrets.";
        ADAPTER_FAILED = "adapter_failed", 502,
            "A case pack's adapter failed while previewing, applying or verifying a change.",
            "Read the message for the adapter's error; the case records it, and a commit that failed is compensated.";
    }
}

/// The codes a case's commit is refused with: recorded on the case as `commit_refused`, and
/// answered as a 409 whose `details.recorded` is `true`.
pub mod case_refusals {
    use super::ErrorCode;

    table! {
        POLICY_REQUIRED = "policy_required", 409,
            "The proposal has not been decided by policy.",
            "Preview it, then decide it (`tollgate cases decide CASE PROPOSAL`).";
        POLICY_DENIED = "policy_denied", 409,
            "Policy denied the proposal, so it cannot be committed.",
            "Read the decision's receipt for why; change the proposal or the pack's policy.";
        APPROVAL_REQUIRED = "approval_required", 409,
            "The proposal has no approval, or its approval is not granted.",
            "A person approves it first (`tollgate cases approve CASE PROPOSAL --by NAME`, or the dashboard's case page).";
        STALE_PREVIEW = "stale_preview", 409,
            "The approved preview is stale: the change would now be another.",
            "Preview it again, decide it and have it approved anew.";
        PREVIEW_REQUIRED = "preview_required", 409,
            "The proposal has no preview.",
            "Preview it (`tollgate cases preview CASE PROPOSAL`), decide it and have it approved.";
        POLICY_CHANGED = "policy_changed", 409,
            "Policy now denies the proposal: the rules or envelopes changed since it was approved.",
            "Decide it again under the current policy.";
        REAL_ADAPTERS_OFF = "real_adapters_off", 409,
            "A real (not simulated) commit was asked for, and real adapters are off on this gateway.",
            "Commit in simulated mode, or start the gateway with `TOLLGATE_ALLOW_REAL_ADAPTERS=1` (the cases chapter of the guide describes real mode).";
        ADAPTER_POLICY_MISSING = "adapter_policy_missing", 409,
            "A real commit needs an adapter policy file, and none was given.",
            "Give one (`version: 1`, `pack_id`, `allow_actions`): `--policy FILE` on the command line, `TOLLGATE_ADAPTER_POLICY` for the server.";
        ADAPTER_POLICY_INVALID = "adapter_policy_invalid", 409,
            "The adapter policy file does not read or check.",
            "Fix the file at the places the message gives.";
        ADAPTER_POLICY_REFUSES = "adapter_policy_refuses", 409,
            "The adapter policy does not allow this action for this pack.",
            "Add the action to the policy's `allow_actions` if it should be allowed.";
        REAL_ADAPTER_NOT_WIRED = "real_adapter_not_wired", 409,
            "The pack has no real adapter for this action on this gateway.",
            "Commit in simulated mode, or wire a `real_adapter` for the action in the pack's `actions.yaml`.";
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_table_names_each_code_once_with_a_status_summary_and_remedy() {
        for table in [http::ALL, case_refusals::ALL] {
            let mut seen = std::collections::BTreeSet::new();
            for c in table {
                assert!(seen.insert(c.code), "`{}` is in a table twice", c.code);
                assert!(
                    c.code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                    "`{}` is not snake_case",
                    c.code
                );
                assert!((400..600).contains(&c.status), "`{}`", c.code);
                assert!(axum::http::StatusCode::from_u16(c.status).is_ok());
                for text in [c.summary, c.remedy] {
                    assert!(text.ends_with('.'), "`{}`: {text}", c.code);
                }
            }
        }
    }
}

//! A contract as an A2A message (the Agent2Agent protocol's `Message`, sent with
//! `message/send`): a text part with the objective for agents that read only text, and a
//! data part holding the contract, marked with its schema. Import takes such a message, a
//! `message/send` request or its `params`, and reads the contract from its data part with the
//! same checks as a posted contract (fault paths point into the message).

use serde_json::{Value, json};

use super::contract::{ContractFault, ContractFaults, HandoffContract, SCHEMA, from_value};
use super::store::StoredContract;

/// The media type of the data part.
pub const MEDIA_TYPE: &str = "application/vnd.tollgate.handoff+json";

/// The A2A message carrying a stored contract version as it reaches its consumer (the
/// evidence that crossed, no more).
pub fn export(stored: &StoredContract) -> Value {
    let c = &stored.handed();
    json!({
        "kind": "message",
        "role": "user",
        "messageId": format!("{}@{}", c.id, stored.version),
        "contextId": c.producer.run,
        "parts": [
            {"kind": "text", "text": c.goal.objective},
            {
                "kind": "data",
                "data": c,
                "metadata": {"mimeType": MEDIA_TYPE, "schema": SCHEMA},
            },
        ],
        "metadata": {
            "tollgate": {
                "contract": c.id,
                "version": stored.version,
                "state": stored.state.as_str(),
                "content_hash": stored.content_hash,
                "producer": super::party(&stored.producer_run, &stored.producer_agent),
                "consumer": super::party(&stored.consumer_run, &stored.consumer_agent),
            }
        },
    })
}

/// Reads the contract an A2A message carries.
pub fn import(value: &Value) -> Result<HandoffContract, ContractFaults> {
    let (message, base) = if let Some(m) = value.pointer("/params/message") {
        (m, "/params/message")
    } else if let Some(m) = value.get("message") {
        (m, "/message")
    } else {
        (value, "")
    };
    let Some(parts) = message.get("parts").and_then(Value::as_array) else {
        return Err(one(
            &format!("{base}/parts"),
            "an A2A message has a `parts` list",
            "send a `Message` (or a `message/send` request) whose parts include a data part",
        ));
    };
    let mut data = parts.iter().enumerate().filter(|(_, p)| {
        p.get("kind").and_then(Value::as_str) == Some("data")
            && (p.pointer("/metadata/schema").and_then(Value::as_str) == Some(SCHEMA)
                || p.pointer("/data/schema").and_then(Value::as_str) == Some(SCHEMA))
    });
    let Some((i, part)) = data.next() else {
        return Err(one(
            &format!("{base}/parts"),
            format!("no data part holds a `{SCHEMA}` contract"),
            format!(
                "add a part `{{\"kind\": \"data\", \"data\": CONTRACT, \"metadata\": {{\"schema\": \"{SCHEMA}\"}}}}`"
            ),
        ));
    };
    if data.next().is_some() {
        return Err(one(
            &format!("{base}/parts"),
            "more than one data part holds a contract",
            "send one contract per message",
        ));
    }
    let at = format!("{base}/parts/{i}/data");
    from_value(part.get("data").unwrap_or(&Value::Null)).map_err(|ContractFaults(faults)| {
        ContractFaults(
            faults
                .into_iter()
                .map(|mut f| {
                    f.path = format!("{at}{}", f.path);
                    f
                })
                .collect(),
        )
    })
}

fn one(path: &str, message: impl Into<String>, help: impl Into<String>) -> ContractFaults {
    ContractFaults(vec![ContractFault {
        path: path.to_string(),
        line: None,
        column: None,
        message: message.into(),
        help: help.into(),
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_send_request_yields_its_contract_and_faults_point_into_it() {
        let contract = json!({"id": "h-1", "producer": {"run": "r"}, "consumer": {"agent": "a"}, "goal": "fix it"});
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
            "kind": "message", "role": "user", "messageId": "m1",
            "parts": [{"kind": "text", "text": "fix it"}, {"kind": "data", "data": contract, "metadata": {"schema": SCHEMA}}]
        }}});
        let c = import(&request).unwrap();
        assert_eq!(c.id, "h-1");
        let mut broken = request.clone();
        broken["params"]["message"]["parts"][1]["data"]["consumer"] = json!({});
        let faults = import(&broken).unwrap_err().0;
        assert_eq!(faults[0].path, "/params/message/parts/1/data/consumer");
        let none = json!({"parts": [{"kind": "text", "text": "hi"}]});
        assert!(
            import(&none).unwrap_err().0[0]
                .message
                .contains("no data part")
        );
    }
}

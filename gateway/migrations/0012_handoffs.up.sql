-- Handoff contracts (issue 16): every version of a contract with its validation (the handoff
-- pack's decision, the receipt), the consumer's acknowledgements, each check of a delivery
-- under it, and the violations those checks raised.

CREATE TABLE handoff_contracts (
    id TEXT NOT NULL,
    version INTEGER NOT NULL,
    content_hash TEXT NOT NULL,       -- blake3 of the contract's canonical JSON
    template TEXT NOT NULL,
    producer_run TEXT NOT NULL,
    producer_agent TEXT NOT NULL,
    consumer_run TEXT NOT NULL,       -- the producer's run, an open run, or handoff:ID until opened
    consumer_agent TEXT NOT NULL,
    state TEXT NOT NULL,              -- validated, rejected, accepted, refused,
                                      -- clarification_requested, fulfilled, violated
    contract TEXT NOT NULL,           -- canonical JSON of the contract
    validation TEXT NOT NULL,         -- JSON: problems, dropped, crossing, decision
    recorded_seq INTEGER,             -- its handoff event in the producer's run, when recorded
    created_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (id, version)
);

CREATE INDEX handoff_contracts_by_producer ON handoff_contracts (producer_run);
CREATE INDEX handoff_contracts_by_consumer ON handoff_contracts (consumer_run);

CREATE TABLE handoff_acks (
    id INTEGER PRIMARY KEY,
    contract_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    response TEXT NOT NULL,           -- accept, reject, clarify
    consumer_run TEXT,
    answered_by TEXT NOT NULL,
    reason TEXT NOT NULL,
    questions TEXT NOT NULL,          -- JSON array
    recorded_seq INTEGER,             -- its event in the consumer's run, when recorded
    at TEXT NOT NULL,
    FOREIGN KEY (contract_id, version) REFERENCES handoff_contracts (id, version)
);

CREATE INDEX handoff_acks_by_contract ON handoff_acks (contract_id, version);

CREATE TABLE handoff_deliveries (
    id INTEGER PRIMARY KEY,
    contract_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    consumer_run TEXT NOT NULL,
    state TEXT NOT NULL,              -- fulfilled or violated
    delivered TEXT NOT NULL,          -- JSON: outputs found (with the events showing them), actions
    decision TEXT NOT NULL,           -- JSON of the handoff pack's decision over the delivery
    at TEXT NOT NULL,
    FOREIGN KEY (contract_id, version) REFERENCES handoff_contracts (id, version)
);

CREATE INDEX handoff_deliveries_by_contract ON handoff_deliveries (contract_id, version);

CREATE TABLE handoff_violations (
    id INTEGER PRIMARY KEY,
    delivery_id INTEGER NOT NULL REFERENCES handoff_deliveries (id),
    contract_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    code TEXT NOT NULL,
    detail TEXT NOT NULL,
    rule TEXT NOT NULL,
    recorded_seq INTEGER,             -- the alert event in the consumer's run, when recorded
    at TEXT NOT NULL
);

CREATE INDEX handoff_violations_by_contract ON handoff_violations (contract_id, version);

-- MCP sessions (docs/mcp.md): what any node needs to serve a session another node began.
-- `initialize_params` is the client's `initialize` request (JSON), replayed by a node that
-- restores the session; `account_id` is the account whose key opened it (a key of another
-- account never uses it). Times are Unix milliseconds; idle sessions are pruned.
CREATE TABLE mcp_sessions (
    id                TEXT PRIMARY KEY,
    account_id        TEXT,
    initialize_params TEXT,
    created_at        BIGINT NOT NULL,
    touched_at        BIGINT NOT NULL
);
CREATE INDEX mcp_sessions_by_touch ON mcp_sessions (touched_at);

-- The resources a session subscribed to (`resources/subscribe`); whichever node holds the
-- session's notification stream tells it when one changes.
CREATE TABLE mcp_subscriptions (
    session_id TEXT NOT NULL,
    uri        TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (session_id, uri)
);
CREATE INDEX mcp_subscriptions_by_uri ON mcp_subscriptions (uri);

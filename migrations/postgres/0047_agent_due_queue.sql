-- The due agents, in a narrow table of their own (docs/architecture.md, "The due queue").
--
-- A tick rewrites an agent's `next_tick_at`. With it in an index on the agents, no tick's
-- rewrite could be heap-only: each wrote a new entry in all five of the agents' indexes, and
-- that was 42 % of PostgreSQL's CPU under a tick load. Here the schedule lives in `agent_due`,
-- one row per active agent with a next tick, and the agents keep no index on it: a tick's
-- rewrite of the agent is heap-only, and the queue's row (three columns, one index) is what
-- moves.
--
-- Triggers on the agents keep the queue, so no writer needs to know of it, but one: a paper
-- tick's store moves its agent's entry itself (below). It is exact within each transaction: the
-- row (is_paper_trading, next_tick_at, id) is in the queue while, and only while, the agent is
-- active with a next tick. A claim still checks the agent itself
-- (active, the same `next_tick_at`), so an entry read before a concurrent write committed is
-- passed by, as with the index.
CREATE TABLE agent_due (
    is_paper_trading BIGINT NOT NULL,
    next_tick_at     BIGINT NOT NULL,
    agent_id         TEXT NOT NULL,
    PRIMARY KEY (is_paper_trading, next_tick_at, agent_id)
);

INSERT INTO agent_due (is_paper_trading, next_tick_at, agent_id)
SELECT is_paper_trading, next_tick_at, id FROM agents
WHERE status = 'active' AND next_tick_at IS NOT NULL;

-- Each row's queue entry is found by its key as it was (OLD): the queue holds exactly that
-- while the invariant above holds. An entry that is somehow missing is put back by the next
-- write that keeps the agent due (the update finds nothing and inserts).
CREATE FUNCTION agent_due_follow() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' OR TG_OP = 'UPDATE' THEN
        IF NEW.status = 'active' AND NEW.next_tick_at IS NOT NULL THEN
            IF TG_OP = 'UPDATE' THEN
                UPDATE agent_due
                   SET is_paper_trading = NEW.is_paper_trading, next_tick_at = NEW.next_tick_at
                 WHERE is_paper_trading = OLD.is_paper_trading
                   AND next_tick_at = OLD.next_tick_at AND agent_id = OLD.id;
                IF FOUND THEN
                    RETURN NULL;
                END IF;
            END IF;
            INSERT INTO agent_due (is_paper_trading, next_tick_at, agent_id)
            VALUES (NEW.is_paper_trading, NEW.next_tick_at, NEW.id)
            ON CONFLICT DO NOTHING;
            RETURN NULL;
        END IF;
        IF TG_OP = 'INSERT' THEN
            RETURN NULL;
        END IF;
    END IF;
    DELETE FROM agent_due
     WHERE is_paper_trading = OLD.is_paper_trading
       AND next_tick_at = OLD.next_tick_at AND agent_id = OLD.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER agent_due_on_insert AFTER INSERT ON agents
    FOR EACH ROW WHEN (NEW.status = 'active' AND NEW.next_tick_at IS NOT NULL)
    EXECUTE FUNCTION agent_due_follow();
-- A paper tick (its `ticks` counted, its kind and status kept) moves its own entry, in the
-- statement that stores it (`agents::ticker`): a trigger's call per row cost more than the
-- index entries the queue saves. Every other write of a schedule is followed here.
CREATE TRIGGER agent_due_on_update AFTER UPDATE OF status, is_paper_trading, next_tick_at ON agents
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status
                       OR OLD.is_paper_trading IS DISTINCT FROM NEW.is_paper_trading
                       OR (OLD.next_tick_at IS DISTINCT FROM NEW.next_tick_at
                           AND NOT (NEW.is_paper_trading = 1 AND NEW.ticks <> OLD.ticks)))
    EXECUTE FUNCTION agent_due_follow();
CREATE TRIGGER agent_due_on_delete AFTER DELETE ON agents
    FOR EACH ROW WHEN (OLD.status = 'active' AND OLD.next_tick_at IS NOT NULL)
    EXECUTE FUNCTION agent_due_follow();

DROP INDEX agents_due;

-- A claim: up to `batch` due agents of a kind (paper 1, live 0) in the queue's order past
-- (`after_at`, `after_id`), each checked in its row (still active, still due at the entry's
-- time, no lease running at `due_by`) and locked as it is read, agents another transaction
-- holds passed by, so an empty claim means none is due. The queue must be walked in its key's
-- order for that: sorted instead, every due agent would be locked before the first `batch` were
-- taken (and read, per claim). The planner picks the sort whenever it guesses few entries due,
-- as it does before the queue has statistics (a fresh queue, autovacuum not yet by), so sorting
-- is ruled out here, for this query only.
CREATE FUNCTION agent_due_claim(paper BIGINT, due_by BIGINT, after_at BIGINT, after_id TEXT,
                                batch BIGINT)
RETURNS SETOF agents LANGUAGE plpgsql SET enable_sort = off AS $$
BEGIN
    RETURN QUERY
    SELECT a.* FROM agent_due d,
        LATERAL (SELECT * FROM agents
                  WHERE id = d.agent_id AND status = 'active' AND next_tick_at = d.next_tick_at
                    AND (tick_lease_until IS NULL OR tick_lease_until <= due_by)
                    FOR NO KEY UPDATE SKIP LOCKED) a
     WHERE d.is_paper_trading = paper AND d.next_tick_at <= due_by
       AND (d.next_tick_at, d.agent_id) > (after_at, after_id)
     ORDER BY d.next_tick_at, d.agent_id
     LIMIT batch;
END
$$;

ANALYZE agent_due;

//! The tools `/mcp` offers: each is one REST operation (method and path), called in process
//! through the API router with the caller's key, so a tool refuses exactly what the REST call
//! refuses, with the same message, and counts against the same rate limits (docs/mcp.md).
//!
//! A tool's input schema is not written here: [`super::schema`] derives it from the same OpenAPI
//! operation, so the two cannot drift. What is written here is what a model needs to choose the
//! tool well: its name, a title, and a description that says when to use it and what comes back.

use axum::http::Method;

/// Whose key a tool needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Audience {
    /// A public read: any key may call it. An account key is passed on (it may see more, e.g.
    /// a private tournament it joined); a v1 key is not, since the platform API does not know it.
    Anyone,
    /// An account key (`svc_live_…` from `POST /api/api-keys`), with the REST call's scope.
    Account,
    /// A v1 key (`POST /api/v1/api-keys`), with the REST call's permission.
    Agents,
}

/// What a tool does beyond forwarding its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Extra {
    None,
    /// `dungeonId` may be left out: today's dungeon (UTC), by the server's clock.
    TodayByDefault,
    /// The run's own key plays it: fetched for the caller's account
    /// (`GET /api/dungeons/runs/{runId}/credential`) and sent in place of the caller's key.
    RunKey,
    /// The run page without its event record: the summary and the state now.
    RunState,
    /// The run page's event record only, with where the next page starts.
    RunEvents,
}

/// One tool.
#[derive(Debug)]
pub(crate) struct ToolSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub method: Method,
    /// The REST path as the OpenAPI document names it (`{id}` is the tournament's id and
    /// appears as `tournamentId` among the tool's arguments).
    pub path: &'static str,
    pub audience: Audience,
    pub extra: Extra,
}

impl ToolSpec {
    pub(crate) fn read_only(&self) -> bool {
        self.method == Method::GET
    }
}

/// Every tool, in the order `tools/list` shows them.
pub(crate) static TOOLS: &[ToolSpec] = &[
    // Tournaments.
    ToolSpec {
        name: "list_tournaments",
        title: "List tournaments",
        description: "List trading tournaments, newest first, filtered by status and other fields. \
            Returns tournaments with their id, status (upcoming, registering, live, ended, cancelled), \
            dates, entry fee in USDC and prize pool, plus a cursor for the next page.",
        method: Method::GET,
        path: "/api/tournaments",
        audience: Audience::Anyone,
        extra: Extra::None,
    },
    ToolSpec {
        name: "get_tournament",
        title: "Get a tournament",
        description: "One tournament by id: its rules, dates, entry fee (USDC), escrow wallet, \
            prize split and how many wallets have registered.",
        method: Method::GET,
        path: "/api/tournaments/{id}",
        audience: Audience::Anyone,
        extra: Extra::None,
    },
    ToolSpec {
        name: "get_tournament_leaderboard",
        title: "Tournament leaderboard",
        description: "The tournament's current standings: rank, wallet and flow-adjusted result \
            of every participant. Subscribe to crucible://tournaments/{tournamentId}/leaderboard \
            to hear when it changes.",
        method: Method::GET,
        path: "/api/tournaments/{id}/leaderboard",
        audience: Audience::Anyone,
        extra: Extra::None,
    },
    ToolSpec {
        name: "get_registration_memo",
        title: "Registration memo",
        description: "The memo a paid registration's USDC transfer must carry for the given \
            wallets, with the amount and the escrow wallet to pay. Not needed with \
            payFrom=\"embedded\": the server builds that payment itself.",
        method: Method::GET,
        path: "/api/tournaments/{id}/registration-memo",
        audience: Audience::Account,
        extra: Extra::None,
    },
    ToolSpec {
        name: "register_for_tournament",
        title: "Register for a tournament",
        description: "Register one (registeredWallet) or several (registeredWallets) of your \
            account's wallets. Free tournament: txSignature null. Paid: either the signature of \
            your USDC transfer (with payerWallet), or payFrom \"embedded\" to let the server pay \
            from your account's embedded wallet within your key's spend limits. Needs the \
            `write` scope.",
        method: Method::POST,
        path: "/api/tournaments/{id}/register",
        audience: Audience::Account,
        extra: Extra::None,
    },
    // The dungeon.
    ToolSpec {
        name: "get_dungeon",
        title: "Today's dungeon",
        description: "The daily dungeon: its id (the UTC date), whether entries are open, the \
            entry price in USDC, the wallet that receives entry payments and today's best runs. \
            Leave dungeonId out for today's.",
        method: Method::GET,
        path: "/api/dungeons/{dungeonId}",
        audience: Audience::Anyone,
        extra: Extra::TodayByDefault,
    },
    ToolSpec {
        name: "quote_dungeon_entry",
        title: "Quote a dungeon entry",
        description: "A signed quote (valid 15 minutes) for entering the dungeon from `wallet`: \
            the amount, the memo and the quoteId that enter_dungeon needs. Leave dungeonId out \
            for today's.",
        method: Method::POST,
        path: "/api/dungeons/{dungeonId}/quote",
        audience: Audience::Anyone,
        extra: Extra::TodayByDefault,
    },
    ToolSpec {
        name: "enter_dungeon",
        title: "Enter the dungeon",
        description: "Start a run with a quote: pay it with your own transfer's txSignature, or \
            with payFrom \"embedded\" to let the server pay from your account's embedded wallet \
            within your key's spend limits. Returns the runId to play with take_dungeon_turn. \
            Needs the `write` scope.",
        method: Method::POST,
        path: "/api/dungeons/{dungeonId}/enter",
        audience: Audience::Account,
        extra: Extra::TodayByDefault,
    },
    ToolSpec {
        name: "get_dungeon_run",
        title: "A run's state",
        description: "What the runner sees now: floor, room, hit points, action points, \
            inventory, the actions available this turn, and whether the run has ended. Subscribe \
            to crucible://dungeon/runs/{runId} to hear of every turn.",
        method: Method::GET,
        path: "/api/dungeons/runs/{runId}",
        audience: Audience::Anyone,
        extra: Extra::RunState,
    },
    ToolSpec {
        name: "take_dungeon_turn",
        title: "Take a turn",
        description: "Play one turn of your run: an action from the state's availableActions, \
            with turnNumber = the state's turn. A repeated turnNumber is answered from the record, \
            never played twice. An illegal action costs 1 AP and returns the state again.",
        method: Method::POST,
        path: "/api/dungeons/runs/{runId}/turn",
        audience: Audience::Account,
        extra: Extra::RunKey,
    },
    ToolSpec {
        name: "get_dungeon_run_events",
        title: "A run's events",
        description: "The run's event record, oldest first: every turn, fight and find, after \
            sequence number afterSeq (0 for the start), at most `limit` at a time.",
        method: Method::GET,
        path: "/api/dungeons/runs/{runId}",
        audience: Audience::Anyone,
        extra: Extra::RunEvents,
    },
    // The account.
    ToolSpec {
        name: "list_wallets",
        title: "Your wallets and balances",
        description: "Your account's wallets (the embedded one and those you linked) with their \
            SOL and USDC balances now.",
        method: Method::GET,
        path: "/api/account/wallets",
        audience: Audience::Account,
        extra: Extra::None,
    },
    ToolSpec {
        name: "list_entries",
        title: "Your tournament entries",
        description: "The tournaments your wallets entered, with each entry's status, final rank, \
            result and prize.",
        method: Method::GET,
        path: "/api/account/tournaments",
        audience: Audience::Account,
        extra: Extra::None,
    },
    ToolSpec {
        name: "list_payouts",
        title: "Your payouts",
        description: "Prizes and refunds paid (or being paid) to your wallets, newest first, with \
            their status and transaction signature.",
        method: Method::GET,
        path: "/api/account/payouts",
        audience: Audience::Account,
        extra: Extra::None,
    },
    ToolSpec {
        name: "list_dungeon_runs",
        title: "Your dungeon runs",
        description: "Your dungeon runs, newest first, with their status and score.",
        method: Method::GET,
        path: "/api/account/dungeon-runs",
        audience: Audience::Account,
        extra: Extra::None,
    },
    // Agents (v1 keys).
    ToolSpec {
        name: "list_agents",
        title: "List your agents",
        description: "Your agents with their class, status (stopped, running, …), wallet and \
            paper or live trading. Needs `agents:read`.",
        method: Method::GET,
        path: "/api/v1/public/agents",
        audience: Audience::Agents,
        extra: Extra::None,
    },
    ToolSpec {
        name: "create_agent",
        title: "Create an agent",
        description: "Create an agent: a name, a class (fighter, ranger, mage, defender, gambler, \
            rogue) or an uploaded strategy, the pair and interval it trades, and optionally the \
            model and personality it thinks with. It starts stopped. Needs `agents:write`.",
        method: Method::POST,
        path: "/api/v1/public/agents/create",
        audience: Audience::Agents,
        extra: Extra::None,
    },
    ToolSpec {
        name: "get_agent",
        title: "Get an agent",
        description: "One of your agents: its settings, status, holdings and model status.",
        method: Method::GET,
        path: "/api/v1/public/agents/{agentId}",
        audience: Audience::Agents,
        extra: Extra::None,
    },
    ToolSpec {
        name: "start_agent",
        title: "Start an agent",
        description: "Start one of your agents: it ticks on its interval from now on. Needs \
            `agents:start`.",
        method: Method::POST,
        path: "/api/v1/public/agents/{agentId}/start",
        audience: Audience::Agents,
        extra: Extra::None,
    },
    ToolSpec {
        name: "stop_agent",
        title: "Stop an agent",
        description: "Stop one of your agents: it no longer ticks. Needs `agents:stop`.",
        method: Method::POST,
        path: "/api/v1/public/agents/{agentId}/stop",
        audience: Audience::Agents,
        extra: Extra::None,
    },
    ToolSpec {
        name: "get_agent_performance",
        title: "An agent's performance",
        description: "An agent's equity, profit and loss, drawdown, win rate and trade count.",
        method: Method::GET,
        path: "/api/v1/public/agents/{agentId}/performance",
        audience: Audience::Agents,
        extra: Extra::None,
    },
    ToolSpec {
        name: "list_agent_trades",
        title: "An agent's trades",
        description: "An agent's trades, newest first, a page at a time.",
        method: Method::GET,
        path: "/api/v1/public/agents/{agentId}/trades",
        audience: Audience::Agents,
        extra: Extra::None,
    },
    ToolSpec {
        name: "list_agent_decisions",
        title: "An agent's decisions",
        description: "What an agent decided at each tick and why: the rule's proposal, the \
            model's answer, tokens and latency, newest first.",
        method: Method::GET,
        path: "/api/v1/public/agents/{agentId}/decisions",
        audience: Audience::Agents,
        extra: Extra::None,
    },
    ToolSpec {
        name: "enter_agent_in_tournament",
        title: "Enter an agent in a tournament",
        description: "Register an agent's own wallet in a tournament; a paid tournament's fee is \
            paid from the agent's wallet. Needs `agents:write`.",
        method: Method::POST,
        path: "/api/v1/public/agents/{agentId}/tournaments/{tournamentId}/enter",
        audience: Audience::Agents,
        extra: Extra::None,
    },
];

/// The tool called `name`.
#[cfg(test)]
pub(crate) fn find(name: &str) -> Option<&'static ToolSpec> {
    TOOLS.iter().find(|tool| tool.name == name)
}

/// The name a path parameter has among a tool's arguments: the tournament routes call their
/// id `{id}`, which says nothing to a model reading the tool's schema.
pub(crate) fn argument_name(path_parameter: &str) -> &str {
    if path_parameter == "id" {
        "tournamentId"
    } else {
        path_parameter
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_valid_tool_names() {
        let mut names: Vec<&str> = TOOLS.iter().map(|tool| tool.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), TOOLS.len());
        for name in names {
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit()),
                "{name}"
            );
        }
    }

    #[test]
    fn only_tournament_paths_call_their_id_id() {
        for tool in TOOLS.iter().filter(|tool| tool.path.contains("{id}")) {
            assert!(tool.path.starts_with("/api/tournaments/"), "{}", tool.name);
        }
    }
}

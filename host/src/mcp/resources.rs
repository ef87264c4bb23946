//! Resources: what an agent reads again and again, named by `crucible://` URIs, read through the
//! same REST reads as the tools, and announced as changed by the same events that move the live
//! streams (docs/mcp.md, "Resources").

use axum::http::Method;

use super::catalog::Extra;
use crate::events::Event;

/// A resource this server knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resource {
    /// Today's dungeon (`crucible://dungeon/today`).
    Today,
    /// A tournament (`crucible://tournaments/{id}`).
    Tournament(String),
    /// A tournament's standings (`crucible://tournaments/{id}/leaderboard`).
    Leaderboard(String),
    /// A dungeon run's visible state (`crucible://dungeon/runs/{runId}`).
    Run(String),
}

const SCHEME: &str = "crucible://";

/// The URI templates `resources/templates/list` shows: (template, name, title, description).
pub(crate) const TEMPLATES: [(&str, &str, &str, &str); 3] = [
    (
        "crucible://tournaments/{tournamentId}",
        "tournament",
        "A tournament",
        "A tournament's rules, dates, fee and status. Changes when it starts, ends or is cancelled.",
    ),
    (
        "crucible://tournaments/{tournamentId}/leaderboard",
        "tournament-leaderboard",
        "A tournament's leaderboard",
        "Rank, wallet and result of every participant. Changes with every snapshot and registration.",
    ),
    (
        "crucible://dungeon/runs/{runId}",
        "dungeon-run",
        "A dungeon run's state",
        "What the runner sees now: floor, room, HP, AP, inventory, available actions. Changes every turn.",
    ),
];

/// Today's dungeon as a listed resource: (uri, name, title, description).
pub(crate) const TODAY: (&str, &str, &str, &str) = (
    "crucible://dungeon/today",
    "dungeon-today",
    "Today's dungeon",
    "The daily dungeon: whether entries are open, the price, today's best runs.",
);

impl Resource {
    /// The resource `uri` names, if any.
    pub(crate) fn parse(uri: &str) -> Option<Resource> {
        let rest = uri.strip_prefix(SCHEME)?;
        let parts: Vec<&str> = rest.split('/').collect();
        let id = |text: &str| {
            (!text.is_empty()
                && text.len() <= 128
                && text
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_')))
            .then(|| text.to_owned())
        };
        match parts.as_slice() {
            ["dungeon", "today"] => Some(Resource::Today),
            ["tournaments", tournament] => id(tournament).map(Resource::Tournament),
            ["tournaments", tournament, "leaderboard"] => id(tournament).map(Resource::Leaderboard),
            ["dungeon", "runs", run] => id(run).map(Resource::Run),
            _ => None,
        }
    }

    pub(crate) fn uri(&self) -> String {
        match self {
            Resource::Today => format!("{SCHEME}dungeon/today"),
            Resource::Tournament(id) => format!("{SCHEME}tournaments/{id}"),
            Resource::Leaderboard(id) => format!("{SCHEME}tournaments/{id}/leaderboard"),
            Resource::Run(id) => format!("{SCHEME}dungeon/runs/{id}"),
        }
    }

    /// The REST read behind the resource (`today` is the dungeon id of today), and how its
    /// answer is cut.
    pub(crate) fn read(&self, today: &str) -> (Method, String, Extra) {
        match self {
            Resource::Today => (Method::GET, format!("/api/dungeons/{today}"), Extra::None),
            Resource::Tournament(id) => {
                (Method::GET, format!("/api/tournaments/{id}"), Extra::None)
            }
            Resource::Leaderboard(id) => (
                Method::GET,
                format!("/api/tournaments/{id}/leaderboard"),
                Extra::None,
            ),
            Resource::Run(id) => (
                Method::GET,
                format!("/api/dungeons/runs/{id}?limit=1"),
                Extra::RunState,
            ),
        }
    }
}

/// Which subscribed resources an event may have changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Changed {
    /// These URIs.
    Uris(Vec<String>),
    /// Every tournament resource (a tournament changed status; the event does not say which).
    Tournaments,
    /// Everything (this node may have missed events).
    Everything,
    Nothing,
}

impl Changed {
    pub(crate) fn of(event: &Event) -> Changed {
        match event {
            Event::LeaderboardChanged { tournament_id }
            | Event::TournamentEnded { tournament_id } => Changed::Uris(vec![
                Resource::Leaderboard(tournament_id.clone()).uri(),
                Resource::Tournament(tournament_id.clone()).uri(),
            ]),
            Event::DungeonRunEvent { run_id, .. } => {
                Changed::Uris(vec![Resource::Run(run_id.clone()).uri()])
            }
            Event::TournamentsChanged => Changed::Tournaments,
            Event::Resync => Changed::Everything,
            Event::AccountChanged { .. } | Event::KeysChanged { .. } => Changed::Nothing,
        }
    }

    /// Whether `uri` is among what changed.
    pub(crate) fn covers(&self, uri: &str) -> bool {
        match self {
            Changed::Uris(uris) => uris.iter().any(|changed| changed == uri),
            Changed::Tournaments => uri.starts_with("crucible://tournaments/"),
            Changed::Everything => true,
            Changed::Nothing => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_round_trip_and_junk_is_refused() {
        for resource in [
            Resource::Today,
            Resource::Tournament("trn_1".into()),
            Resource::Leaderboard("trn_1".into()),
            Resource::Run("run_9".into()),
        ] {
            assert_eq!(Resource::parse(&resource.uri()), Some(resource));
        }
        for junk in [
            "crucible://tournaments/",
            "crucible://tournaments/a/b",
            "crucible://tournaments/../admin",
            "crucible://dungeon/runs/x?y",
            "https://tournaments/t",
            "crucible://dungeon/runs/a%2Fb",
        ] {
            assert_eq!(Resource::parse(junk), None, "{junk}");
        }
    }

    #[test]
    fn events_name_the_resources_they_change() {
        let board = Changed::of(&Event::LeaderboardChanged {
            tournament_id: "t".into(),
        });
        assert!(board.covers("crucible://tournaments/t/leaderboard"));
        assert!(board.covers("crucible://tournaments/t"));
        assert!(!board.covers("crucible://tournaments/u/leaderboard"));
        let turn = Changed::of(&Event::DungeonRunEvent {
            run_id: "r".into(),
            seq: 3,
        });
        assert!(turn.covers("crucible://dungeon/runs/r"));
        assert!(!turn.covers("crucible://dungeon/runs/s"));
        assert!(Changed::of(&Event::TournamentsChanged).covers("crucible://tournaments/x"));
        assert!(Changed::of(&Event::Resync).covers("crucible://dungeon/runs/r"));
    }
}

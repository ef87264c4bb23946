//! The body of `POST /api/dungeons/runs/{runId}/turn`: an engine [`Action`] plus the turn number the
//! HTTP layer uses for idempotent retries. It lives here rather than in the engine
//! (`crucible-dungeon`) because it is an HTTP shape (with its OpenAPI schema) and because clipping
//! what a client sends is about what gets stored, not about the game's rules.

use serde::{Deserialize, Serialize};

use super::game::Action;

/// The turn body: `{action, target?, turnNumber?}`. `turnNumber` is the number the
/// turn will carry (the state's `turnNumber` + 1); the HTTP layer uses it for idempotent retries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TurnRequest {
    /// One of the state's `availableActions`.
    pub action: String,
    /// What the action is aimed at (an enemy, an item, a direction), where it needs one.
    #[serde(default)]
    pub target: Option<String>,
    /// The state's `turnNumber` + 1; a retry with the same number is answered from the record.
    #[serde(default)]
    pub turn_number: Option<u64>,
}

/// Longest `action` kept from a request, in characters (the longest real action is far
/// shorter); longer ones are cut before anything is checked or stored.
const MAX_ACTION_CHARS: usize = 32;
/// Longest `target` kept from a request, in characters.
const MAX_TARGET_CHARS: usize = 64;

impl TurnRequest {
    /// The request with its strings cut to [`MAX_ACTION_CHARS`] and [`MAX_TARGET_CHARS`]: an
    /// illegal action is recorded with the run (and replayed to watchers), so what a client
    /// sends must not decide how much is stored.
    pub(crate) fn clipped(mut self) -> Self {
        clip(&mut self.action, MAX_ACTION_CHARS);
        if let Some(target) = &mut self.target {
            clip(target, MAX_TARGET_CHARS);
        }
        self
    }

    pub(crate) fn to_action(&self) -> Action {
        Action {
            action: self.action.clone(),
            target: self.target.clone(),
        }
    }
}

/// Cut `text` to at most `max` characters, marking the cut with `…`.
fn clip(text: &mut String, max: usize) {
    if let Some((cut, _)) = text.char_indices().nth(max) {
        text.truncate(cut);
        text.push('…');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dungeon::game::ActionKind;

    #[test]
    fn turn_requests_parse_from_the_documented_body() {
        let body: TurnRequest =
            serde_json::from_str(r#"{"action":"move","target":"north","turnNumber":3}"#)
                .expect("parse");
        assert_eq!(body.turn_number, Some(3));
        assert_eq!(
            body.to_action(),
            Action::new(ActionKind::Move, Some("north"))
        );
        let bare: TurnRequest = serde_json::from_str(r#"{"action":"rest"}"#).expect("parse");
        assert_eq!((bare.target, bare.turn_number), (None, None));
    }

    #[test]
    fn client_strings_are_cut_before_anything_uses_them() {
        let request = TurnRequest {
            action: "é".repeat(10_000),
            target: Some("x".repeat(10_000)),
            turn_number: Some(3),
        }
        .clipped();
        assert_eq!(request.action.chars().count(), MAX_ACTION_CHARS + 1);
        assert!(request.action.ends_with('…'));
        assert_eq!(
            request.target.as_deref().map(|t| t.chars().count()),
            Some(MAX_TARGET_CHARS + 1)
        );
        let short = TurnRequest {
            action: "attack".into(),
            target: Some("goblin".into()),
            turn_number: None,
        }
        .clipped();
        assert_eq!(
            (short.action.as_str(), short.target.as_deref()),
            ("attack", Some("goblin"))
        );
    }
}

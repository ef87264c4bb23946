//! Where a backtest's model answers come from: a provider called directly (the CLI's own
//! endpoint and key), a recording of such a run (every answer, or failure, as a JSON line keyed
//! by the prompt's hash), and a replay of a recording — so a backtest with a model can be rerun
//! bit for bit without calling anyone.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::io::{BufRead, Write};
use std::path::Path;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Oracle, prompt_hash};
use crate::models::{Completion, ModelError, ModelRequest, Models};
use crate::secret::Secret;

type Asked<'a> = Pin<Box<dyn Future<Output = Result<Completion, ModelError>> + Send + 'a>>;

/// A provider called with one key for every question (the CLI's `--model-key-env`).
pub(crate) struct DirectOracle {
    pub models: Models,
    pub key: Option<Secret>,
}

impl Oracle for DirectOracle {
    fn ask<'a>(&'a self, _account_id: &'a str, request: &'a ModelRequest) -> Asked<'a> {
        Box::pin(self.models.complete(self.key.as_ref(), request))
    }
}

/// One line of a recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Recorded {
    prompt_hash: String,
    #[serde(flatten)]
    outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged, rename_all_fields = "camelCase")]
enum Outcome {
    Answer {
        text: String,
        prompt_tokens: u64,
        completion_tokens: u64,
        latency_ms: u64,
    },
    Failure {
        error: Failure,
    },
}

/// A [`ModelError`] as a recording keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
enum Failure {
    NoEndpoint { vendor: String },
    NoKey { vendor: String },
    BudgetExhausted,
    Timeout,
    Refused { status: u16, reason: String },
    Malformed { detail: String },
    KeyUnavailable,
}

impl From<&ModelError> for Failure {
    fn from(error: &ModelError) -> Self {
        match error.clone() {
            ModelError::NoEndpoint(vendor) => Failure::NoEndpoint { vendor },
            ModelError::NoKey(vendor) => Failure::NoKey { vendor },
            ModelError::BudgetExhausted => Failure::BudgetExhausted,
            ModelError::Timeout => Failure::Timeout,
            ModelError::Refused { status, reason } => Failure::Refused { status, reason },
            ModelError::Malformed(detail) => Failure::Malformed { detail },
            ModelError::KeyUnavailable => Failure::KeyUnavailable,
        }
    }
}

impl From<Failure> for ModelError {
    fn from(failure: Failure) -> Self {
        match failure {
            Failure::NoEndpoint { vendor } => ModelError::NoEndpoint(vendor),
            Failure::NoKey { vendor } => ModelError::NoKey(vendor),
            Failure::BudgetExhausted => ModelError::BudgetExhausted,
            Failure::Timeout => ModelError::Timeout,
            Failure::Refused { status, reason } => ModelError::Refused { status, reason },
            Failure::Malformed { detail } => ModelError::Malformed(detail),
            Failure::KeyUnavailable => ModelError::KeyUnavailable,
        }
    }
}

fn hash_of(request: &ModelRequest) -> String {
    prompt_hash(&format!("{}/{}", request.vendor, request.model), request)
}

/// Passes every question to `inner` and appends what came back to a file.
pub(crate) struct Recording<O> {
    inner: O,
    out: Mutex<std::io::BufWriter<std::fs::File>>,
}

impl<O: Oracle> Recording<O> {
    /// Record into `path` (created, or truncated: one recording per run).
    pub(crate) fn create(inner: O, path: &Path) -> std::io::Result<Self> {
        let file = std::fs::File::create(path)?;
        Ok(Recording {
            inner,
            out: Mutex::new(std::io::BufWriter::new(file)),
        })
    }

    fn write(&self, line: &Recorded) -> std::io::Result<()> {
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        serde_json::to_writer(&mut *out, line)?;
        out.write_all(b"\n")?;
        out.flush()
    }
}

impl<O: Oracle> Oracle for Recording<O> {
    fn ask<'a>(&'a self, account_id: &'a str, request: &'a ModelRequest) -> Asked<'a> {
        Box::pin(async move {
            let answer = self.inner.ask(account_id, request).await;
            let outcome = match &answer {
                Ok(completion) => Outcome::Answer {
                    text: completion.text.clone(),
                    prompt_tokens: completion.prompt_tokens,
                    completion_tokens: completion.completion_tokens,
                    latency_ms: completion.latency.as_millis() as u64,
                },
                Err(error) => Outcome::Failure {
                    error: error.into(),
                },
            };
            let line = Recorded {
                prompt_hash: hash_of(request),
                outcome,
            };
            if let Err(error) = self.write(&line) {
                // A recording that cannot be written would not replay: say so loudly, once per
                // answer, but let the backtest finish.
                eprintln!("could not write the model recording: {error}");
            }
            answer
        })
    }

    fn serves(&self, vendor: &str) -> bool {
        self.inner.serves(vendor)
    }
}

/// Answers from a recording, in the order they were recorded for each prompt. A prompt the
/// recording has no (more) answers for is refused, so a replay never calls anyone.
pub(crate) struct Replay {
    answers: Mutex<HashMap<String, VecDeque<Outcome>>>,
}

impl Replay {
    pub(crate) fn open(path: &Path) -> anyhow::Result<Self> {
        let file = std::fs::File::open(path)?;
        let mut answers: HashMap<String, VecDeque<Outcome>> = HashMap::new();
        for (number, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line = line?;
            if line.trim().is_empty() {
                continue;
            }
            let recorded: Recorded = serde_json::from_str(&line).map_err(|error| {
                anyhow::anyhow!(
                    "{}:{}: not a recorded answer: {error}",
                    path.display(),
                    number + 1
                )
            })?;
            answers
                .entry(recorded.prompt_hash)
                .or_default()
                .push_back(recorded.outcome);
        }
        Ok(Replay {
            answers: Mutex::new(answers),
        })
    }
}

impl Oracle for Replay {
    fn ask<'a>(&'a self, _account_id: &'a str, request: &'a ModelRequest) -> Asked<'a> {
        let hash = hash_of(request);
        let next = self
            .answers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_mut(&hash)
            .and_then(VecDeque::pop_front);
        Box::pin(async move {
            match next {
                Some(Outcome::Answer {
                    text,
                    prompt_tokens,
                    completion_tokens,
                    latency_ms,
                }) => Ok(Completion {
                    text,
                    prompt_tokens,
                    completion_tokens,
                    latency: Duration::from_millis(latency_ms),
                }),
                Some(Outcome::Failure { error }) => Err(error.into()),
                None => Err(ModelError::Refused {
                    status: 0,
                    reason: format!("the recording has no answer for prompt {hash}"),
                }),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::Message;

    struct Scripted(Mutex<VecDeque<Result<Completion, ModelError>>>);

    impl Oracle for Scripted {
        fn ask<'a>(&'a self, _: &'a str, _: &'a ModelRequest) -> Asked<'a> {
            let next = self.0.lock().expect("lock").pop_front();
            Box::pin(async move { next.unwrap_or(Err(ModelError::Timeout)) })
        }
    }

    fn request(text: &str) -> ModelRequest {
        ModelRequest {
            vendor: "openai".into(),
            model: "gpt-test".into(),
            personality: "calm".into(),
            messages: vec![Message::user(text)],
            max_tokens: 10,
            temperature: 0.0,
            json_schema: None,
        }
    }

    #[tokio::test]
    async fn a_recording_replays_answers_and_failures_in_order() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("answers.jsonl");
        let answer = Completion {
            text: "{\"action\":\"hold\"}".into(),
            prompt_tokens: 12,
            completion_tokens: 4,
            latency: Duration::from_millis(250),
        };
        let refused = ModelError::Refused {
            status: 429,
            reason: "slow down".into(),
        };
        let live = Scripted(Mutex::new(
            [Ok(answer.clone()), Err(refused.clone()), Ok(answer.clone())].into(),
        ));
        let recording = Recording::create(live, &path).expect("create");
        let (a, b) = (request("tick 1"), request("tick 2"));
        let recorded = [
            recording.ask("acc", &a).await,
            recording.ask("acc", &b).await,
            recording.ask("acc", &a).await,
        ];
        drop(recording);
        let replay = Replay::open(&path).expect("open");
        let replayed = [
            replay.ask("acc", &a).await,
            replay.ask("acc", &b).await,
            replay.ask("acc", &a).await,
        ];
        assert_eq!(recorded, replayed);
        assert_eq!(replayed[1], Err(refused));
        // Nothing more was recorded for this prompt: refused, not asked anywhere.
        let exhausted = replay.ask("acc", &b).await.expect_err("exhausted");
        assert!(exhausted.to_string().contains("no answer for prompt"));
    }

    #[test]
    fn a_broken_recording_is_refused_naming_the_line() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("broken.jsonl");
        std::fs::write(&path, "{\"promptHash\":\"x\",\"text\":\"a\",\"promptTokens\":1,\"completionTokens\":1,\"latencyMs\":1}\nnot json\n").expect("write");
        let error = Replay::open(&path).err().expect("refused").to_string();
        assert!(error.contains("broken.jsonl:2"), "{error}");
    }
}

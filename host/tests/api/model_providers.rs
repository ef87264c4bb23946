//! Model providers (`docs/models.md`): the client against local servers speaking the
//! OpenAI-compatible and the Anthropic formats, and operators' own provider keys.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crucible::config::Config;
use crucible::models::{self, Message, ModelError, ModelRequest};
use serde_json::json;

use crate::helpers::model_provider::{FakeProvider, Reply};
use crate::helpers::{Auth, TestApp};
use crate::host_ops::storage_of;

const PERSONALITY: &str = "You are a cautious contrarian.\nNever chase a pump.";

fn ask(vendor: &str, model: &str) -> ModelRequest {
    ModelRequest {
        vendor: vendor.into(),
        model: model.into(),
        personality: PERSONALITY.into(),
        messages: vec![Message::user("SOL is up 8% in an hour. Buy, sell or hold?")],
        max_tokens: 200,
        temperature: 0.3,
        json_schema: None,
    }
}

/// An account with a session; returns (session, account id).
async fn operator(app: &TestApp, email: &str) -> (String, String) {
    let session = app.session(email).await;
    let id = app.get("/api/account", Auth::Session(&session)).await.body["id"]
        .as_str()
        .expect("id")
        .to_owned();
    (session, id)
}

async fn put_key(
    app: &TestApp,
    auth: Auth<'_>,
    vendor: &str,
    key: &str,
) -> crate::helpers::TestResponse {
    app.request(
        "PUT",
        &format!("/api/account/model-keys/{vendor}"),
        auth,
        Some(crate::helpers::Body::Json(json!({"apiKey": key}))),
    )
    .await
}

#[tokio::test]
async fn the_openai_format_carries_the_accounts_own_key_the_model_and_the_personality() {
    let provider = FakeProvider::openai(vec![Reply::answer("hold: it is a pump")]).await;
    let app = TestApp::spawn_with(|config| {
        config.model_endpoints = vec![provider.endpoint("openai"), provider.endpoint("groq")];
        config.model_default_keys.insert(
            "openai".into(),
            crucible::secret::Secret::new("sk-host-default"),
        );
    })
    .await;
    let (alice, alice_id) = operator(&app, "alice@example.com").await;
    let (bob, bob_id) = operator(&app, "bob@example.com").await;
    let (_, carol_id) = operator(&app, "carol@example.com").await;
    assert_eq!(
        put_key(&app, Auth::Session(&alice), "openai", "sk-alice-0001")
            .await
            .status,
        200
    );
    assert_eq!(
        put_key(&app, Auth::Session(&bob), "openai", "sk-bob-0002")
            .await
            .status,
        200
    );

    let completion = complete_for(&app, &alice_id, &ask("openai", "gpt-4o"))
        .await
        .expect("completes");
    assert_eq!(completion.text, "hold: it is a pump");
    assert_eq!(
        (completion.prompt_tokens, completion.completion_tokens),
        (17, 3)
    );
    let seen = provider.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(seen[0].headers["authorization"], "Bearer sk-alice-0001");
    assert_eq!(seen[0].body["model"], "gpt-4o");
    assert_eq!(seen[0].body["max_tokens"], 200);
    assert_eq!(seen[0].body["temperature"], json!(0.3));
    assert_eq!(
        seen[0].body["messages"],
        json!([
            {"role": "system", "content": PERSONALITY},
            {"role": "user", "content": "SOL is up 8% in an hour. Buy, sell or hold?"},
        ]),
        "the personality first, verbatim"
    );
    assert!(seen[0].body.get("response_format").is_none());

    // Each account its own key; an account without one gets the host's default, never another
    // account's.
    complete_for(&app, &bob_id, &ask("openai", "gpt-4o"))
        .await
        .expect("completes");
    complete_for(&app, &carol_id, &ask("openai", "gpt-4o"))
        .await
        .expect("completes");
    let keys: Vec<_> = provider.seen()[1..]
        .iter()
        .map(|seen| {
            seen.headers["authorization"]
                .to_str()
                .expect("ascii")
                .to_owned()
        })
        .collect();
    assert_eq!(keys, ["Bearer sk-bob-0002", "Bearer sk-host-default"]);

    // A vendor with neither the account's key nor a host default is never called.
    let mut schema_request = ask("groq", "llama-3.3-70b");
    schema_request.json_schema = Some(json!({"type": "object"}));
    assert_eq!(
        complete_for(&app, &carol_id, &schema_request).await,
        Err(ModelError::NoKey("groq".into()))
    );
    assert_eq!(provider.seen().len(), 3);
    // With a key, the schema is asked for as a response format.
    complete_for(&app, &alice_id, &{
        let mut request = schema_request.clone();
        request.vendor = "openai".into();
        request
    })
    .await
    .expect("completes");
    let last = provider.seen().pop().expect("seen");
    assert_eq!(last.body["response_format"]["type"], "json_schema");
    assert_eq!(
        last.body["response_format"]["json_schema"]["schema"],
        json!({"type": "object"})
    );
    assert_eq!(
        complete_for(&app, &alice_id, &ask("nobody", "m")).await,
        Err(ModelError::NoEndpoint("nobody".into()))
    );
}

#[tokio::test]
async fn the_anthropic_format_sends_x_api_key_and_the_personality_as_system() {
    let provider = FakeProvider::anthropic(vec![Reply::answer("sell half")]).await;
    let app = TestApp::spawn_with(|config| {
        config.model_endpoints = vec![provider.endpoint("anthropic")];
    })
    .await;
    let (_, key) = app
        .account_with_key("dana@example.com", &["read", "write"])
        .await;
    let dana_id = app.get("/api/account", Auth::Bearer(&key)).await.body["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (_, other_id) = operator(&app, "eve@example.com").await;
    assert_eq!(
        put_key(&app, Auth::Bearer(&key), "anthropic", "sk-ant-dana-1")
            .await
            .status,
        200,
        "an account key with `write` may set it"
    );
    let completion = complete_for(&app, &dana_id, &ask("anthropic", "claude-sonnet-4"))
        .await
        .expect("completes");
    assert_eq!(completion.text, "sell half");
    assert_eq!(
        (completion.prompt_tokens, completion.completion_tokens),
        (21, 5)
    );
    let seen = provider.seen();
    assert_eq!(seen[0].path, "/v1/messages");
    assert_eq!(seen[0].headers["x-api-key"], "sk-ant-dana-1");
    assert_eq!(seen[0].headers["anthropic-version"], "2023-06-01");
    assert!(seen[0].headers.get("authorization").is_none());
    assert_eq!(seen[0].body["model"], "claude-sonnet-4");
    assert_eq!(seen[0].body["system"], PERSONALITY);
    assert_eq!(
        seen[0].body["messages"],
        json!([{"role": "user", "content": "SOL is up 8% in an hour. Buy, sell or hold?"}])
    );
    // The other account has no key and the host none for anthropic.
    assert_eq!(
        complete_for(&app, &other_id, &ask("anthropic", "claude-sonnet-4")).await,
        Err(ModelError::NoKey("anthropic".into()))
    );
    assert_eq!(provider.seen().len(), 1);
}

#[tokio::test]
async fn a_429_backs_off_that_vendor_only_until_retry_after() {
    let limited = FakeProvider::openai(vec![Reply::Raw(429, "slow down".into(), Some("30"))]).await;
    let other = FakeProvider::anthropic(Vec::new()).await;
    let app = TestApp::spawn_with(|config| {
        config.model_endpoints = vec![limited.endpoint("openai"), other.endpoint("anthropic")];
    })
    .await;
    let (session, id) = operator(&app, "erin@example.com").await;
    put_key(&app, Auth::Session(&session), "openai", "sk-erin-1").await;
    put_key(&app, Auth::Session(&session), "anthropic", "sk-ant-erin-1").await;

    let refused = |result: Result<models::Completion, ModelError>| match result {
        Err(ModelError::Refused { status, reason }) => (status, reason),
        other => panic!("not refused: {other:?}"),
    };
    let (status, reason) = refused(complete_for(&app, &id, &ask("openai", "m")).await);
    assert_eq!(status, 429);
    assert!(reason.contains("retry in 30 s"), "{reason}");
    // Backed off: the next call does not reach the provider.
    let (status, _) = refused(complete_for(&app, &id, &ask("openai", "m")).await);
    assert_eq!(status, 429);
    assert_eq!(limited.seen().len(), 1);
    // Another vendor goes on.
    complete_for(&app, &id, &ask("anthropic", "m"))
        .await
        .expect("other vendors are not held back");
    // After Retry-After, the vendor is called again.
    app.advance(chrono::Duration::seconds(30));
    let completion = complete_for(&app, &id, &ask("openai", "m"))
        .await
        .expect("called again");
    assert_eq!(completion.text, "ok");
    assert_eq!(limited.seen().len(), 2);
}

#[tokio::test]
async fn a_silent_provider_is_a_timeout_and_garbage_is_malformed() {
    let provider = FakeProvider::openai(vec![
        Reply::Silent(Duration::from_secs(30)),
        Reply::Raw(200, "<html>not a completion</html>".into(), None),
        Reply::Raw(200, r#"{"choices":[]}"#.into(), None),
        Reply::Raw(
            401,
            r#"{"error":{"message":"Incorrect API key provided: sk-frank-secret-9","type":"invalid_request_error"}}"#.into(),
            None,
        ),
        Reply::Raw(500, "boom".into(), None),
    ])
    .await;
    let app = TestApp::spawn_with(|config| {
        config.model_endpoints = vec![provider.endpoint("openai")];
        config.model_timeout_ms = 300;
    })
    .await;
    let (session, id) = operator(&app, "frank@example.com").await;
    put_key(&app, Auth::Session(&session), "openai", "sk-frank-secret-9").await;
    let request = ask("openai", "gpt-4o");

    assert_eq!(
        complete_for(&app, &id, &request).await,
        Err(ModelError::Timeout)
    );
    for _ in 0..2 {
        let result = complete_for(&app, &id, &request).await;
        assert!(
            matches!(result, Err(ModelError::Malformed(_))),
            "{result:?}"
        );
    }
    match complete_for(&app, &id, &request).await {
        Err(ModelError::Refused { status, reason }) => {
            assert_eq!(status, 401);
            assert!(!reason.contains("sk-frank-secret-9"), "{reason}");
            assert!(reason.contains("Incorrect API key provided"), "{reason}");
        }
        other => panic!("not refused: {other:?}"),
    }
    assert_eq!(
        complete_for(&app, &id, &request).await,
        Err(ModelError::Refused {
            status: 500,
            reason: "Internal Server Error".into()
        })
    );
}

#[tokio::test]
async fn model_keys_are_put_listed_and_deleted_and_never_returned() {
    let app = TestApp::spawn().await;
    let (session, _) = operator(&app, "gina@example.com").await;
    let secret = "sk-proj-gina-0123456789abcdef";

    let put = put_key(&app, Auth::Session(&session), "openai", secret).await;
    assert_eq!(put.status, 200, "{}", put.body);
    assert_eq!(put.body["vendor"], "openai");
    assert_eq!(put.body["keyPrefix"], "sk-pro");
    assert!(put.body["updatedAt"].is_string());
    // Replacing keeps one key per vendor.
    let replaced = put_key(
        &app,
        Auth::Session(&session),
        "openai",
        "sk-proj-gina-second-key-00",
    )
    .await;
    assert_eq!(replaced.status, 200);
    put_key(
        &app,
        Auth::Session(&session),
        "ollama",
        "anything-goes-here",
    )
    .await;
    let listed = app
        .get("/api/account/model-keys", Auth::Session(&session))
        .await;
    assert_eq!(listed.status, 200);
    let vendors: Vec<_> = listed.body["modelKeys"]
        .as_array()
        .expect("list")
        .iter()
        .map(|key| key["vendor"].as_str().expect("vendor"))
        .collect();
    assert_eq!(vendors, ["ollama", "openai"]);
    for response in [
        &put,
        &replaced,
        &listed,
        &app.get("/api/account", Auth::Session(&session)).await,
    ] {
        let text = response.body.to_string();
        assert!(!text.contains("gina-0123456789"), "{text}");
        assert!(!text.contains("gina-second"), "{text}");
    }

    // Scopes: reading needs `read`, writing `write`; another account sees only its own.
    let (_, reader) = app.account_with_key("hank@example.com", &["read"]).await;
    assert_eq!(
        put_key(&app, Auth::Bearer(&reader), "openai", "sk-hank-1")
            .await
            .status,
        403
    );
    let theirs = app
        .get("/api/account/model-keys", Auth::Bearer(&reader))
        .await;
    assert_eq!(theirs.status, 200);
    assert_eq!(theirs.body["modelKeys"], json!([]));
    assert_eq!(
        app.get("/api/account/model-keys", Auth::None).await.status,
        401
    );
    assert_eq!(
        put_key(&app, Auth::None, "openai", "sk-x-1").await.status,
        401
    );

    // Bad input is refused and changes nothing; a vendor the host has no endpoint for has no
    // key to set.
    let unknown = put_key(&app, Auth::Session(&session), "evil-corp", "sk-1234567").await;
    assert_eq!(unknown.status, 404);
    assert!(unknown.error().contains("openai"), "{}", unknown.body);
    assert!(unknown.error().contains("anthropic"), "{}", unknown.body);
    for bad in [String::new(), "k".repeat(513), "sk with spaces".into()] {
        let response = put_key(&app, Auth::Session(&session), "openai", &bad).await;
        assert_eq!(response.status, 400, "{bad:?}: {}", response.body);
    }
    let extra = app
        .request(
            "PUT",
            "/api/account/model-keys/openai",
            Auth::Session(&session),
            Some(crate::helpers::Body::Json(
                json!({"apiKey": "sk-abc-1234", "baseUrl": "http://evil.example"}),
            )),
        )
        .await;
    assert_eq!(extra.status, 400, "no address can be sent: {}", extra.body);
    let after = app
        .get("/api/account/model-keys", Auth::Session(&session))
        .await;
    assert_eq!(after.body, listed.body, "nothing changed");

    // Delete.
    assert_eq!(
        app.delete("/api/account/model-keys/openai", Auth::Session(&session))
            .await
            .status,
        204
    );
    assert_eq!(
        app.delete("/api/account/model-keys/openai", Auth::Session(&session))
            .await
            .status,
        404
    );
    assert_eq!(
        app.delete("/api/account/model-keys/evil-corp", Auth::Session(&session))
            .await
            .status,
        404
    );
    let left = app
        .get("/api/account/model-keys", Auth::Session(&session))
        .await;
    assert_eq!(left.body["modelKeys"].as_array().expect("list").len(), 1);

    // Every change is among the account's key events, with the prefix only.
    let audit = app.get("/api/account/audit", Auth::Session(&session)).await;
    let actions: Vec<_> = audit.body["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|entry| entry["action"].as_str())
        .filter(|action| action.starts_with("key.model."))
        .collect();
    assert_eq!(
        actions,
        [
            "key.model.delete",
            "key.model.put",
            "key.model.put",
            "key.model.put"
        ],
        "{}",
        audit.body
    );
    assert!(!audit.body.to_string().contains("gina-0123456789"));
}

async fn sealed_keys(app: &TestApp) -> Vec<String> {
    sqlx::query_as::<_, (String,)>("SELECT key_sealed FROM model_keys")
        .fetch_all(app.state.store.read())
        .await
        .expect("read")
        .into_iter()
        .map(|(sealed,)| sealed)
        .collect()
}

#[tokio::test]
async fn model_keys_are_sealed_at_rest_and_master_key_rotation_reseals_them() {
    let app = TestApp::spawn().await;
    let (session, id) = operator(&app, "ivy@example.com").await;
    let secret = "sk-ant-ivy-0123456789";
    put_key(&app, Auth::Session(&session), "anthropic", secret).await;
    let before = sealed_keys(&app).await;
    assert_eq!(before.len(), 1);
    assert!(!before[0].contains(secret), "the column is not the key");
    assert!(!before[0].contains("0123456789"));
    assert_eq!(
        key_for(&app, &id, "anthropic")
            .await
            .expect("reads")
            .map(|k| k.expose().to_owned()),
        Some(secret.to_owned())
    );

    let rotated = Arc::new(Mutex::new(None));
    let app = app
        .restart_after(
            {
                let rotated = rotated.clone();
                |config: Config| async move {
                    let done = crucible::master_key::rotate(&storage_of(&config))
                        .await
                        .expect("rotate");
                    *rotated.lock().expect("lock") = Some(done.new_key.clone());
                }
            },
            |config| {
                config.master_key = rotated.lock().expect("lock").clone();
            },
        )
        .await;
    let after = sealed_keys(&app).await;
    assert_ne!(after, before, "sealed again");
    let old = crucible::crypto::Sealer::new([0u8; 32]);
    assert!(
        old.open(&after[0]).is_err(),
        "no longer opens with the old key"
    );
    assert_eq!(
        key_for(&app, &id, "anthropic")
            .await
            .expect("reads")
            .map(|k| k.expose().to_owned()),
        Some(secret.to_owned()),
        "the same key under the new master key"
    );
}

/// Ask through `app`'s providers for `account_id` (the account's key, else the host's default).
async fn complete_for(
    app: &TestApp,
    account_id: &str,
    request: &ModelRequest,
) -> Result<models::Completion, ModelError> {
    let s = &app.state;
    models::complete_for(&s.store, &s.sealer, &s.models, account_id, request).await
}

/// The key `app` would send to `vendor` for `account_id`.
async fn key_for(
    app: &TestApp,
    account_id: &str,
    vendor: &str,
) -> Result<Option<crucible::secret::Secret>, ModelError> {
    let s = &app.state;
    models::key_for(&s.store, &s.sealer, &s.models, account_id, vendor).await
}

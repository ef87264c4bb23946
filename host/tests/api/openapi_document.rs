//! The OpenAPI document tells the truth (docs/api.md, "The OpenAPI document"): its credentials,
//! unique operation ids, and the constraints the request types enforce; and a 400 from a parser
//! says what is wrong in our words, not the parser's.

use std::collections::BTreeSet;

use crate::helpers::{Auth, TestApp};
use serde_json::{Value, json};

const METHODS: [&str; 5] = ["get", "put", "post", "patch", "delete"];

async fn document(app: &TestApp) -> Value {
    let response = app.get("/api/openapi.json", Auth::None).await;
    assert_eq!(response.status, 200);
    response.body
}

/// Every `(path, method, operation)` of the document.
fn operations(document: &Value) -> Vec<(String, &'static str, Value)> {
    let mut all = Vec::new();
    for (path, item) in document["paths"].as_object().expect("paths") {
        for method in METHODS {
            if let Some(operation) = item.get(method) {
                all.push((path.clone(), method, operation.clone()));
            }
        }
    }
    all
}

fn operation(document: &Value, path: &str, method: &str) -> Value {
    document["paths"][path][method].clone()
}

/// The schema behind a `$ref` (or the schema itself).
fn resolve<'a>(document: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(reference) => {
            let name = reference.trim_start_matches("#/components/schemas/");
            &document["components"]["schemas"][name]
        }
        None => schema,
    }
}

fn query_parameter(operation: &Value, name: &str) -> Value {
    operation["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .find(|parameter| parameter["name"] == name && parameter["in"] == "query")
        .unwrap_or_else(|| panic!("no query parameter `{name}`"))["schema"]
        .clone()
}

fn json_body(document: &Value, operation: &Value) -> Value {
    let schema = &operation["requestBody"]["content"]["application/json"]["schema"];
    resolve(document, schema).clone()
}

#[tokio::test]
async fn the_four_credentials_are_declared_schemes() {
    let app = TestApp::spawn().await;
    let document = document(&app).await;
    let schemes = &document["components"]["securitySchemes"];
    assert_eq!(
        schemes["sessionCookie"],
        json!({"type": "apiKey", "in": "cookie", "name": "session-token",
               "description": schemes["sessionCookie"]["description"]})
    );
    assert_eq!(schemes["accountKey"]["type"], "http");
    assert_eq!(schemes["accountKey"]["scheme"], "bearer");
    assert_eq!(schemes["v1Key"]["type"], "apiKey");
    assert_eq!(schemes["v1Key"]["in"], "header");
    assert_eq!(schemes["v1Key"]["name"], "X-API-Key");
    assert_eq!(schemes["runKey"]["scheme"], "bearer");
    assert_eq!(schemes["runKey"]["bearerFormat"], "dgr_…");
}

#[tokio::test]
async fn every_operation_has_its_own_id_and_declares_its_security() {
    let app = TestApp::spawn().await;
    let document = document(&app).await;
    let schemes = document["components"]["securitySchemes"]
        .as_object()
        .expect("securitySchemes");
    let mut ids = BTreeSet::new();
    for (path, method, operation) in operations(&document) {
        let id = operation["operationId"]
            .as_str()
            .unwrap_or_else(|| panic!("{method} {path} has no operationId"));
        assert!(ids.insert(id.to_owned()), "operationId `{id}` repeats");
        let security = operation["security"]
            .as_array()
            .unwrap_or_else(|| panic!("{method} {path} declares no security"));
        assert!(!security.is_empty(), "{method} {path}: empty security");
        for requirement in security {
            for scheme in requirement.as_object().expect("a requirement").keys() {
                assert!(
                    schemes.contains_key(scheme),
                    "{method} {path} names no scheme `{scheme}`"
                );
            }
        }
    }
    assert!(ids.len() > 60, "{} operations", ids.len());

    let schemes_of = |path: &str, method: &str| -> Vec<Value> {
        operation(&document, path, method)["security"]
            .as_array()
            .expect("security")
            .clone()
    };
    // Keys never manage keys, in either family; a run is played with its own key only.
    assert_eq!(
        schemes_of("/api/api-keys", "post"),
        vec![json!({"sessionCookie": []})]
    );
    assert_eq!(
        schemes_of("/api/v1/api-keys", "post"),
        vec![json!({"sessionCookie": []})]
    );
    assert_eq!(
        schemes_of("/api/dungeons/runs/{runId}/turn", "post"),
        vec![json!({"runKey": []})]
    );
    assert_eq!(
        schemes_of("/api/v1/public/agents", "get"),
        vec![json!({"v1Key": []})]
    );
    assert_eq!(
        schemes_of("/api/account", "get"),
        vec![json!({"sessionCookie": []}), json!({"accountKey": []})]
    );
    // A registration works without a credential and with either account credential.
    assert_eq!(
        schemes_of("/api/tournaments/{id}/register", "post"),
        vec![
            json!({}),
            json!({"sessionCookie": []}),
            json!({"accountKey": []})
        ]
    );
    assert_eq!(schemes_of("/api/health", "get"), vec![json!({})]);
    // The v1 refusal of a key managing keys is documented.
    for method in ["get", "post"] {
        assert!(
            operation(&document, "/api/v1/api-keys", method)["responses"]["403"].is_object(),
            "{method} /api/v1/api-keys: 403"
        );
    }
}

#[tokio::test]
async fn query_constraints_are_those_the_server_enforces() {
    let app = TestApp::spawn().await;
    let document = document(&app).await;

    let leaderboard = operation(&document, "/api/tournaments/{id}/leaderboard", "get");
    let page_size = query_parameter(&leaderboard, "pageSize");
    assert_eq!(
        (page_size["minimum"].as_i64(), page_size["maximum"].as_i64()),
        (Some(1), Some(500))
    );
    let page = query_parameter(&leaderboard, "page");
    assert_eq!(page["maximum"].as_i64(), Some(100_000));

    // Read as strings to word their own errors, documented as the integers they must be.
    let agents = operation(&document, "/api/v1/public/agents", "get");
    let page_index = query_parameter(&agents, "pageIndex");
    assert!(
        page_index["type"] == "integer"
            || page_index["type"]
                .as_array()
                .is_some_and(|t| t.contains(&json!("integer"))),
        "{page_index}"
    );
    assert_eq!(page_index["minimum"].as_i64(), Some(0));
    let page_size = query_parameter(&agents, "pageSize");
    assert_eq!(
        (page_size["minimum"].as_i64(), page_size["maximum"].as_i64()),
        (Some(1), Some(50))
    );

    let list = operation(&document, "/api/tournaments", "get");
    assert_eq!(
        query_parameter(&list, "orderBy")["pattern"],
        "^(name|createdAt|startDate|endDate|currentParticipants)?$"
    );
    assert_eq!(query_parameter(&list, "search")["maxLength"], 100);

    let trades = operation(&document, "/api/v1/public/agents/{agentId}/trades", "get");
    assert_eq!(
        query_parameter(&trades, "limit")["maximum"].as_i64(),
        Some(500)
    );
    // Wherever a query is read, its 400 is documented.
    for (path, method, operation) in operations(&document) {
        let has_query = operation["parameters"]
            .as_array()
            .is_some_and(|parameters| parameters.iter().any(|p| p["in"] == "query"));
        if has_query || operation.get("requestBody").is_some() {
            assert!(
                operation["responses"]["400"].is_object(),
                "{method} {path} reads input but documents no 400"
            );
        }
    }
}

#[tokio::test]
async fn body_constraints_are_those_the_server_enforces() {
    let app = TestApp::spawn().await;
    let document = document(&app).await;

    // The agent body is a real schema now, not `{"type": "object"}` with the fields in prose.
    let create = operation(&document, "/api/v1/public/agents/create", "post");
    let agent = json_body(&document, &create);
    let required: BTreeSet<&str> = agent["required"]
        .as_array()
        .expect("required")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        required,
        BTreeSet::from(["name", "username", "class", "modelId", "strategy"])
    );
    assert_eq!(agent["properties"]["name"]["maxLength"], 64);
    assert_eq!(
        agent["properties"]["username"]["pattern"],
        "^[A-Za-z0-9_]{3,32}$"
    );
    assert_eq!(
        agent["properties"]["class"]["enum"]
            .as_array()
            .map(Vec::len),
        Some(6)
    );
    assert_eq!(
        agent["properties"]["strategy"]["properties"]["maxAllocation"]["maximum"].as_f64(),
        Some(100.0)
    );

    // A registration names one wallet or several, never both.
    let register = operation(&document, "/api/tournaments/{id}/register", "post");
    let body = json_body(&document, &register);
    let parts = body["allOf"].as_array().expect("allOf");
    let one_of = parts
        .iter()
        .find_map(|part| part["oneOf"].as_array())
        .expect("oneOf");
    let alternatives: Vec<Value> = one_of.iter().map(|a| a["required"].clone()).collect();
    assert_eq!(
        alternatives,
        vec![json!(["registeredWallet"]), json!(["registeredWallets"])]
    );
    let fields = resolve(&document, &parts[0]);
    assert_eq!(fields["properties"]["registeredWallets"]["maxItems"], 10);
    let wallet = &document["components"]["schemas"]["WalletAddress"];
    assert_eq!(wallet["format"], "solana-address");
    assert_eq!(
        (wallet["minLength"].as_i64(), wallet["maxLength"].as_i64()),
        (Some(32), Some(44))
    );

    let v1_key = json_body(&document, &operation(&document, "/api/v1/api-keys", "post"));
    assert_eq!(v1_key["properties"]["name"]["maxLength"], 64);
    assert_eq!(v1_key["properties"]["permissions"]["minItems"], 1);
    assert_eq!(
        v1_key["properties"]["expiresInDays"]["maximum"].as_i64(),
        Some(365)
    );

    let signup = json_body(&document, &operation(&document, "/api/auth/signup", "post"));
    assert_eq!(signup["properties"]["acceptTerms"]["enum"], json!([true]));
    let password = resolve(&document, &signup["properties"]["password"]);
    assert_eq!(
        (
            password["minLength"].as_i64(),
            password["maxLength"].as_i64()
        ),
        (Some(10), Some(128))
    );
}

#[tokio::test]
async fn a_400_from_the_parsers_says_what_is_wrong_in_our_words() {
    let app = TestApp::spawn().await;
    let too_large = app
        .get(
            "/api/tournaments?pageSize=99999999999999999999999",
            Auth::None,
        )
        .await;
    assert_eq!(too_large.status, 400);
    assert_eq!(
        too_large.body["error"],
        "invalid query: `pageSize` is out of range"
    );

    let wrong_type = app
        .post(
            "/api/auth/signup",
            Auth::None,
            json!({"email": 7, "password": "a password 1"}),
        )
        .await;
    assert_eq!(wrong_type.status, 400);
    assert_eq!(
        wrong_type.body["error"],
        "invalid request body: `email` must be a string"
    );

    let missing = app
        .post("/api/auth/login", Auth::None, json!({"email": "a@b.co"}))
        .await;
    assert_eq!(missing.status, 400);
    assert_eq!(
        missing.body["error"],
        "invalid request body: `password` is required"
    );
    for answer in [&too_large, &wrong_type, &missing] {
        let text = answer.body["error"].as_str().expect("error");
        assert!(
            !text.contains("deserialize") && !text.contains("line 1"),
            "{text}"
        );
    }
}

/// Answers decided by the data rather than the request's shape are listed with their bodies: a
/// taken username (409), a trades cursor that is not the agent's (400 naming `before`), and a
/// turn's 400 in either of its two forms (an illegal action, or a body that does not parse).
#[tokio::test]
async fn answers_the_data_decides_are_documented_with_their_bodies() {
    let app = TestApp::spawn().await;
    let document = document(&app).await;

    let create = operation(&document, "/api/v1/public/agents/create", "post");
    let taken = &create["responses"]["409"];
    assert!(
        taken["description"]
            .as_str()
            .is_some_and(|text| text.contains("username")),
        "{taken}"
    );
    assert!(taken["content"]["application/json"]["schema"]["$ref"].is_string());

    let trades = operation(&document, "/api/v1/public/agents/{agentId}/trades", "get");
    let before = trades["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .find(|parameter| parameter["name"] == "before")
        .expect("before")
        .clone();
    assert!(
        before["description"]
            .as_str()
            .is_some_and(|text| text.contains("400")),
        "{before}"
    );

    let turn = operation(&document, "/api/dungeons/runs/{runId}/turn", "post");
    let refused = resolve(
        &document,
        &turn["responses"]["400"]["content"]["application/json"]["schema"],
    );
    let forms = refused["oneOf"].as_array().expect("oneOf");
    assert_eq!(forms.len(), 2, "{refused}");
    let required: Vec<Value> = forms
        .iter()
        .map(|form| resolve(&document, form)["required"].clone())
        .collect();
    assert!(
        required.contains(&json!(["error"])),
        "the plain error form: {required:?}"
    );
    assert!(
        required.iter().any(|names| names
            .as_array()
            .is_some_and(|names| names.iter().any(|name| name == "availableActions"))),
        "the illegal action's form: {required:?}"
    );
}

/// A leaderboard entry has its final standing only once the tournament has ended, so none of
/// those members is required; a wallet proof's signature names its format (64 bytes).
#[tokio::test]
async fn final_standings_are_optional_and_signatures_have_their_format() {
    let app = TestApp::spawn().await;
    let document = document(&app).await;
    let entry = &document["components"]["schemas"]["Entry"];
    let text = entry.to_string();
    assert!(text.contains("finalRank"), "{entry}");
    let mut required = Vec::new();
    let mut stack = vec![entry];
    while let Some(schema) = stack.pop() {
        if let Some(names) = schema["required"].as_array() {
            required.extend(names.iter().cloned());
        }
        for key in ["allOf", "oneOf", "anyOf"] {
            stack.extend(schema[key].as_array().into_iter().flatten());
        }
    }
    assert!(required.contains(&json!("wallet")), "{required:?}");
    for member in ["finalRank", "prizeAwarded", "prizeAwardedRaw"] {
        assert!(!required.contains(&json!(member)), "{member}: {entry}");
    }
    let members_or_null = entry["allOf"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|part| part["oneOf"].is_array());
    assert!(!members_or_null, "an entry is never null: {entry}");

    for path in ["/api/auth/wallet", "/api/account/wallets"] {
        let body = json_body(&document, &operation(&document, path, "post"));
        assert_eq!(
            body["properties"]["signature"]["format"], "ed25519-signature",
            "{path}: {body}"
        );
    }
}

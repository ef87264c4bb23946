//! The OpenAPI document (`GET /api/openapi.json`): its info and tags, the credentials it names
//! (`components.securitySchemes`), and the answers every operation shares because its extractors
//! give them, added once here rather than repeated on each handler.
//!
//! Each operation declares the schemes it accepts in its own `#[utoipa::path(security(...))]`,
//! next to the extractor that checks them; docs/api.md, "The OpenAPI document", lists them.

use utoipa::Modify;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{OpenApi, Ref, RefOr, ResponseBuilder};

/// The session cookie a browser gets from sign-up or sign-in.
pub(crate) const SESSION_COOKIE: &str = "sessionCookie";
/// An account API key `svc_live_…` as `Authorization: Bearer`.
pub(crate) const ACCOUNT_KEY: &str = "accountKey";
/// A v1 key in `X-API-Key`.
pub(crate) const V1_KEY: &str = "v1Key";
/// A dungeon run's own key `dgr_…` as `Authorization: Bearer`.
pub(crate) const RUN_KEY: &str = "runKey";

#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "Crucible API",
        description = "Tournaments, the daily dungeon and sandboxed strategy agents on Solana wallets."
    ),
    modifiers(&SecuritySchemes),
    tags(
        (name = "platform", description = "Health and public platform endpoints"),
        (name = "auth", description = "Sign-up and sign-in (the web app's back end)"),
        (name = "account", description = "The signed-in account (session or account API key)"),
        (name = "api-keys", description = "Account API keys (session only)"),
        (name = "tournaments", description = "Trading tournaments: list, detail, registration"),
        (name = "admin", description = "Host operations for admins (session only; 403 for anyone else)"),
        (name = "dungeon", description = "The daily dungeon: quotes, paid entry, turns, broadcasts, public reads"),
        (name = "v1", description = "Agents, strategies, webhook deliveries and the tournament list with a v1 key (`X-API-Key`); v1 keys themselves with the session. Every answer is in the v1 envelope"),
    )
)]
pub(super) struct ApiDoc;

/// The four credentials of docs/api.md, "Families, credentials and the answers they share".
struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            SESSION_COOKIE,
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                crate::auth::session::COOKIE_NAME,
                "The browser session set by sign-up or sign-in. Passes every account scope; \
                 the only credential that manages keys",
            ))),
        );
        components.add_security_scheme(
            ACCOUNT_KEY,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("svc_live_…")
                    .description(Some(
                        "An account API key with the route's scope (`read` or `write`); \
                         also accepted in the `X-API-Key` header",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            V1_KEY,
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "X-API-Key",
                "A v1 key holding the route's permission (`agents:read`, `agents:write`, \
                 `agents:start`, `agents:stop`)",
            ))),
        );
        components.add_security_scheme(
            RUN_KEY,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("dgr_…")
                    .description(Some(
                        "A dungeon run's own key (its `registrationKey`), valid on that run's \
                         turn, broadcast and watch until the run ends",
                    ))
                    .build(),
            ),
        );
    }
}

/// Adds what every operation answers because of how requests are read: a 400 where a query or a
/// body is parsed (a parameter of the wrong type, a missing or unparsable body), in the error
/// form of the operation's family.
pub(super) fn add_shared_answers(document: &mut OpenApi) {
    for (path, item) in document.paths.paths.iter_mut() {
        let v1 = path.starts_with("/api/v1/");
        for operation in [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ]
        .into_iter()
        .flatten()
        {
            let reads_input = operation.request_body.is_some()
                || operation.parameters.iter().flatten().any(|parameter| {
                    matches!(
                        parameter.parameter_in,
                        utoipa::openapi::path::ParameterIn::Query
                    )
                });
            if !reads_input {
                continue;
            }
            let answer = if v1 {
                ResponseBuilder::new()
                    .description(
                        "A parameter or the body is malformed or out of range (`VALIDATION_ERROR`)",
                    )
                    .content(
                        "application/json",
                        utoipa::openapi::ContentBuilder::new()
                            .schema(Some(RefOr::Ref(Ref::from_schema_name("V1ErrorBody"))))
                            .build(),
                    )
                    .build()
            } else {
                ResponseBuilder::new()
                    .description("A parameter or the body is malformed or out of range")
                    .build()
            };
            operation
                .responses
                .responses
                .entry("400".to_owned())
                .or_insert(RefOr::T(answer));
        }
    }
}

//! The MCP server itself (rmcp's `ServerHandler`): tools, resources and subscriptions, each
//! answered through the REST API in process for the caller the gate let in.

use std::sync::Arc;

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock,
    CustomNotification, Implementation, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, ResourceContents, ResourceTemplate, ResourceUpdatedNotificationParam,
    ServerCapabilities, ServerConfig, SubscribeRequestParams, SubscriptionFilter, Tool,
    ToolAnnotations, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use super::call::{self, Answer, Api, Credential, McpCaller};
use super::catalog::{self, Extra, ToolSpec};
use super::resources::{self, Changed, Resource};
use super::schema::Arguments;
use super::subscriptions::{self, CHANGED_METHOD, SubscribeError};
use crate::state::AppState;

/// What every session's handler shares.
pub(crate) struct Shared {
    pub state: AppState,
    pub api: Api,
    pub tools: Vec<ReadyTool>,
    /// Proves an in-process change notification came from this node's notifier.
    pub token: Arc<str>,
}

/// A tool with its derived arguments and its `tools/list` entry.
pub(crate) struct ReadyTool {
    pub spec: &'static ToolSpec,
    pub arguments: Arguments,
    pub listed: Tool,
}

impl ReadyTool {
    pub(crate) fn new(spec: &'static ToolSpec, arguments: Arguments) -> Self {
        let annotations = ToolAnnotations::new()
            .read_only(spec.read_only())
            .destructive(false)
            .idempotent(spec.read_only())
            .open_world(false);
        let listed = Tool::new(
            spec.name,
            spec.description,
            Arc::new(arguments.schema.clone()),
        )
        .with_title(spec.title)
        .with_annotations(annotations);
        ReadyTool {
            spec,
            arguments,
            listed,
        }
    }
}

/// One session's (or one stateless request's) handler.
#[derive(Clone)]
pub(crate) struct Server(pub Arc<Shared>);

const INSTRUCTIONS: &str = "Crucible: trading tournaments and a daily dungeon on Solana wallets, \
and trading agents. With an account key: read tournaments, register your wallets, play today's \
dungeon (get_dungeon, quote_dungeon_entry, enter_dungeon, then get_dungeon_run and \
take_dungeon_turn until the run ends), and read your wallets, entries and payouts. With a v1 key: \
create, start, stop and follow your agents. Payments: send your own transfer's signature, or \
payFrom \"embedded\" if your key may spend from the account's embedded wallet. Resources \
crucible://tournaments/{id}/leaderboard and crucible://dungeon/runs/{runId} announce changes.";

/// The caller the gate attached to the HTTP request behind `extensions`.
fn caller_of(extensions: &rmcp::model::Extensions) -> Option<McpCaller> {
    extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<McpCaller>())
        .cloned()
}

/// The `Mcp-Session-Id` of the HTTP request behind `extensions` (2025-era sessions only).
fn session_of(extensions: &rmcp::model::Extensions) -> Option<String> {
    extensions
        .get::<axum::http::request::Parts>()
        .and_then(|parts| parts.headers.get("mcp-session-id"))
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

fn no_caller() -> ErrorData {
    ErrorData::invalid_request("this request reached the MCP server without a key", None)
}

impl Server {
    fn today(&self) -> String {
        crate::dungeon::day::DungeonDay::of(self.0.state.now()).id()
    }

    /// Read `resource` as `caller` (an account key is passed on; a v1 key reads anonymously).
    async fn read(&self, resource: &Resource, caller: &McpCaller) -> Result<Value, Answer> {
        let (method, path, extra) = resource.read(&self.today());
        let credential = call::credential_for(catalog::Audience::Anyone, caller);
        let answer = self
            .0
            .api
            .send(method, &path, None, caller, credential)
            .await;
        if answer.status.is_success() {
            Ok(call::shape(extra, answer.json()))
        } else {
            Err(answer)
        }
    }

    /// `uri` as a resource `caller` may read, or the error to answer.
    async fn readable(
        &self,
        uri: &str,
        caller: &McpCaller,
    ) -> Result<(Resource, Value), ErrorData> {
        let resource = Resource::parse(uri).ok_or_else(|| {
            ErrorData::resource_not_found(
                format!("no resource `{uri}`: see resources/templates/list"),
                None,
            )
        })?;
        match self.read(&resource, caller).await {
            Ok(body) => Ok((resource, body)),
            Err(answer) if answer.status == axum::http::StatusCode::NOT_FOUND => {
                Err(ErrorData::resource_not_found(answer.message(), None))
            }
            Err(answer) if answer.status.is_client_error() => {
                Err(ErrorData::invalid_params(answer.message(), None))
            }
            Err(answer) => Err(ErrorData::internal_error(answer.message(), None)),
        }
    }

    async fn call(
        &self,
        ready: &ReadyTool,
        given: serde_json::Map<String, Value>,
        caller: &McpCaller,
    ) -> CallToolResult {
        let spec = ready.spec;
        if !caller.may_use(spec.audience) {
            let needs = match spec.audience {
                catalog::Audience::Agents => {
                    "a v1 key (created with POST /api/v1/api-keys, sent as Authorization: Bearer)"
                }
                _ => {
                    "an account key (created with POST /api/api-keys, sent as Authorization: Bearer)"
                }
            };
            return tool_error(format!("{} needs {needs}", spec.name));
        }
        let built = match call::build(spec, &ready.arguments, given, &self.today()) {
            Ok(built) => built,
            Err(message) => return tool_error(message),
        };
        let run_key;
        let credential = match spec.extra {
            Extra::RunKey => match self.run_key(&built, caller).await {
                Ok(key) => {
                    run_key = key;
                    Credential::Key(&run_key)
                }
                Err(answer) => return call::result(spec, answer),
            },
            _ => call::credential_for(spec.audience, caller),
        };
        let answer = call::run(&self.0.api, spec, &built, caller, credential).await;
        tracing::debug!(
            tool = spec.name,
            account_id = caller.account_id,
            status = answer.status.as_u16(),
            "MCP tool called"
        );
        call::result(spec, answer)
    }

    /// The run's own key, for the caller's account (`…/runs/{runId}/turn` → its credential).
    async fn run_key(&self, built: &call::Built, caller: &McpCaller) -> Result<String, Answer> {
        let run_path = built
            .path_and_query
            .strip_suffix("/turn")
            .unwrap_or(&built.path_and_query);
        let answer = self
            .0
            .api
            .send(
                axum::http::Method::GET,
                &format!("{run_path}/credential"),
                None,
                caller,
                Credential::Caller,
            )
            .await;
        if !answer.status.is_success() {
            return Err(answer);
        }
        match answer.json()["registrationKey"].as_str() {
            Some(key) => Ok(key.to_owned()),
            None => Err(Answer::refusal(
                axum::http::StatusCode::CONFLICT,
                "the run has no key to play it with",
            )),
        }
    }
}

fn tool_error(message: String) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(message.clone())]);
    result.structured_content = Some(serde_json::json!({"error": message, "status": 400}));
    result
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_subscribe()
                .build(),
        )
        .with_server_info(
            Implementation::new("crucible", env!("CARGO_PKG_VERSION")).with_title("Crucible"),
        )
        .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let caller = caller_of(&context.extensions).ok_or_else(no_caller)?;
        let tools = self
            .0
            .tools
            .iter()
            .filter(|tool| caller.may_use(tool.spec.audience))
            .map(|tool| tool.listed.clone())
            .collect();
        // Which tools show depends on the key: never shared between callers.
        Ok(ListToolsResult::with_all_items(tools).with_cache_scope(CacheScope::Private))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.0
            .tools
            .iter()
            .find(|tool| tool.spec.name == name)
            .map(|tool| tool.listed.clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = caller_of(&context.extensions).ok_or_else(no_caller)?;
        let Some(ready) = self
            .0
            .tools
            .iter()
            .find(|tool| tool.spec.name == request.name)
        else {
            return Ok(CallToolResponse::Complete(tool_error(format!(
                "no tool `{}`: see tools/list",
                request.name
            ))));
        };
        let given = request.arguments.unwrap_or_default();
        Ok(CallToolResponse::Complete(
            self.call(ready, given, &caller).await,
        ))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let (uri, name, title, description) = resources::TODAY;
        let today = rmcp::model::Resource::new(uri, name)
            .with_title(title)
            .with_description(description)
            .with_mime_type("application/json");
        Ok(ListResourcesResult::with_all_items(vec![today]))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let templates = resources::TEMPLATES
            .iter()
            .map(|(template, name, title, description)| {
                ResourceTemplate::new(*template, *name)
                    .with_title(*title)
                    .with_description(*description)
                    .with_mime_type("application/json")
            })
            .collect();
        Ok(ListResourceTemplatesResult::with_all_items(templates))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let caller = caller_of(&context.extensions).ok_or_else(no_caller)?;
        let (_, body) = self.readable(&request.uri, &caller).await?;
        let contents = ResourceContents::text(body.to_string(), request.uri)
            .with_mime_type("application/json");
        // What changes every turn is never cached.
        Ok(ReadResourceResponse::Complete(
            ReadResourceResult::new(vec![contents]).with_ttl_ms(0),
        ))
    }

    #[allow(
        deprecated,
        reason = "rmcp marks resources/subscribe legacy (2026-07-28 uses subscriptions/listen); sessions of older protocol versions still call it"
    )]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = caller_of(&context.extensions).ok_or_else(no_caller)?;
        let session = session_of(&context.extensions).ok_or_else(|| {
            ErrorData::invalid_request(
                "resources/subscribe belongs to a session (Mcp-Session-Id); without one, use subscriptions/listen",
                None,
            )
        })?;
        self.readable(&request.uri, &caller).await?;
        subscriptions::subscribe(
            &self.0.state.store,
            &*self.0.state.clock,
            &session,
            &request.uri,
        )
        .await
        .map_err(|error| match error {
            SubscribeError::TooMany => ErrorData::invalid_request(error.to_string(), None),
            SubscribeError::Store(store) => ErrorData::internal_error(store.to_string(), None),
        })
    }

    #[allow(
        deprecated,
        reason = "rmcp marks resources/subscribe legacy (2026-07-28 uses subscriptions/listen); sessions of older protocol versions still call it"
    )]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let session = session_of(&context.extensions).ok_or_else(|| {
            ErrorData::invalid_request("resources/unsubscribe belongs to a session", None)
        })?;
        subscriptions::unsubscribe(&self.0.state.store, &session, &request.uri)
            .await
            .map_err(|error| ErrorData::internal_error(error.to_string(), None))
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // Only resources change here; of those, only the ones this server knows.
        let uris: Vec<String> = requested
            .resource_subscriptions
            .iter()
            .flatten()
            .filter(|uri| Resource::parse(uri).is_some())
            .take(subscriptions::MAX_PER_SESSION as usize)
            .cloned()
            .collect();
        Some(
            SubscriptionFilter::builder()
                .resource_subscriptions(uris)
                .build(),
        )
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let caller = caller_of(&context.request_context().extensions).ok_or_else(no_caller)?;
        // A subscription holds a stream open, like the API's SSE streams, and counts as one.
        let mut slot = self
            .0
            .state
            .streams
            .open(crate::http::rate_limit::ClientIp(caller.client_ip).limit_key())
            .map_err(|refused| ErrorData::invalid_request(refused.to_string(), None))?;
        let mut events = self.0.state.events.subscribe();
        // A resource the caller cannot read is never announced to it.
        let mut uris = Vec::new();
        for uri in context.accepted().resource_subscriptions.iter().flatten() {
            if self.readable(uri, &caller).await.is_ok() {
                uris.push(uri.clone());
            }
        }
        loop {
            let changed = tokio::select! {
                () = context.cancelled() => return Ok(()),
                () = slot.closing() => return Ok(()),
                event = events.recv() => match event {
                    Ok(event) => Changed::of(&event),
                    Err(RecvError::Lagged(_)) => Changed::Everything,
                    Err(RecvError::Closed) => return Ok(()),
                },
            };
            for uri in uris.iter().filter(|uri| changed.covers(uri)) {
                if context
                    .sink()
                    .notify_resource_updated(uri.clone())
                    .await
                    .is_err()
                {
                    // The client went away: the subscription ends with it.
                    return Ok(());
                }
            }
        }
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        context: NotificationContext<RoleServer>,
    ) {
        if notification.method != CHANGED_METHOD {
            return;
        }
        let Some(params) = notification.params else {
            return;
        };
        // Only this node's notifier knows the token: a client cannot make itself notifications.
        if params["token"].as_str() != Some(&*self.0.token) {
            return;
        }
        if let Some(uri) = params["uri"].as_str() {
            let _ = context
                .peer
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                .await;
        }
    }
}

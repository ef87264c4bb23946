//! A tool's input schema, derived from its REST operation in the OpenAPI document: the path and
//! query parameters and the JSON body's fields become one flat object of arguments, and every
//! schema they refer to is copied under `$defs`, so each tool's schema stands alone (MCP clients
//! and models read it without the document).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::catalog::{self, Extra, ToolSpec};

/// Where an argument goes in the REST request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    Path,
    Query,
    Body,
}

/// A tool's arguments as derived: each argument's name (as the tool shows it), where it goes,
/// and under which name the REST call expects it.
#[derive(Debug, Clone)]
pub(crate) struct Arguments {
    pub places: BTreeMap<String, (Place, String)>,
    pub schema: Map<String, Value>,
}

impl Arguments {
    /// The argument names, for an error that lists them.
    pub(crate) fn names(&self) -> Vec<&str> {
        self.places.keys().map(String::as_str).collect()
    }
}

/// Derive `tool`'s arguments from `document` (the API's OpenAPI document as JSON).
pub(crate) fn arguments(document: &Value, tool: &ToolSpec) -> Result<Arguments, String> {
    let method = tool.method.as_str().to_ascii_lowercase();
    let operation = document["paths"][tool.path].get(&method).ok_or_else(|| {
        format!(
            "{} {} is not in the OpenAPI document",
            tool.method, tool.path
        )
    })?;
    let mut properties = Map::new();
    let mut required: Vec<String> = Vec::new();
    let mut places = BTreeMap::new();

    for parameter in operation["parameters"].as_array().into_iter().flatten() {
        let parameter = resolve(document, parameter);
        let (Some(name), Some(place)) = (parameter["name"].as_str(), parameter["in"].as_str())
        else {
            continue;
        };
        let place = match place {
            "path" => Place::Path,
            "query" => Place::Query,
            // Headers and cookies are the transport's business (the key), never an argument.
            _ => continue,
        };
        let argument = catalog::argument_name(name).to_owned();
        let mut schema = parameter["schema"].clone();
        if let Some(description) = parameter["description"].as_str()
            && let Some(object) = schema.as_object_mut()
        {
            object
                .entry("description")
                .or_insert_with(|| Value::String(description.to_owned()));
        }
        let is_today = tool.extra == Extra::TodayByDefault && argument == "dungeonId";
        if is_today {
            schema = json!({
                "type": "string",
                "pattern": "^\\d{4}-\\d{2}-\\d{2}$",
                "description": "The dungeon's day, YYYY-MM-DD (UTC); today's when left out",
            });
        }
        if (place == Place::Path || parameter["required"] == Value::Bool(true)) && !is_today {
            required.push(argument.clone());
        }
        properties.insert(argument.clone(), schema);
        places.insert(argument, (place, name.to_owned()));
    }
    if let Some(body) =
        operation["requestBody"]["content"]["application/json"]["schema"].as_object()
    {
        let mut body_required = Vec::new();
        flatten_body(
            document,
            &Value::Object(body.clone()),
            &mut properties,
            &mut body_required,
        );
        for name in body_required {
            if !required.contains(&name) {
                required.push(name);
            }
        }
        for name in properties.keys() {
            places
                .entry(name.clone())
                .or_insert_with(|| (Place::Body, name.clone()));
        }
    }
    match tool.extra {
        Extra::RunState => {
            // The state is the page's head; its event paging is get_dungeon_run_events'.
            for name in ["afterSeq", "limit"] {
                properties.remove(name);
                places.remove(name);
                required.retain(|argument| argument != name);
            }
        }
        Extra::None | Extra::TodayByDefault | Extra::RunKey | Extra::RunEvents => {}
    }

    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        schema.insert("required".into(), json!(required));
    }
    schema.insert("additionalProperties".into(), json!(false));
    let definitions = definitions(document, &Value::Object(schema.clone()))?;
    let mut schema = rewrite_refs(Value::Object(schema));
    if !definitions.is_empty()
        && let Some(object) = schema.as_object_mut()
    {
        object.insert("$defs".into(), Value::Object(definitions));
    }
    let Value::Object(schema) = schema else {
        return Err("a schema object became something else".into());
    };
    Ok(Arguments { places, schema })
}

/// Follow a `$ref` to the component it names (one level; components are never bare refs).
fn resolve<'a>(document: &'a Value, value: &'a Value) -> &'a Value {
    match value["$ref"].as_str() {
        Some(reference) => {
            let mut target = document;
            for segment in reference.trim_start_matches("#/").split('/') {
                target = &target[segment];
            }
            target
        }
        None => value,
    }
}

/// Add a body schema's fields to `properties`: an object's own, a reference's, every `allOf`
/// part's. A `oneOf` (which of two fields to send) stays the REST call's to check: its fields
/// are already among the object's.
fn flatten_body(
    document: &Value,
    schema: &Value,
    properties: &mut Map<String, Value>,
    required: &mut Vec<String>,
) {
    let schema = resolve(document, schema);
    if let Some(own) = schema["properties"].as_object() {
        for (name, property) in own {
            properties
                .entry(name.clone())
                .or_insert_with(|| property.clone());
        }
    }
    for name in schema["required"].as_array().into_iter().flatten() {
        if let Some(name) = name.as_str()
            && !required.iter().any(|known| known == name)
        {
            required.push(name.to_owned());
        }
    }
    for part in schema["allOf"].as_array().into_iter().flatten() {
        flatten_body(document, part, properties, required);
    }
}

/// Every component schema `schema` refers to, directly or through others, by name.
fn definitions(document: &Value, schema: &Value) -> Result<Map<String, Value>, String> {
    let mut found = Map::new();
    let mut pending = Vec::new();
    collect_refs(schema, &mut pending);
    while let Some(name) = pending.pop() {
        if found.contains_key(&name) {
            continue;
        }
        let component = document["components"]["schemas"]
            .get(&name)
            .ok_or_else(|| format!("the OpenAPI document has no schema `{name}`"))?;
        collect_refs(component, &mut pending);
        found.insert(name, rewrite_refs(component.clone()));
    }
    Ok(found)
}

const COMPONENTS: &str = "#/components/schemas/";

fn collect_refs(value: &Value, names: &mut Vec<String>) {
    match value {
        Value::Object(object) => {
            if let Some(Value::String(reference)) = object.get("$ref")
                && let Some(name) = reference.strip_prefix(COMPONENTS)
            {
                names.push(name.to_owned());
            }
            object.values().for_each(|inner| collect_refs(inner, names));
        }
        Value::Array(items) => items.iter().for_each(|inner| collect_refs(inner, names)),
        _ => {}
    }
}

/// `#/components/schemas/X` → `#/$defs/X`.
fn rewrite_refs(value: Value) -> Value {
    match value {
        Value::Object(object) => Value::Object(
            object
                .into_iter()
                .map(|(key, inner)| {
                    let inner = match (key.as_str(), inner) {
                        ("$ref", Value::String(reference)) => Value::String(
                            reference
                                .strip_prefix(COMPONENTS)
                                .map(|name| format!("#/$defs/{name}"))
                                .unwrap_or(reference),
                        ),
                        (_, inner) => rewrite_refs(inner),
                    };
                    (key, inner)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(rewrite_refs).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::catalog::TOOLS;

    fn document() -> Value {
        serde_json::to_value(crate::http::openapi_document()).expect("serializes")
    }

    #[test]
    fn every_tool_has_a_self_contained_schema() {
        let document = document();
        for tool in TOOLS {
            let arguments =
                arguments(&document, tool).unwrap_or_else(|error| panic!("{}: {error}", tool.name));
            let text = Value::Object(arguments.schema.clone()).to_string();
            assert!(!text.contains(COMPONENTS), "{}: {text}", tool.name);
            for reference in text.split("\"#/$defs/").skip(1) {
                let name = reference.split('"').next().unwrap_or_default();
                assert!(
                    arguments.schema["$defs"].get(name).is_some(),
                    "{}: no $defs/{name}",
                    tool.name
                );
            }
        }
    }

    #[test]
    fn path_query_and_body_arguments_are_placed() {
        let document = document();
        let register = arguments(
            &document,
            crate::mcp::catalog::find("register_for_tournament").expect("tool"),
        )
        .expect("derives");
        assert_eq!(
            register.places.get("tournamentId"),
            Some(&(Place::Path, "id".to_owned()))
        );
        assert_eq!(
            register.places.get("registeredWallet").map(|place| place.0),
            Some(Place::Body)
        );
        assert!(
            register.schema["required"]
                .as_array()
                .expect("required")
                .contains(&json!("tournamentId"))
        );
        let list = arguments(
            &document,
            crate::mcp::catalog::find("list_tournaments").expect("tool"),
        )
        .expect("derives");
        assert!(
            list.places
                .values()
                .all(|(place, _)| *place == Place::Query)
        );
        let today = arguments(
            &document,
            crate::mcp::catalog::find("get_dungeon").expect("tool"),
        )
        .expect("derives");
        assert!(today.schema.get("required").is_none(), "{:?}", today.schema);
        let state = arguments(
            &document,
            crate::mcp::catalog::find("get_dungeon_run").expect("tool"),
        )
        .expect("derives");
        assert_eq!(state.names(), vec!["runId"]);
    }
}

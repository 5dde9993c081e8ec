//! Test fixture: a tool whose name clashes with `fixture-multi`'s `echo`, one with a schema
//! whose root is not an object, one with an unusable name, one whose `Params` is `Value` with
//! no schema of its own, and one good tool.

#![deny(unsafe_code)]

use xcsh_plugin_api::{
    export_plugin, json, AgentToolResult, CustomTool, CustomToolApi, PluginError, ToolContext,
    ToolSet, Value,
};

struct Raw {
    name: &'static str,
    schema: Value,
}

impl CustomTool for Raw {
    type Params = Value;
    fn name(&self) -> &str {
        self.name
    }
    fn label(&self) -> &str {
        "Raw"
    }
    fn description(&self) -> &str {
        "A tool with a hand-written schema"
    }
    fn parameters_schema(&self) -> Value {
        self.schema.clone()
    }
    async fn execute(
        &self,
        _id: String,
        _params: Value,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        Ok(AgentToolResult::text(format!(
            "{} from bad-tools",
            self.name
        )))
    }
}

/// `type Params = Value` and no `parameters_schema()`: its schema says nothing.
struct Untyped;

impl CustomTool for Untyped {
    type Params = Value;
    fn name(&self) -> &str {
        "untyped"
    }
    fn label(&self) -> &str {
        "Untyped"
    }
    fn description(&self) -> &str {
        "A tool that forgot to describe its parameters"
    }
    async fn execute(
        &self,
        _id: String,
        _params: Value,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        Ok(AgentToolResult::text("untyped"))
    }
}

fn factory(_api: &CustomToolApi) -> Result<ToolSet, PluginError> {
    let object = json!({"type": "object"});
    Ok(ToolSet::new()
        .with(Raw {
            name: "echo",
            schema: object.clone(),
        })
        .with(Raw {
            name: "bad_schema",
            schema: json!({"type": "string"}),
        })
        .with(Raw {
            name: "broken_schema",
            schema: json!({"type": "object", "properties": {"x": {"type": 12}}}),
        })
        .with(Raw {
            name: "bad name!",
            schema: object.clone(),
        })
        .with(Raw {
            name: "good_tool",
            schema: object,
        })
        .with(Untyped))
}

export_plugin!(factory);

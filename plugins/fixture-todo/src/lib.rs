//! Test fixture: upstream pi's `todo` example tool, native. `todo` adds an item (or lists
//! them) and returns the whole list in its result's `details`; `on_session` rebuilds the list
//! from the tool's own earlier results on the current branch, so after a branch, a resume or a
//! switch the list is the one of the conversation the user is in. It also records the reasons
//! of the events it heard (`heard` in the details), so tests can see every event arrive, and
//! at `shutdown` writes them to `todo-heard.txt` in the session's working directory (no call
//! follows a shutdown to show them).

#![deny(unsafe_code)]

use std::sync::Mutex;

use xcsh_plugin_api::{
    json, tool_params, AgentToolResult, CustomTool, CustomToolApi, FromApi, PluginError,
    SessionEvent, SessionReason, ToolContext,
};

tool_params! {
    /// `add` an item, or `list` them.
    pub struct Params {
        /// `add` or `list`.
        pub action: Action,
        /// The item to add.
        #[serde(default)]
        pub item: Option<String>,
    }

    /// What to do.
    #[serde(rename_all = "lowercase")]
    pub enum Action { Add, List }
}

struct Todo {
    items: Mutex<Vec<String>>,
    heard: Mutex<Vec<String>>,
    /// Where `todo-heard.txt` goes at shutdown.
    cwd: std::path::PathBuf,
}

impl FromApi for Todo {
    fn from_api(api: &CustomToolApi) -> Result<Self, PluginError> {
        Ok(Self {
            items: Mutex::default(),
            heard: Mutex::default(),
            cwd: api.cwd().to_owned(),
        })
    }
}

fn reason_name(reason: &SessionReason) -> String {
    match reason {
        SessionReason::Start => "start".to_owned(),
        SessionReason::Switch => "switch".to_owned(),
        SessionReason::Branch => "branch".to_owned(),
        SessionReason::Tree => "tree".to_owned(),
        SessionReason::Shutdown => "shutdown".to_owned(),
        SessionReason::Other(other) => other.clone(),
    }
}

impl CustomTool for Todo {
    type Params = Params;
    fn name(&self) -> &str {
        "todo"
    }
    fn label(&self) -> &str {
        "Todo"
    }
    fn description(&self) -> &str {
        "Keeps a todo list: add an item, or list them"
    }
    async fn execute(
        &self,
        _id: String,
        params: Params,
        _ctx: ToolContext,
    ) -> Result<AgentToolResult, PluginError> {
        let mut items = self.items.lock().unwrap_or_else(|p| p.into_inner());
        if let Action::Add = params.action {
            let item = params
                .item
                .ok_or_else(|| PluginError::new("`add` needs an `item`"))?;
            items.push(item);
        }
        let heard = self.heard.lock().unwrap_or_else(|p| p.into_inner()).clone();
        Ok(
            AgentToolResult::text(format!("todo: [{}]", items.join(", ")))
                .with_details(json!({"items": *items, "heard": heard})),
        )
    }
    async fn on_session(&self, event: SessionEvent) -> Result<(), PluginError> {
        // Rebuilding takes a while here (as reading files would), so a host that sends the
        // next call before the tool has heard the event is caught listing stale items.
        std::thread::sleep(std::time::Duration::from_millis(150));
        let heard = {
            let mut heard = self.heard.lock().unwrap_or_else(|p| p.into_inner());
            heard.push(reason_name(&event.reason));
            heard.join("\n")
        };
        if event.reason == SessionReason::Shutdown {
            std::fs::write(self.cwd.join("todo-heard.txt"), heard + "\n")?;
            return Ok(());
        }
        // The newest result on the branch holds the whole list.
        let rebuilt = event
            .results
            .iter()
            .rev()
            .find_map(|result| result.details.get("items"))
            .and_then(|items| xcsh_plugin_api::serde_json::from_value(items.clone()).ok())
            .unwrap_or_default();
        *self.items.lock().unwrap_or_else(|p| p.into_inner()) = rebuilt;
        Ok(())
    }
}

xcsh_plugin_api::export_plugin!(tools: [Todo]);

#[cfg(test)]
mod tests {
    use xcsh_plugin_api::testing::PluginTest;
    use xcsh_plugin_api::{json, tools, EarlierResult, SessionEvent, SessionReason};

    use super::Todo;

    #[tokio::test]
    async fn the_list_is_rebuilt_from_the_branch_on_each_event() {
        let test = PluginTest::new(tools![Todo]);
        test.call("todo", json!({"action": "add", "item": "a"}))
            .await
            .unwrap();
        let b = test
            .call("todo", json!({"action": "add", "item": "b"}))
            .await
            .unwrap();
        assert_eq!(b.text(), "todo: [a, b]");
        // Back to a branch where only `a` had been added.
        let mut event = SessionEvent::new(SessionReason::Branch);
        event.results.push(EarlierResult {
            tool_call_id: "1".into(),
            details: json!({"items": ["a"]}),
        });
        test.session_event(event).await.unwrap();
        let listed = test.call("todo", json!({"action": "list"})).await.unwrap();
        assert_eq!(listed.text(), "todo: [a]");
        assert_eq!(listed.details().unwrap()["heard"], json!(["branch"]));
        // A new session: nothing on its branch.
        test.session_event(SessionEvent::new(SessionReason::Switch))
            .await
            .unwrap();
        let listed = test.call("todo", json!({"action": "list"})).await.unwrap();
        assert_eq!(listed.text(), "todo: []");
    }
}

//! The pending-action store under contention, and against a model stack.
//!
//! Many tasks push while others resolve through a real `Session`; every action must be applied
//! or discarded exactly once, none lost, and pops must be LIFO with respect to pushes.

#![allow(clippy::unwrap_used)] // Tests fail loudly on unexpected errors.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{json, Value};
use xcsh_loader::store::BoxFuture;
use xcsh_loader::{
    AgentToolResult, CallContext, PendingAction, PendingActionStore, PluginError, Session, Tool,
    ToolHints, ToolOrigin, ToolSpec,
};

/// A do-nothing deferrable tool: its presence registers `resolve`.
struct Deferrable(ToolSpec);

impl Tool for Deferrable {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    fn execute(
        &self,
        _: String,
        _: Value,
        _: CallContext,
    ) -> BoxFuture<Result<AgentToolResult, PluginError>> {
        Box::pin(async { Ok(AgentToolResult::default()) })
    }
}

fn session() -> Session {
    let tool = Deferrable(ToolSpec {
        name: "stress_preview".into(),
        label: "Stress".into(),
        description: "registers resolve".into(),
        parameters: json!({"type": "object"}),
        hidden: false,
        deferrable: true,
        hints: ToolHints::default(),
        origin: ToolOrigin::Builtin,
    });
    Session::builder(std::env::temp_dir())
        .default_dirs(false)
        .builtin(Arc::new(tool))
        .build()
}

const PUSHERS: usize = 8;
const PER_PUSHER: usize = 1250; // 10,000 actions in all

/// Counts how often each action's apply and reject ran.
struct Ledger {
    applied: Vec<AtomicU8>,
    discarded: Vec<AtomicU8>,
}

impl Ledger {
    fn new(n: usize) -> Arc<Self> {
        Arc::new(Self {
            applied: (0..n).map(|_| AtomicU8::new(0)).collect(),
            discarded: (0..n).map(|_| AtomicU8::new(0)).collect(),
        })
    }
}

fn action(id: usize, ledger: &Arc<Ledger>) -> PendingAction {
    let (on_apply, on_reject) = (Arc::clone(ledger), Arc::clone(ledger));
    PendingAction::new(
        format!("Stress: {id}"),
        "stress_preview",
        Box::new(move |_, _| {
            on_apply.applied[id].fetch_add(1, Ordering::SeqCst);
            Box::pin(async move { Ok(AgentToolResult::text(id.to_string())) })
        }),
    )
    .with_reject(Box::new(move |_, _| {
        on_reject.discarded[id].fetch_add(1, Ordering::SeqCst);
        Box::pin(async move { Ok(None) })
    }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_action_is_resolved_exactly_once_under_contention() {
    let session = Arc::new(session());
    let store = Arc::clone(session.store().unwrap());
    let total = PUSHERS * PER_PUSHER;
    let ledger = Ledger::new(total);
    let resolved = Arc::new(AtomicUsize::new(0));

    let mut pushers = Vec::new();
    for p in 0..PUSHERS {
        let (store, ledger) = (Arc::clone(&store), Arc::clone(&ledger));
        pushers.push(tokio::spawn(async move {
            for i in 0..PER_PUSHER {
                store.push(action(p * PER_PUSHER + i, &ledger));
                if i % 64 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        }));
    }
    let mut resolvers = Vec::new();
    for r in 0..4 {
        let (session, resolved) = (Arc::clone(&session), Arc::clone(&resolved));
        resolvers.push(tokio::spawn(async move {
            let decision = if r % 2 == 0 { "apply" } else { "discard" };
            while resolved.load(Ordering::SeqCst) < total {
                let outcome = session
                    .call("resolve", json!({"action": decision, "reason": "stress"}))
                    .await;
                if outcome.is_error {
                    assert_eq!(outcome.text(), xcsh_loader::NO_PENDING_ACTION);
                    tokio::task::yield_now().await;
                } else {
                    resolved.fetch_add(1, Ordering::SeqCst);
                }
            }
        }));
    }
    for task in pushers.into_iter().chain(resolvers) {
        task.await.unwrap();
    }
    assert_eq!(store.count(), 0);
    for id in 0..total {
        let (a, d) = (
            ledger.applied[id].load(Ordering::SeqCst),
            ledger.discarded[id].load(Ordering::SeqCst),
        );
        assert_eq!(
            a + d,
            1,
            "action {id}: applied {a} times, discarded {d} times"
        );
    }
    // Every push queued one reminder; the session keeps the newest few for a runtime that
    // does not take them.
    assert_eq!(
        session.take_steering_messages().len(),
        total.min(xcsh_loader::steering::STEERING_QUEUE_CAPACITY)
    );
}

#[test]
fn pops_are_lifo_with_respect_to_pushes_while_pushers_run() {
    // With a single popper the check is exact: before each pop it reads how far each pusher
    // has got; the popped action must be that pusher's newest one not yet popped.
    let store = Arc::new(PendingActionStore::new());
    let ledger = Ledger::new(PUSHERS * PER_PUSHER);
    let pushed: Arc<Vec<AtomicUsize>> =
        Arc::new((0..PUSHERS).map(|_| AtomicUsize::new(0)).collect());
    let threads: Vec<_> = (0..PUSHERS)
        .map(|p| {
            let (store, ledger, pushed) =
                (Arc::clone(&store), Arc::clone(&ledger), Arc::clone(&pushed));
            std::thread::spawn(move || {
                for i in 0..PER_PUSHER {
                    store.push(action(p * PER_PUSHER + i, &ledger));
                    pushed[p].store(i + 1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    let mut popped = vec![vec![false; PER_PUSHER]; PUSHERS];
    let mut seen = 0;
    while seen < PUSHERS * PER_PUSHER {
        let known: Vec<usize> = pushed.iter().map(|n| n.load(Ordering::SeqCst)).collect();
        let Some(top) = store.pop() else {
            std::thread::yield_now();
            continue;
        };
        let id: usize = top.label().trim_start_matches("Stress: ").parse().unwrap();
        let (p, i) = (id / PER_PUSHER, id % PER_PUSHER);
        assert!(!popped[p][i], "action {id} popped twice");
        // Everything pusher p had pushed after i (as far as we knew before popping) must
        // already be gone: it sat above i on the stack.
        if let Some(later) = (i + 1..known[p]).find(|&later| !popped[p][later]) {
            panic!(
                "popped {id} while {} (pushed later, so above it) was still on the stack",
                p * PER_PUSHER + later
            );
        }
        popped[p][i] = true;
        seen += 1;
    }
    for thread in threads {
        thread.join().unwrap();
    }
    assert!(store.pop().is_none());
}

#[derive(Debug, Clone)]
enum Op {
    Push(u16),
    Pop,
    Peek,
    Clear,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => any::<u16>().prop_map(Op::Push),
        3 => Just(Op::Pop),
        1 => Just(Op::Peek),
        1 => Just(Op::Clear),
    ]
}

proptest! {
    #[test]
    fn store_behaves_like_a_stack(ops in proptest::collection::vec(op(), 0..200)) {
        let store = PendingActionStore::new();
        let ledger = Ledger::new(1 << 16);
        let pushes = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&pushes);
        let _subscription = store.subscribe_push(move |_, _| { counter.fetch_add(1, Ordering::SeqCst); });
        let mut model: Vec<u16> = Vec::new();
        let mut pushed = 0;
        for op in ops {
            match op {
                Op::Push(id) => {
                    store.push(action(id as usize, &ledger));
                    model.push(id);
                    pushed += 1;
                }
                Op::Pop => {
                    let got = store.pop().map(|a| a.label().to_owned());
                    prop_assert_eq!(got, model.pop().map(|id| format!("Stress: {id}")));
                }
                Op::Peek => {
                    let got = store.peek().map(|s| s.label);
                    prop_assert_eq!(got, model.last().map(|id| format!("Stress: {id}")));
                }
                Op::Clear => {
                    store.clear();
                    model.clear();
                }
            }
            prop_assert_eq!(store.count(), model.len());
            prop_assert_eq!(store.has_pending(), !model.is_empty());
        }
        prop_assert_eq!(pushes.load(Ordering::SeqCst), pushed);
    }
}

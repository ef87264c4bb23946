//! The scheduler: durable jobs run once across nodes, failures retry with backoff, schedules
//! missed while down run once.

use crate::helpers::TestApp;
use chrono::Duration;
use crucible::scheduler::{self, Recurring, Scheduler};

async fn enqueue(app: &TestApp, kind: &str, subject: &str, due_in: Duration) {
    let now = app.state.now();
    let mut conn = app.state.store.write().acquire().await.expect("conn");
    scheduler::enqueue(&mut conn, kind, subject, now + due_in, now)
        .await
        .expect("enqueue");
}

async fn job_row(app: &TestApp, id: &str) -> (i64, Option<i64>, Option<String>) {
    sqlx::query_as("SELECT attempts, done_at, last_error FROM jobs WHERE id = $1")
        .bind(id)
        .fetch_one(app.state.store.read())
        .await
        .expect("job")
}

#[tokio::test]
async fn a_job_waits_for_its_time_then_runs_once_across_two_nodes() {
    let app = TestApp::spawn().await;
    // A real job kind: moving a (nonexistent) tournament live is a harmless no-op that succeeds.
    enqueue(
        &app,
        "tournament.start",
        "trn_missing",
        Duration::minutes(10),
    )
    .await;
    let (node_a, node_b) = (Scheduler::new(Vec::new()), Scheduler::new(Vec::new()));
    assert_eq!(
        node_a.run_due(&app.state).await.expect("pass").jobs_done,
        0,
        "not due yet"
    );
    app.advance(Duration::minutes(10));
    let (a, b) = tokio::join!(node_a.run_due(&app.state), node_b.run_due(&app.state));
    assert_eq!(
        a.expect("a").jobs_done + b.expect("b").jobs_done,
        1,
        "exactly one node ran it"
    );
    let (attempts, done_at, _) = job_row(&app, "tournament.start:trn_missing").await;
    assert_eq!(attempts, 1);
    assert!(done_at.is_some());
    assert_eq!(
        node_a.run_due(&app.state).await.expect("pass").jobs_done,
        0,
        "done jobs stay done"
    );
}

#[tokio::test]
async fn a_failing_job_is_retried_with_backoff_and_keeps_its_error() {
    let app = TestApp::spawn().await;
    enqueue(&app, "no.such.kind", "x", Duration::zero()).await;
    let node = Scheduler::new(Vec::new());
    let pass = node.run_due(&app.state).await.expect("pass");
    assert_eq!((pass.jobs_done, pass.jobs_failed), (0, 1));
    let (attempts, done_at, error) = job_row(&app, "no.such.kind:x").await;
    assert_eq!((attempts, done_at), (1, None));
    assert!(error.expect("error").contains("no handler"));
    app.advance(Duration::seconds(4));
    assert_eq!(
        node.run_due(&app.state).await.expect("pass").jobs_failed,
        0,
        "backing off"
    );
    app.advance(Duration::seconds(1));
    assert_eq!(
        node.run_due(&app.state).await.expect("pass").jobs_failed,
        1,
        "retried after 5 s"
    );
    assert_eq!(job_row(&app, "no.such.kind:x").await.0, 2);
}

/// A node killed holding a job (a tournament's start or end) delays it by its claim, which the
/// server keeps to half a minute: the holder renews it while the job runs.
#[tokio::test]
async fn a_lease_of_a_node_that_died_is_taken_over_half_a_minute_later() {
    let app = TestApp::spawn().await;
    let lease = app.state.config.leases.jobs;
    assert_eq!(lease, crucible::leases::Leases::STANDARD.jobs);
    assert!(lease <= Duration::seconds(30), "{lease}");
    enqueue(&app, "tournament.end", "trn_gone", Duration::zero()).await;
    let claimed =
        scheduler::queue::claim(&app.state.store, "dead-node", app.state.now(), lease, 10)
            .await
            .expect("claim");
    assert_eq!(claimed.len(), 1);
    let survivor = Scheduler::new(Vec::new());
    app.advance(lease - Duration::seconds(1));
    assert_eq!(
        survivor.run_due(&app.state).await.expect("pass").jobs_done,
        0,
        "lease still held"
    );
    app.advance(Duration::seconds(1));
    assert_eq!(
        survivor.run_due(&app.state).await.expect("pass").jobs_done,
        1,
        "expired lease taken over"
    );
}

#[tokio::test]
async fn a_node_renews_the_leases_it_holds_so_a_long_job_is_not_taken_over() {
    let app = TestApp::spawn().await;
    enqueue(&app, "tournament.end", "trn_long", Duration::zero()).await;
    enqueue(&app, "tournament.end", "trn_waiting", Duration::zero()).await;
    let store = &app.state.store;
    let claimed = scheduler::queue::claim(
        store,
        "busy-node",
        app.state.now(),
        Duration::minutes(5),
        10,
    )
    .await
    .expect("claim");
    assert_eq!(claimed.len(), 2);
    // Four minutes into the first job, its node renews: both leases run five minutes from now.
    app.advance(Duration::minutes(4));
    let renewed =
        scheduler::queue::renew_held(store, "busy-node", app.state.now(), Duration::minutes(5))
            .await
            .expect("renew");
    assert_eq!(renewed, 2);
    assert_eq!(
        scheduler::queue::renew_held(store, "someone-else", app.state.now(), Duration::minutes(5))
            .await
            .expect("renew"),
        0,
        "only the holder's leases move"
    );
    // Past the first lease's end, nobody else may take them.
    app.advance(Duration::minutes(2));
    let other = Scheduler::new(Vec::new());
    assert_eq!(other.run_due(&app.state).await.expect("pass").jobs_done, 0);
    app.advance(Duration::minutes(4));
    assert_eq!(
        other.run_due(&app.state).await.expect("pass").jobs_done,
        2,
        "once renewals stop, the leases run out and the work is taken over"
    );
}

/// A claim is fenced by its own token: once a node's lease on a job ran out and the job was
/// claimed again (by another node, or by the same node anew), the old claim can neither
/// complete it nor put it back.
#[tokio::test]
async fn a_claim_that_lost_its_lease_can_neither_complete_nor_retry_its_job() {
    let app = TestApp::spawn().await;
    enqueue(&app, "tournament.start", "trn_fenced", Duration::zero()).await;
    let store = &app.state.store;
    let claim = |owner: &'static str| {
        let app = &app;
        async move {
            scheduler::queue::claim(
                &app.state.store,
                owner,
                app.state.now(),
                Duration::seconds(5),
                10,
            )
            .await
            .expect("claim")
        }
    };
    let first = claim("node_a:scheduler:one").await;
    assert_eq!(first.len(), 1);
    app.advance(Duration::seconds(5));
    // The same node claims it again, under a new token, after its first claim ran out.
    let second = claim("node_a:scheduler:two").await;
    assert_eq!(second.len(), 1);
    let id = "tournament.start:trn_fenced";
    scheduler::queue::retry_later(
        store,
        &first[0],
        "node_a:scheduler:one",
        app.state.now(),
        "stale",
    )
    .await
    .expect("retry");
    scheduler::queue::complete(store, &first[0], "node_a:scheduler:one", app.state.now())
        .await
        .expect("complete");
    let (attempts, done_at, error) = job_row(&app, id).await;
    assert_eq!(
        (attempts, done_at, error),
        (2, None, None),
        "the stale claim wrote nothing"
    );
    scheduler::queue::complete(store, &second[0], "node_a:scheduler:two", app.state.now())
        .await
        .expect("complete");
    assert!(
        job_row(&app, id).await.1.is_some(),
        "the holder completes it"
    );
}

#[tokio::test]
async fn jobs_survive_a_restart() {
    let app = TestApp::spawn().await;
    enqueue(&app, "tournament.start", "trn_later", Duration::hours(1)).await;
    let app = app.restart().await;
    app.advance(Duration::hours(2));
    assert_eq!(
        Scheduler::new(Vec::new())
            .run_due(&app.state)
            .await
            .expect("pass")
            .jobs_done,
        1
    );
}

#[tokio::test]
async fn a_schedule_missed_for_days_runs_once_and_once_per_occurrence_across_nodes() {
    let app = TestApp::spawn().await;
    let node = |_: u8| {
        Scheduler::new(vec![
            Recurring::new("tournaments.series", "0 0 * * * *").expect("hourly"),
        ])
    };
    let (a, b) = (node(1), node(2));
    assert!(
        a.run_due(&app.state)
            .await
            .expect("pass")
            .schedules_run
            .is_empty(),
        "first run is the next occurrence"
    );
    app.advance(Duration::days(3));
    let (first, second) = tokio::join!(a.run_due(&app.state), b.run_due(&app.state));
    let runs = first.expect("a").schedules_run.len() + second.expect("b").schedules_run.len();
    assert_eq!(
        runs, 1,
        "three days of missed hours collapse into one run, on one node"
    );
    assert!(
        a.run_due(&app.state)
            .await
            .expect("pass")
            .schedules_run
            .is_empty()
    );
    app.advance(Duration::hours(1));
    assert_eq!(
        b.run_due(&app.state).await.expect("pass").schedules_run,
        ["tournaments.series"]
    );
}

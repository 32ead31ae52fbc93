//! The supervisor (`actors/supervisor.rs`) against real panics: a test
//! actor whose handler panics on demand. Each test proves one promise the
//! supervisor makes:
//! - a panic costs one restart of one actor: the same `Addr` serves again,
//!   the arbiter thread survives, state is rebuilt by `restarting`;
//! - the caller of the panicking message gets an error at once (no hang),
//!   and messages queued behind it are served after the restart;
//! - restarts wait out a growing backoff and are bounded: past the budget
//!   the actor is escalated (degraded), not restarted in a storm;
//! - a deliberate stop stays stopped;
//! - `Escalation::ShutdownBroker` raises the broker's fatal signal;
//! - an actor on a pool arbiter panicking leaves the other actors on that
//!   arbiter running.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use ferrolog::actors::pool::ActorPool;
use ferrolog::actors::supervisor::{supervise, BrokerFatal, ChildSpec, Escalation, SupervisorLink};

/// Counts its messages; panics on `Boom`; `restarting` records the restart
/// and resets the count, as a real actor rebuilds its state.
struct Fragile {
    served: usize,
    starts: Arc<AtomicUsize>,
    link: SupervisorLink,
    degraded: bool,
}

impl Actor for Fragile {
    type Context = Context<Self>;

    fn started(&mut self, _ctx: &mut Context<Self>) {
        self.starts.fetch_add(1, Ordering::SeqCst);
    }
}

impl actix::Supervised for Fragile {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        self.served = 0;
        self.degraded = self.link.escalated().is_some();
    }
}

#[derive(Message)]
#[rtype(result = "Result<usize, &'static str>")]
struct Ping;

impl Handler<Ping> for Fragile {
    type Result = Result<usize, &'static str>;

    fn handle(&mut self, _msg: Ping, _ctx: &mut Context<Self>) -> Self::Result {
        if self.degraded {
            return Err("degraded");
        }
        self.served += 1;
        Ok(self.served)
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct Boom;

impl Handler<Boom> for Fragile {
    type Result = ();

    fn handle(&mut self, _msg: Boom, _ctx: &mut Context<Self>) {
        panic!("injected panic in a handler");
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct StopForGood;

impl Handler<StopForGood> for Fragile {
    type Result = ();

    fn handle(&mut self, _msg: StopForGood, ctx: &mut Context<Self>) {
        self.link.stop();
        ctx.stop();
    }
}

fn start_fragile(
    spec: ChildSpec,
    arbiter: Option<&ArbiterHandle>,
) -> (Addr<Fragile>, SupervisorLink, Arc<AtomicUsize>) {
    let link = SupervisorLink::default();
    let starts = Arc::new(AtomicUsize::new(0));
    let actor = Fragile {
        served: 0,
        starts: starts.clone(),
        link: link.clone(),
        degraded: false,
    };
    let addr = supervise(arbiter, spec, link.clone(), move |_| actor);
    (addr, link, starts)
}

/// Wait (bounded) until `check` holds.
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A panic in a handler: the caller gets a mailbox error straight away, the
/// message queued behind it is answered after the restart by the rebuilt
/// actor (count reset), through the same address.
#[test]
fn a_panic_restarts_the_actor_on_the_same_address() {
    actix_rt::System::new().block_on(async {
        let (addr, link, starts) =
            start_fragile(ChildSpec::new("fragile", Escalation::Degrade), None);
        assert_eq!(addr.send(Ping).await.unwrap(), Ok(1));
        assert_eq!(addr.send(Ping).await.unwrap(), Ok(2));
        let boom = addr.send(Boom);
        let queued = addr.send(Ping);
        let started = Instant::now();
        assert!(
            boom.await.is_err(),
            "the panicking call must fail, not hang"
        );
        assert_eq!(queued.await.unwrap(), Ok(1), "served by the rebuilt actor");
        assert!(
            started.elapsed() >= Duration::from_millis(100),
            "the restart waited for its backoff"
        );
        assert_eq!(link.panics(), 1);
        assert_eq!(link.restarts(), 1);
        assert_eq!(starts.load(Ordering::SeqCst), 2);
        assert!(link.escalated().is_none());
    });
}

/// Panics on every message: after the budget (3 here) the supervisor stops
/// restarting and escalates; the actor then answers in its degraded mode.
/// The restart count proves there was no storm, and the backoffs grew.
#[test]
fn past_its_budget_an_actor_is_escalated_not_restarted_in_a_loop() {
    actix_rt::System::new().block_on(async {
        let mut spec = ChildSpec::new("always failing", Escalation::Degrade);
        spec.max_restarts = 3;
        let (addr, link, _) = start_fragile(spec, None);
        let started = Instant::now();
        for _ in 0..4 {
            assert!(addr.send(Boom).await.is_err());
        }
        // 100 + 200 + 400 ms of backoff at least, plus jitter.
        assert!(started.elapsed() >= Duration::from_millis(700));
        eventually("escalation", || link.escalated().is_some()).await;
        assert_eq!(link.panics(), 4);
        // Three restarts within budget, one more into degraded mode.
        assert_eq!(link.restarts(), 4);
        assert_eq!(addr.send(Ping).await.unwrap(), Err("degraded"));
        // A panic once degraded ends the actor for good.
        assert!(addr.send(Boom).await.is_err());
        eventually("the actor to be gone", || !addr.connected()).await;
        assert_eq!(link.restarts(), 4, "no restart after escalation");
    });
}

/// A deliberate stop (topic deletion, shutdown) is not a failure: the actor
/// stays stopped and nothing is restarted.
#[test]
fn a_deliberate_stop_stays_stopped() {
    actix_rt::System::new().block_on(async {
        let (addr, link, starts) =
            start_fragile(ChildSpec::new("stopped", Escalation::Degrade), None);
        addr.send(StopForGood).await.unwrap();
        eventually("the actor to be gone", || !addr.connected()).await;
        assert!(addr.send(Ping).await.is_err());
        assert_eq!(link.restarts(), 0);
        assert_eq!(starts.load(Ordering::SeqCst), 1);
    });
}

/// A broker-wide actor past its budget raises the broker's fatal signal
/// with a cause naming it.
#[test]
fn a_broker_wide_actor_past_its_budget_raises_fatal() {
    actix_rt::System::new().block_on(async {
        let (fatal, mut receiver) = BrokerFatal::new();
        let mut spec = ChildSpec::new("the test controller", Escalation::ShutdownBroker(fatal));
        spec.max_restarts = 1;
        let (addr, _link, _) = start_fragile(spec, None);
        assert!(addr.send(Boom).await.is_err());
        assert!(addr.send(Boom).await.is_err());
        tokio::time::timeout(Duration::from_secs(10), receiver.changed())
            .await
            .expect("fatal raised in time")
            .unwrap();
        let cause = receiver.borrow().clone().unwrap();
        assert!(cause.contains("the test controller"), "{cause}");
        assert!(cause.contains("injected panic"), "{cause}");
    });
}

/// Two actors on one pool arbiter: one panics, the other keeps serving
/// meanwhile (the arbiter thread survived the unwind), and the first comes
/// back.
#[test]
fn a_panic_on_a_pool_arbiter_spares_its_neighbours() {
    actix_rt::System::new().block_on(async {
        let (pool, threads) = ActorPool::start(1);
        let arbiter = pool.pick(&"any");
        let (victim, victim_link, _) = start_fragile(
            ChildSpec::new("victim", Escalation::Degrade),
            Some(&arbiter),
        );
        let (neighbour, neighbour_link, _) = start_fragile(
            ChildSpec::new("neighbour", Escalation::Degrade),
            Some(&arbiter),
        );
        assert!(victim.send(Boom).await.is_err());
        // During the victim's backoff its neighbour answers.
        for expected in 1..=20 {
            assert_eq!(neighbour.send(Ping).await.unwrap(), Ok(expected));
        }
        assert_eq!(victim.send(Ping).await.unwrap(), Ok(1));
        assert_eq!(victim_link.restarts(), 1);
        assert_eq!(neighbour_link.restarts(), 0);
        threads.stop();
    });
}

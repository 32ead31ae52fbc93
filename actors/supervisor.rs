//! Supervision, one mechanism for every actor kind. `supervise` runs an
//! actor's context inside a future of its own that catches what actix's
//! `Supervisor` does not: a handler that panics. Whether the actor panicked
//! or stopped with an error, the supervisor waits out an exponential backoff
//! with jitter, then restarts it on the same mailbox (senders keep their
//! `Addr`); the actor's `Supervised::restarting` rebuilds its state from the
//! log and the metadata store. Past its budget the supervisor escalates as
//! the child's `Escalation` says: the actor degrades (a partition goes
//! offline) or the broker is asked to shut down.
//!
//! A panic costs one restart of one actor, never its arbiter thread: the
//! message being handled is dropped, so its caller gets a mailbox error,
//! which handlers map to a retriable Kafka error. Messages still queued wait
//! for the restart. An actor that stops on purpose calls
//! `SupervisorLink::stop` first and is not restarted.
//!
//! It never inspects an actor's state and never blocks.

use std::collections::VecDeque;
use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use actix::dev::ContextFut;
use actix::prelude::*;

/// Every supervised actor's mailbox bound unless its `ChildSpec` says
/// otherwise (actix's own default is 16, which drops events and parks
/// senders early). Senders past it wait; `try_send`/`do_send` callers are
/// refused or, for a fresh `Addr` clone, get the one extra slot each
/// sender is guaranteed (actix's channel, like futures' mpsc).
pub const DEFAULT_MAILBOX: usize = 1024;

/// At most `max_restarts` restarts within `window`.
#[derive(Debug, Clone)]
pub struct RestartBudget {
    max_restarts: usize,
    window: Duration,
    recent: VecDeque<Instant>,
}

impl Default for RestartBudget {
    fn default() -> Self {
        RestartBudget::new(5, Duration::from_secs(60))
    }
}

impl RestartBudget {
    /// At most `max_restarts` restarts within any `window`.
    pub fn new(max_restarts: usize, window: Duration) -> Self {
        RestartBudget {
            max_restarts,
            window,
            recent: VecDeque::with_capacity(max_restarts + 1),
        }
    }

    /// Record a restart at `now`; false when the budget is spent and the
    /// supervisor should escalate instead of restarting again.
    pub fn record_restart(&mut self, now: Instant) -> bool {
        while let Some(&oldest) = self.recent.front() {
            if now.duration_since(oldest) > self.window {
                self.recent.pop_front();
            } else {
                break;
            }
        }
        if self.recent.len() >= self.max_restarts {
            return false;
        }
        self.recent.push_back(now);
        true
    }

    /// How long to wait before the next restart: doubling from 100 ms with
    /// each recent restart, at most 30 s.
    pub fn backoff(&self) -> Duration {
        let exponent = self.recent.len().saturating_sub(1).min(9) as u32;
        Duration::from_millis(100 * 2u64.pow(exponent)).min(Duration::from_secs(30))
    }
}

/// What a supervisor does once a child has used up its restart budget.
#[derive(Clone)]
pub enum Escalation {
    /// Restart it one last time in its degraded mode: the actor sees
    /// `SupervisorLink::escalated` and serves errors (a partition answers
    /// KAFKA_STORAGE_ERROR, a group COORDINATOR_NOT_AVAILABLE).
    Degrade,
    /// The broker cannot run without this actor: report the cause, and the
    /// broker shuts down cleanly.
    ShutdownBroker(BrokerFatal),
}

/// Where broker-wide actors report a failure the broker cannot survive.
/// `main` waits on it beside the signals and shuts the broker down.
#[derive(Clone)]
pub struct BrokerFatal(Arc<tokio::sync::watch::Sender<Option<String>>>);

impl BrokerFatal {
    /// A sender, and the receiver `main` waits on.
    pub fn new() -> (BrokerFatal, tokio::sync::watch::Receiver<Option<String>>) {
        let (sender, receiver) = tokio::sync::watch::channel(None);
        (BrokerFatal(Arc::new(sender)), receiver)
    }

    /// Ask for a clean shutdown; the first cause wins.
    pub fn raise(&self, cause: String) {
        self.0.send_if_modified(|current| {
            if current.is_none() {
                *current = Some(cause);
                true
            } else {
                false
            }
        });
    }
}

/// How one child is supervised.
#[derive(Clone)]
pub struct ChildSpec {
    /// Names the child in log lines ("partition t-0", "group g").
    pub name: String,
    /// Restarts allowed within `window` before escalating.
    pub max_restarts: usize,
    /// The window of the restart budget.
    pub window: Duration,
    /// What happens when the budget is spent.
    pub escalation: Escalation,
    /// The mailbox bound, set here for every actor kind (one place).
    pub mailbox: usize,
}

impl ChildSpec {
    /// Kafka-ish defaults: 5 restarts a minute, a 1024-message mailbox.
    pub fn new(name: impl Into<String>, escalation: Escalation) -> Self {
        ChildSpec {
            name: name.into(),
            max_restarts: 5,
            window: Duration::from_secs(60),
            escalation,
            mailbox: DEFAULT_MAILBOX,
        }
    }

    /// The same spec with a mailbox of `capacity` messages.
    pub fn with_mailbox(mut self, capacity: usize) -> Self {
        self.mailbox = capacity.max(1);
        self
    }
}

#[derive(Debug, Default)]
struct LinkState {
    stopping: AtomicBool,
    restarts: AtomicU64,
    panics: AtomicU64,
    escalated: Mutex<Option<String>>,
}

/// Shared by a supervised actor and its supervisor: the actor marks a
/// deliberate stop here and reads whether it was escalated; tests and
/// operators read the restart count.
#[derive(Debug, Clone, Default)]
pub struct SupervisorLink(Arc<LinkState>);

impl SupervisorLink {
    /// Mark the coming `ctx.stop()` as deliberate: the actor stays stopped.
    pub fn stop(&self) {
        self.0.stopping.store(true, Ordering::SeqCst);
    }

    /// Whether a deliberate stop was asked for.
    pub fn is_stopping(&self) -> bool {
        self.0.stopping.load(Ordering::SeqCst)
    }

    /// Why the supervisor gave up restarting, once it has.
    pub fn escalated(&self) -> Option<String> {
        match self.0.escalated.lock() {
            Ok(cause) => cause.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Restarts so far (each after a panic or a stop with an error).
    pub fn restarts(&self) -> u64 {
        self.0.restarts.load(Ordering::SeqCst)
    }

    /// Panics contained so far.
    pub fn panics(&self) -> u64 {
        self.0.panics.load(Ordering::SeqCst)
    }

    fn escalate(&self, cause: String) {
        match self.0.escalated.lock() {
            Ok(mut slot) => *slot = Some(cause),
            Err(poisoned) => *poisoned.into_inner() = Some(cause),
        }
    }
}

/// Start `A` under supervision, on `arbiter` if given (else the current
/// one). `factory` builds the actor once; restarts reuse it through
/// `Supervised::restarting`, which must rebuild whatever a panic may have
/// left half-done.
pub fn supervise<A, F>(
    arbiter: Option<&ArbiterHandle>,
    spec: ChildSpec,
    link: SupervisorLink,
    factory: F,
) -> Addr<A>
where
    A: Actor<Context = Context<A>> + actix::Supervised,
    F: FnOnce(&mut Context<A>) -> A + Send + 'static,
{
    let (sender, receiver) = actix::dev::channel::channel(spec.mailbox);
    let start = move || {
        let mut ctx = Context::with_receiver(receiver);
        ctx.set_mailbox_capacity(spec.mailbox);
        let actor = factory(&mut ctx);
        let fut = ctx.into_future(actor);
        actix_rt::spawn(ChildFuture {
            fut,
            budget: RestartBudget::new(spec.max_restarts, spec.window),
            spec,
            link,
            backoff: None,
        });
    };
    match arbiter {
        Some(arbiter) => {
            if !arbiter.spawn_fn(start) {
                log::error!("cannot start a supervised actor: its arbiter has stopped");
            }
        }
        None => start(),
    }
    Addr::new(sender)
}

struct ChildFuture<A>
where
    A: Actor<Context = Context<A>> + actix::Supervised,
{
    fut: ContextFut<A, Context<A>>,
    spec: ChildSpec,
    link: SupervisorLink,
    budget: RestartBudget,
    backoff: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<A> ChildFuture<A>
where
    A: Actor<Context = Context<A>> + actix::Supervised,
{
    /// The child failed: schedule a restart or escalate. `Ready` means the
    /// child is gone for good.
    fn failed(&mut self, cause: String) -> Poll<()> {
        if self.link.escalated().is_some() {
            // Already degraded and still failing: leave it stopped.
            log::error!("{} failed again after escalation: {cause}", self.spec.name);
            return Poll::Ready(());
        }
        if self.budget.record_restart(Instant::now()) {
            let delay = with_jitter(self.budget.backoff());
            log::warn!(
                "{} failed ({cause}); restarting in {} ms",
                self.spec.name,
                delay.as_millis()
            );
            self.backoff = Some(Box::pin(tokio::time::sleep(delay)));
            return Poll::Pending;
        }
        let cause = format!(
            "{} failed {} times within {:?}; last: {cause}",
            self.spec.name, self.spec.max_restarts, self.spec.window
        );
        log::error!("{cause}: escalating");
        self.link.escalate(cause.clone());
        if let Escalation::ShutdownBroker(fatal) = &self.spec.escalation {
            fatal.raise(cause);
        }
        // One last restart into the degraded mode the actor chooses.
        if self.restart() {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    }

    fn restart(&mut self) -> bool {
        let fut = &mut self.fut;
        match catch_unwind(AssertUnwindSafe(|| fut.restart())) {
            Ok(restarted) => {
                if restarted {
                    self.link.0.restarts.fetch_add(1, Ordering::SeqCst);
                }
                restarted
            }
            Err(panic) => {
                log::error!(
                    "{} panicked while restarting: {}",
                    self.spec.name,
                    panic_message(panic.as_ref())
                );
                false
            }
        }
    }
}

impl<A> Future for ChildFuture<A>
where
    A: Actor<Context = Context<A>> + actix::Supervised,
{
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<()> {
        // Every field is Unpin (the context future is Unpin by design).
        let this = self.get_mut();
        loop {
            if let Some(sleep) = this.backoff.as_mut() {
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                this.backoff = None;
                if !this.restart() {
                    return Poll::Ready(());
                }
            }
            let fut = &mut this.fut;
            let cause = match catch_unwind(AssertUnwindSafe(|| Pin::new(fut).poll(cx))) {
                Ok(Poll::Pending) => return Poll::Pending,
                Ok(Poll::Ready(())) => {
                    if this.link.is_stopping() {
                        log::debug!("{} stopped", this.spec.name);
                        return Poll::Ready(());
                    }
                    "stopped".to_string()
                }
                Err(panic) => {
                    this.link.0.panics.fetch_add(1, Ordering::SeqCst);
                    format!("panic: {}", panic_message(panic.as_ref()))
                }
            };
            if this.failed(cause).is_ready() {
                return Poll::Ready(());
            }
            if this.backoff.is_none() {
                // Escalated and restarted degraded: poll it again now.
                continue;
            }
        }
    }
}

/// `delay` plus up to half of it again, so children failing together do
/// not restart together.
fn with_jitter(delay: Duration) -> Duration {
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(Instant::now().elapsed().as_nanos());
    let half = delay.as_millis() as u64 / 2;
    let extra = if half == 0 { 0 } else { hasher.finish() % half };
    delay + Duration::from_millis(extra)
}

/// The text of a caught panic.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The budget refuses the restart past the limit and recovers once the
    /// window has moved on.
    #[test]
    fn restarts_are_bounded_per_window() {
        let mut budget = RestartBudget::new(3, Duration::from_secs(10));
        let t0 = Instant::now();
        assert!(budget.record_restart(t0));
        assert_eq!(budget.backoff(), Duration::from_millis(100));
        assert!(budget.record_restart(t0 + Duration::from_secs(1)));
        assert!(budget.record_restart(t0 + Duration::from_secs(2)));
        assert_eq!(budget.backoff(), Duration::from_millis(400));
        assert!(!budget.record_restart(t0 + Duration::from_secs(3)));
        assert!(budget.record_restart(t0 + Duration::from_secs(12)));
    }

    struct Idle;

    impl Actor for Idle {
        type Context = Context<Self>;
    }

    impl actix::Supervised for Idle {}

    #[derive(Message)]
    #[rtype(result = "()")]
    struct Ping;

    impl Handler<Ping> for Idle {
        type Result = ();

        fn handle(&mut self, _msg: Ping, _ctx: &mut Context<Self>) {}
    }

    /// Messages `addr` queues before refusing one (its actor has not run).
    fn queued_until_full(addr: &Addr<Idle>) -> usize {
        let mut queued = 0;
        while addr.try_send(Ping).is_ok() {
            queued += 1;
            assert!(queued <= 100_000, "the mailbox never refused");
        }
        queued
    }

    /// Every supervised actor's mailbox bound comes from its spec: 1024
    /// unless the spec says otherwise (actix's own default is 16).
    #[test]
    fn the_spec_sets_every_mailbox_bound() {
        actix_rt::System::new().block_on(async {
            let spec = ChildSpec::new("idle", Escalation::Degrade);
            let idle = supervise(None, spec.clone(), SupervisorLink::default(), |_| Idle);
            assert_eq!(queued_until_full(&idle), DEFAULT_MAILBOX);
            let small = supervise(
                None,
                spec.with_mailbox(8),
                SupervisorLink::default(),
                |_| Idle,
            );
            assert_eq!(queued_until_full(&small), 8);
        });
    }

    /// Records the order its `Tagged` messages are handled in.
    struct Recording(Arc<Mutex<Vec<u32>>>);

    impl Actor for Recording {
        type Context = Context<Self>;
    }

    impl actix::Supervised for Recording {}

    #[derive(Message)]
    #[rtype(result = "()")]
    struct Tagged(u32);

    impl Handler<Tagged> for Recording {
        type Result = ();

        fn handle(&mut self, msg: Tagged, _ctx: &mut Context<Self>) {
            if let Ok(mut order) = self.0.lock() {
                order.push(msg.0);
            }
        }
    }

    /// The property `ProducePath::append` leans on: on a full mailbox, the
    /// first `send` from a fresh `Addr` clone is queued when it is made,
    /// not when its future is first polled (each sender has a slot of its
    /// own), so sends made in order are handled in that order whatever
    /// order their answers are awaited in.
    #[test]
    fn a_fresh_address_clone_queues_at_once_on_a_full_mailbox() {
        actix_rt::System::new().block_on(async {
            let order = Arc::new(Mutex::new(Vec::new()));
            let recorded = order.clone();
            let spec = ChildSpec::new("recording", Escalation::Degrade).with_mailbox(4);
            let addr = supervise(None, spec, SupervisorLink::default(), move |_| {
                Recording(recorded)
            });
            let mut queued = 0;
            while addr.try_send(Tagged(0)).is_ok() {
                queued += 1;
            }
            assert_eq!(queued, 4);
            let first = addr.clone().send(Tagged(1));
            let second = addr.clone().send(Tagged(2));
            second.await.expect("answered");
            first.await.expect("answered");
            let order = order.lock().map(|o| o.clone()).unwrap_or_default();
            assert_eq!(order, vec![0, 0, 0, 0, 1, 2]);
        });
    }

    /// Jitter adds at most half the delay.
    #[test]
    fn jitter_stays_within_half() {
        for _ in 0..100 {
            let d = with_jitter(Duration::from_millis(200));
            assert!(d >= Duration::from_millis(200) && d < Duration::from_millis(300));
        }
    }
}

//! The event bus's promises, with real actors: a subscriber gets only the
//! kinds it asked for; publishing never waits, so a subscriber whose
//! mailbox is full misses events (counted in `dropped`) while the
//! publisher goes on; a subscriber that is gone is removed.

use actix::prelude::*;
use ferrolog::actors::event_bus::{BrokerEvent, EventBus, EventKind};

struct Listener {
    seen: Vec<BrokerEvent>,
}

impl Actor for Listener {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.set_mailbox_capacity(4);
    }
}

impl Handler<BrokerEvent> for Listener {
    type Result = ();

    fn handle(&mut self, event: BrokerEvent, _ctx: &mut Context<Self>) {
        self.seen.push(event);
    }
}

#[derive(Message)]
#[rtype(result = "Vec<BrokerEvent>")]
struct Seen;

impl Handler<Seen> for Listener {
    type Result = MessageResult<Seen>;

    fn handle(&mut self, _msg: Seen, _ctx: &mut Context<Self>) -> Self::Result {
        MessageResult(self.seen.clone())
    }
}

#[derive(Message)]
#[rtype(result = "()")]
struct StopNow;

impl Handler<StopNow> for Listener {
    type Result = ();

    fn handle(&mut self, _msg: StopNow, ctx: &mut Context<Self>) {
        ctx.stop();
    }
}

fn created(i: usize) -> BrokerEvent {
    BrokerEvent::TopicCreated {
        topic: format!("t{i}"),
        partitions: 1,
    }
}

#[test]
fn publishing_never_waits_and_filters_by_kind() {
    actix_rt::System::new().block_on(async {
        let bus = EventBus::new();
        let listener = Listener { seen: Vec::new() }.start();
        // Let it start (and set its mailbox bound) before anything is sent.
        listener.send(Seen).await.unwrap();
        bus.subscribe(listener.clone().recipient(), &[EventKind::TopicCreated]);
        assert!(bus.wants(EventKind::TopicCreated));
        assert!(!bus.wants(EventKind::HighWatermarkAdvanced));
        // 100 events without yielding: the listener cannot run, its mailbox
        // fills, and publish returns every time.
        for i in 0..100 {
            bus.publish(created(i));
        }
        bus.publish(BrokerEvent::TopicDeleted {
            topic: "other kind".into(),
            partitions: 1,
        });
        let dropped = bus.dropped();
        assert!(dropped > 0, "a full mailbox must drop, not block");
        let seen = listener.send(Seen).await.unwrap();
        assert_eq!(seen.len() as u64 + dropped, 100);
        assert_eq!(seen.first(), Some(&created(0)), "delivered in order");
        assert!(seen.iter().all(|e| e.kind() == EventKind::TopicCreated));
    });
}

#[test]
fn a_subscriber_that_is_gone_is_removed() {
    actix_rt::System::new().block_on(async {
        let bus = EventBus::new();
        let listener = Listener { seen: Vec::new() }.start();
        bus.subscribe(listener.clone().recipient(), &[EventKind::TopicCreated]);
        assert_eq!(bus.subscribers(), 1);
        listener.send(StopNow).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        bus.publish(created(0));
        assert_eq!(bus.subscribers(), 0);
        assert!(!bus.wants(EventKind::TopicCreated));
    });
}

//! Where requests meet client quotas, as in Kafka's `KafkaApis`: a produce
//! records its request bytes after it is handled, a consumer's fetch its
//! response bytes (a throttled fetch is answered empty and unrecorded, as
//! Kafka's `getThrottledResponse`), every request but the inter-broker
//! ones its handling time against `request_percentage`. The delay goes
//! into `throttle_time_ms` where the response has one and mutes the
//! connection; nothing is ever refused for a quota.

use std::time::Instant;

use kafka_protocol::messages::{FetchResponse, ProduceRequest};

use super::BrokerContext;
use crate::quota::{ChannelMute, QuotaType};
use crate::security::Session;
use crate::storage::segment::FileRegion;

/// One request's view of its client's quotas.
pub struct Throttling<'a> {
    pub ctx: &'a BrokerContext,
    pub session: &'a Session,
    pub client_id: &'a str,
    pub mute: &'a ChannelMute,
    pub started: Instant,
}

impl Throttling<'_> {
    fn now_ms(&self) -> u64 {
        self.ctx.clock.now_ms().max(0) as u64
    }

    fn record(&self, quota_type: QuotaType, value: f64) -> u64 {
        self.ctx.client_quotas.manager.record(
            self.session.principal.name(),
            self.client_id,
            quota_type,
            value,
            self.now_ms(),
        )
    }

    /// Records the handling time so far against `request_percentage`
    /// (Kafka's unit: percent of one thread, so a second of work is 100).
    pub fn request_time(&self) -> u64 {
        let percent_seconds = self.started.elapsed().as_secs_f64() * 100.0;
        self.record(QuotaType::Request, percent_seconds)
    }

    /// A produce's delay: its record bytes against `producer_byte_rate`,
    /// its time against `request_percentage`; the connection is muted.
    pub fn produce(&self, request_bytes: f64) -> i32 {
        let delay = self
            .record(QuotaType::Produce, request_bytes)
            .max(self.request_time());
        self.mute.mute_for(delay);
        delay.min(i32::MAX as u64) as i32
    }

    /// A consumer's fetch: its response bytes against
    /// `consumer_byte_rate`. Throttled, the response is replaced by an
    /// empty one that carries the delay (the bytes unrecorded: the client
    /// fetches them again).
    pub fn fetch(
        &self,
        response: FetchResponse,
        regions: Vec<FileRegion>,
    ) -> (FetchResponse, Vec<FileRegion>) {
        let bytes = fetch_bytes(&response);
        let bandwidth = self.record(QuotaType::Fetch, bytes);
        let delay = bandwidth.max(self.request_time());
        if delay == 0 {
            return (response, regions);
        }
        self.ctx.client_quotas.manager.unrecord(
            self.session.principal.name(),
            self.client_id,
            QuotaType::Fetch,
            bytes,
            self.now_ms(),
        );
        self.mute.mute_for(delay);
        let empty = FetchResponse::default()
            .with_throttle_time_ms(delay.min(i32::MAX as u64) as i32)
            .with_session_id(response.session_id);
        (empty, Vec::new())
    }

    /// The largest fetch response the client's quota allows at once.
    pub fn fetch_max_bytes(&self) -> Option<i32> {
        self.ctx
            .client_quotas
            .manager
            .max_value_in_window(self.session.principal.name(), self.client_id, QuotaType::Fetch)
            .map(|bytes| bytes.clamp(1.0, i32::MAX as f64) as i32)
    }

    /// Any other request: its time against `request_percentage`; the
    /// delay mutes the connection.
    pub fn other(&self) {
        let delay = self.request_time();
        self.mute.mute_for(delay);
    }
}

/// A produce request's record bytes (what Kafka's quota counts, less the
/// few header bytes).
pub fn produce_bytes(request: &ProduceRequest) -> f64 {
    request
        .topic_data
        .iter()
        .flat_map(|t| &t.partition_data)
        .map(|p| p.records.as_ref().map_or(0, |r| r.len()))
        .sum::<usize>() as f64
}

fn fetch_bytes(response: &FetchResponse) -> f64 {
    response
        .responses
        .iter()
        .flat_map(|t| &t.partitions)
        .map(|p| p.records.as_ref().map_or(0, |r| r.len()))
        .sum::<usize>() as f64
}

//! Kafka wire protocol glue over the `kafka-protocol` crate: which APIs and
//! versions ferrolog implements, decoding a request frame, encoding a
//! response frame.
//!
//! Architecture invariant: this module does no I/O and knows nothing of
//! actix; it turns bytes into typed requests and typed responses into bytes
//! (plus file regions, spliced where record bytes go, for zero-copy fetches).
//! It never hand-writes a message codec: every message goes through
//! `kafka-protocol`.

pub mod splice;

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion};

pub use splice::{ResponseChunk, ResponseFrame};

/// Why a frame could not become a request. Every variant closes the
/// connection (Kafka does the same for unparseable requests), except
/// `UnsupportedVersion` of ApiVersions, which gets a v0 answer (KIP-511).
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("frame of {0} bytes is too short for a request header")]
    ShortFrame(usize),
    #[error("unknown or unimplemented api key {0}")]
    UnknownApiKey(i16),
    #[error("{api:?} v{version} is not supported")]
    UnsupportedVersion {
        api: ApiKey,
        version: i16,
        correlation_id: i32,
    },
    #[error("cannot decode {api:?} v{version}: {reason}")]
    Malformed {
        api: ApiKey,
        version: i16,
        reason: String,
    },
    #[error("cannot encode the response: {0}")]
    Encode(String),
    /// A request that failed where the protocol has no way to say so (a
    /// produce with acks=0): Kafka closes the connection, so the client
    /// notices and refreshes its metadata.
    #[error("{0}")]
    FailedWithoutResponse(String),
}

/// Declares every implemented API once: its request type, the version range
/// ferrolog serves, and its variant of [`Request`].
macro_rules! implemented_apis {
    ($($variant:ident($request:ty) = $key:ident, $min:literal ..= $max:literal;)*) => {
        /// A decoded request of an implemented API. (ApiVersions' body is
        /// decoded, so a malformed one is refused, but nothing in it is read.)
        #[derive(Debug)]
        #[allow(dead_code)]
        pub enum Request {
            $($variant(Box<$request>),)*
        }

        /// The API key and version range of every implemented API, in
        /// api key order: exactly what ApiVersions advertises.
        pub const SUPPORTED_APIS: &[(ApiKey, i16, i16)] = &[$((ApiKey::$key, $min, $max),)*];

        fn decode_body(api: ApiKey, version: i16, buf: &mut Bytes) -> Result<Request, ProtocolError> {
            match api {
                $(ApiKey::$key => <$request>::decode(buf, version)
                    .map(|r| Request::$variant(Box::new(r)))
                    .map_err(|e| ProtocolError::Malformed { api, version, reason: e.to_string() }),)*
                _ => Err(ProtocolError::UnknownApiKey(api as i16)),
            }
        }
    };
}

implemented_apis! {
    Produce(ProduceRequest) = Produce, 0..=9;
    Fetch(FetchRequest) = Fetch, 0..=12;
    ListOffsets(ListOffsetsRequest) = ListOffsets, 0..=7;
    Metadata(MetadataRequest) = Metadata, 0..=12;
    // The controller's requests to brokers, in the one version it speaks.
    LeaderAndIsr(LeaderAndIsrRequest) = LeaderAndIsr, 5..=5;
    StopReplica(StopReplicaRequest) = StopReplica, 3..=3;
    UpdateMetadata(UpdateMetadataRequest) = UpdateMetadata, 7..=7;
    ControlledShutdown(ControlledShutdownRequest) = ControlledShutdown, 0..=3;
    OffsetCommit(OffsetCommitRequest) = OffsetCommit, 0..=8;
    OffsetFetch(OffsetFetchRequest) = OffsetFetch, 0..=8;
    FindCoordinator(FindCoordinatorRequest) = FindCoordinator, 0..=4;
    JoinGroup(JoinGroupRequest) = JoinGroup, 0..=7;
    Heartbeat(HeartbeatRequest) = Heartbeat, 0..=4;
    LeaveGroup(LeaveGroupRequest) = LeaveGroup, 0..=4;
    SyncGroup(SyncGroupRequest) = SyncGroup, 0..=5;
    DescribeGroups(DescribeGroupsRequest) = DescribeGroups, 0..=5;
    ListGroups(ListGroupsRequest) = ListGroups, 0..=5;
    ApiVersions(ApiVersionsRequest) = ApiVersions, 0..=3;
    CreateTopics(CreateTopicsRequest) = CreateTopics, 0..=7;
    DeleteTopics(DeleteTopicsRequest) = DeleteTopics, 0..=6;
    DeleteRecords(DeleteRecordsRequest) = DeleteRecords, 0..=2;
    OffsetForLeaderEpoch(OffsetForLeaderEpochRequest) = OffsetForLeaderEpoch, 0..=4;
    DeleteGroups(DeleteGroupsRequest) = DeleteGroups, 0..=2;
    DescribeConfigs(DescribeConfigsRequest) = DescribeConfigs, 0..=4;
    AlterConfigs(AlterConfigsRequest) = AlterConfigs, 0..=2;
    DescribeLogDirs(DescribeLogDirsRequest) = DescribeLogDirs, 0..=4;
    CreatePartitions(CreatePartitionsRequest) = CreatePartitions, 0..=3;
    ElectLeaders(ElectLeadersRequest) = ElectLeaders, 0..=2;
    IncrementalAlterConfigs(IncrementalAlterConfigsRequest) = IncrementalAlterConfigs, 0..=1;
    OffsetDelete(OffsetDeleteRequest) = OffsetDelete, 0..=0;
    DescribeCluster(DescribeClusterRequest) = DescribeCluster, 0..=1;
    InitProducerId(InitProducerIdRequest) = InitProducerId, 0..=4;
    DescribeAcls(DescribeAclsRequest) = DescribeAcls, 0..=3;
    CreateAcls(CreateAclsRequest) = CreateAcls, 0..=3;
    DeleteAcls(DeleteAclsRequest) = DeleteAcls, 0..=3;
    SaslHandshake(SaslHandshakeRequest) = SaslHandshake, 0..=1;
    SaslAuthenticate(SaslAuthenticateRequest) = SaslAuthenticate, 0..=2;
    DescribeUserScramCredentials(DescribeUserScramCredentialsRequest) = DescribeUserScramCredentials, 0..=0;
    AlterUserScramCredentials(AlterUserScramCredentialsRequest) = AlterUserScramCredentials, 0..=0;
    DescribeClientQuotas(DescribeClientQuotasRequest) = DescribeClientQuotas, 0..=1;
    AlterClientQuotas(AlterClientQuotasRequest) = AlterClientQuotas, 0..=1;
}

/// The version range ferrolog serves for `api`, if it implements it.
pub fn supported_versions(api: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED_APIS
        .iter()
        .find(|(key, _, _)| *key == api)
        .map(|&(_, min, max)| (min, max))
}

/// A request with its header.
#[derive(Debug)]
pub struct RequestFrame {
    pub header: RequestHeader,
    pub api: ApiKey,
    pub body: Request,
}

impl RequestFrame {
    pub fn version(&self) -> i16 {
        self.header.request_api_version
    }
    pub fn correlation_id(&self) -> i32 {
        self.header.correlation_id
    }
}

/// Decode a whole request frame (the bytes after the length prefix).
pub fn decode_request(frame: Bytes) -> Result<RequestFrame, ProtocolError> {
    if frame.len() < 8 {
        return Err(ProtocolError::ShortFrame(frame.len()));
    }
    let raw_key = i16::from_be_bytes([frame[0], frame[1]]);
    let version = i16::from_be_bytes([frame[2], frame[3]]);
    let correlation_id = i32::from_be_bytes([frame[4], frame[5], frame[6], frame[7]]);
    let api = ApiKey::try_from(raw_key).map_err(|()| ProtocolError::UnknownApiKey(raw_key))?;
    let (min, max) = supported_versions(api).ok_or(ProtocolError::UnknownApiKey(raw_key))?;
    if version < min || version > max {
        return Err(ProtocolError::UnsupportedVersion {
            api,
            version,
            correlation_id,
        });
    }
    let mut buf = frame;
    let header_version = api.request_header_version(version);
    let header =
        RequestHeader::decode(&mut buf, header_version).map_err(|e| ProtocolError::Malformed {
            api,
            version,
            reason: format!("header: {e}"),
        })?;
    let body = decode_body(api, version, &mut buf)?;
    if buf.has_remaining() {
        // Kafka ignores bytes after the body, and clients rely on it:
        // librdkafka (2.x) sends an all-topics Metadata v9+ request with
        // three stray bytes after the null topics array.
        log::debug!(
            "{api:?} v{version} left {} bytes undecoded; ignored",
            buf.remaining()
        );
    }
    Ok(RequestFrame { header, api, body })
}

/// Encode a response for `api` v`version` into a frame: length prefix,
/// response header, body. Record bytes that stand for file regions (see
/// [`splice`]) are left out of the buffer and sent from the file.
pub fn encode_response<R: Encodable + HeaderVersion>(
    api: ApiKey,
    version: i16,
    correlation_id: i32,
    response: &R,
    regions: Vec<crate::storage::FileRegion>,
) -> Result<ResponseFrame, ProtocolError> {
    let header = ResponseHeader::default().with_correlation_id(correlation_id);
    let header_version = api.response_header_version(version);
    let mut buf = splice::SplicingBuf::new(regions);
    buf.reserve_prefix();
    header
        .encode(&mut buf, header_version)
        .map_err(|e| ProtocolError::Encode(e.to_string()))?;
    response
        .encode(&mut buf, version)
        .map_err(|e| ProtocolError::Encode(e.to_string()))?;
    buf.finish()
}

/// The ApiVersions v0 answer to a request whose version is not supported
/// (KIP-511): UNSUPPORTED_VERSION plus every supported range.
pub fn unsupported_api_versions_response(
    correlation_id: i32,
) -> Result<ResponseFrame, ProtocolError> {
    let response = api_versions_response(35);
    encode_response(
        ApiKey::ApiVersions,
        0,
        correlation_id,
        &response,
        Vec::new(),
    )
}

/// The ApiVersions body with `error_code`, listing [`SUPPORTED_APIS`].
pub fn api_versions_response(error_code: i16) -> ApiVersionsResponse {
    ApiVersionsResponse::default()
        .with_error_code(error_code)
        .with_api_keys(
            SUPPORTED_APIS
                .iter()
                .map(|&(key, min, max)| {
                    api_versions_response::ApiVersion::default()
                        .with_api_key(key as i16)
                        .with_min_version(min)
                        .with_max_version(max)
                })
                .collect(),
        )
}

/// Bytes of a frame so far, for tests and tools that build requests.
pub fn encode_request<R: Encodable + HeaderVersion>(
    header: &RequestHeader,
    api: ApiKey,
    request: &R,
) -> Result<BytesMut, ProtocolError> {
    let version = header.request_api_version;
    let mut body = BytesMut::new();
    header
        .encode(&mut body, api.request_header_version(version))
        .map_err(|e| ProtocolError::Encode(e.to_string()))?;
    request
        .encode(&mut body, version)
        .map_err(|e| ProtocolError::Encode(e.to_string()))?;
    let mut frame = BytesMut::with_capacity(body.len() + 4);
    frame.extend_from_slice(&(body.len() as i32).to_be_bytes());
    frame.extend_from_slice(&body);
    Ok(frame)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::protocol::StrBytes;

    fn header(api: ApiKey, version: i16) -> RequestHeader {
        RequestHeader::default()
            .with_request_api_key(api as i16)
            .with_request_api_version(version)
            .with_correlation_id(7)
            .with_client_id(Some(StrBytes::from_static_str("test")))
    }

    /// Every supported version of Metadata round-trips through the decoder.
    #[test]
    fn decodes_every_metadata_version() {
        for version in 0..=12 {
            let request = MetadataRequest::default().with_topics(Some(vec![]));
            let frame = encode_request(
                &header(ApiKey::Metadata, version),
                ApiKey::Metadata,
                &request,
            )
            .unwrap();
            let decoded = decode_request(frame.freeze().slice(4..)).unwrap();
            assert_eq!(decoded.correlation_id(), 7);
            assert!(matches!(decoded.body, Request::Metadata(_)));
        }
    }

    /// Versions outside the served range and unknown keys are refused.
    #[test]
    fn refuses_unsupported_versions_and_keys() {
        let frame = encode_request(
            &header(ApiKey::ApiVersions, 3),
            ApiKey::ApiVersions,
            &ApiVersionsRequest::default(),
        )
        .unwrap();
        let mut bytes = frame.to_vec();
        bytes[6..8].copy_from_slice(&99i16.to_be_bytes());
        assert!(matches!(
            decode_request(Bytes::from(bytes[4..].to_vec())),
            Err(ProtocolError::UnsupportedVersion {
                correlation_id: 7,
                ..
            })
        ));
        let mut bytes = frame.to_vec();
        bytes[4..6].copy_from_slice(&999i16.to_be_bytes());
        assert!(matches!(
            decode_request(Bytes::from(bytes[4..].to_vec())),
            Err(ProtocolError::UnknownApiKey(999))
        ));
    }

    /// librdkafka 2.x asks for every topic with Metadata v12 whose null
    /// topics array is followed by three stray zero bytes; Kafka ignores
    /// bytes after the body, so ferrolog must too.
    #[test]
    fn ignores_bytes_after_the_body_like_kafka() {
        let frame = hex_bytes("0003000c00000003000772646b61666b610000000000010000");
        let decoded = decode_request(Bytes::from(frame)).unwrap();
        assert_eq!(decoded.correlation_id(), 3);
        match decoded.body {
            Request::Metadata(request) => assert!(request.topics.is_none()),
            other => panic!("decoded as {other:?}"),
        }
    }

    fn hex_bytes(hex: &str) -> Vec<u8> {
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect()
    }

    /// A Metadata v0 frame declaring 50 million topics is refused without
    /// allocating for them (the vendored patch bounds the capacity).
    #[test]
    fn huge_declared_arrays_are_cheap_errors() {
        let mut frame = Vec::new();
        frame.extend_from_slice(&3i16.to_be_bytes());
        frame.extend_from_slice(&0i16.to_be_bytes());
        frame.extend_from_slice(&1i32.to_be_bytes());
        frame.extend_from_slice(&(-1i16).to_be_bytes());
        frame.extend_from_slice(&50_000_000i32.to_be_bytes());
        assert!(matches!(
            decode_request(Bytes::from(frame)),
            Err(ProtocolError::Malformed { .. })
        ));
    }

    /// Every advertised version is one the codec knows (decoding a filled
    /// request of every advertised version is `tests/fuzz_decode.rs`'s
    /// `every_seed_decodes`).
    #[test]
    fn advertised_versions_exist_in_the_codec() {
        for &(api, min, max) in SUPPORTED_APIS {
            assert!(min <= max);
            let (_, crate_max) = (api.valid_versions().min, api.valid_versions().max);
            assert!(max <= crate_max, "{api:?}");
        }
    }
}

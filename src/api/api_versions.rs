//! ApiVersions (key 18): the versions of exactly the APIs implemented.
//! Unsupported ApiVersions versions are answered earlier, in the
//! connection, with a v0 UNSUPPORTED_VERSION response (KIP-511).

use kafka_protocol::messages::ApiVersionsResponse;

pub fn handle(_version: i16) -> ApiVersionsResponse {
    crate::protocol::api_versions_response(0)
}

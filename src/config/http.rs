//! `http.listener`: where the broker serves `/metrics`, `/healthz`,
//! `/readyz` (and, later, its console and JSON API).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::ConfigError;

/// `http.listener`: `http://HOST:PORT`, `https://HOST:PORT` (TLS with the
/// broker's `ssl.*` keystore, or `listener.name.http.ssl.*`), or empty to
/// serve nothing. The default, `http://127.0.0.1:9644`, is reachable from
/// the machine only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpListener {
    /// Empty: nothing is served.
    Disabled,
    /// `http://HOST:PORT`.
    Http(SocketAddr),
    /// `https://HOST:PORT`.
    Https(SocketAddr),
}

impl Default for HttpListener {
    fn default() -> Self {
        HttpListener::Http(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 9644))
    }
}

impl HttpListener {
    pub(super) fn parse(raw: &str) -> Result<HttpListener, ConfigError> {
        let raw = raw.trim();
        if raw.is_empty() {
            return Ok(HttpListener::Disabled);
        }
        let invalid = |reason: &str| ConfigError::InvalidValue {
            key: "http.listener".into(),
            value: raw.into(),
            reason: reason.into(),
        };
        let (tls, rest) = match raw.split_once("://") {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => (false, rest),
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => (true, rest),
            _ => return Err(invalid("expected http://HOST:PORT or https://HOST:PORT")),
        };
        let rest = rest.trim_end_matches('/');
        let (host, port) = rest
            .rsplit_once(':')
            .ok_or_else(|| invalid("the port is missing"))?;
        let port: u16 = port
            .parse()
            .map_err(|_| invalid("the port is not 0-65535"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let ip: IpAddr = match host {
            "" | "0.0.0.0" => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            "localhost" => IpAddr::V4(Ipv4Addr::LOCALHOST),
            other => other
                .parse()
                .map_err(|_| invalid("the host must be an IP address or localhost"))?,
        };
        let address = SocketAddr::new(ip, port);
        Ok(if tls {
            HttpListener::Https(address)
        } else {
            HttpListener::Http(address)
        })
    }

    /// The value as the key spells it.
    pub fn text(&self) -> String {
        match self {
            HttpListener::Disabled => String::new(),
            HttpListener::Http(address) => format!("http://{address}"),
            HttpListener::Https(address) => format!("https://{address}"),
        }
    }

    /// Where to bind, unless disabled.
    pub fn address(&self) -> Option<SocketAddr> {
        match self {
            HttpListener::Disabled => None,
            HttpListener::Http(address) | HttpListener::Https(address) => Some(*address),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listeners_parse_as_urls() {
        assert_eq!(HttpListener::parse("").unwrap(), HttpListener::Disabled);
        assert_eq!(
            HttpListener::parse("http://127.0.0.1:9644").unwrap(),
            HttpListener::default()
        );
        assert_eq!(
            HttpListener::parse("https://0.0.0.0:8443/").unwrap(),
            HttpListener::Https("0.0.0.0:8443".parse().unwrap())
        );
        assert_eq!(
            HttpListener::parse("http://[::1]:0").unwrap(),
            HttpListener::Http("[::1]:0".parse().unwrap())
        );
        for bad in [
            "127.0.0.1:9644",
            "ftp://x:1",
            "http://127.0.0.1",
            "http://host:1",
            "http://1.2.3.4:99999",
        ] {
            assert!(HttpListener::parse(bad).is_err(), "{bad}");
        }
    }
}

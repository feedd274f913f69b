//! Who is on the other end of a request. Behind a reverse proxy the peer is
//! the proxy; only a proxy listed in `CA_TRUSTED_PROXIES` is believed about
//! the client (`X-Forwarded-For`) and the scheme (`X-Forwarded-Proto`).
//! Anyone else's forwarding headers are ignored: they are the client's own
//! words and may be forged.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, Request};
use axum::http::HeaderMap;
use axum::middleware::Next;
use axum::response::Response;
use ipnet::IpNet;

/// The proxies whose forwarding headers are believed.
#[derive(Clone, Debug, Default)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// The networks of `CA_TRUSTED_PROXIES` (see `config::parse_networks`).
    pub fn new(networks: Vec<IpNet>) -> Self {
        Self(networks)
    }

    fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.0.iter().any(|net| net.contains(&ip))
    }
}

/// The client as far as it can be known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientAddr {
    pub ip: IpAddr,
    /// The client reached us over https (directly, or per a trusted proxy).
    pub https: bool,
}

/// The client of a request that arrived from `peer`: the peer itself, or —
/// when the peer is a trusted proxy — the nearest address in
/// `X-Forwarded-For` that is not a trusted proxy, and the proxy's
/// `X-Forwarded-Proto`.
pub fn resolve(peer: IpAddr, headers: &HeaderMap, trusted: &TrustedProxies) -> ClientAddr {
    let peer = canonical(peer);
    if !trusted.contains(peer) {
        return ClientAddr { ip: peer, https: false };
    }
    let forwarded: Vec<IpAddr> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .map(|entry| entry.parse::<IpAddr>().ok())
        .collect::<Option<Vec<_>>>()
        .unwrap_or_default();
    // Right to left: each trusted hop vouches for the one before it.
    let ip = forwarded.iter().rev().map(|ip| canonical(*ip)).find(|ip| !trusted.contains(*ip)).unwrap_or(peer);
    let https = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(',').next())
        .is_some_and(|p| p.trim().eq_ignore_ascii_case("https"));
    ClientAddr { ip, https }
}

/// `::ffff:a.b.c.d` is the IPv4 address a.b.c.d.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Puts the request's [`ClientAddr`] in its extensions, for the log line
/// and anything that limits by client.
pub async fn attach(trusted: TrustedProxies, mut request: Request, next: Next) -> Response {
    let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|c| c.0.ip());
    if let Some(peer) = peer {
        let client = resolve(peer, request.headers(), &trusted);
        request.extensions_mut().insert(client);
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    impl TrustedProxies {
        fn parse(raw: &str) -> Result<Self, String> {
            crate::config::parse_networks(raw).map(Self::new)
        }
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn an_untrusted_peers_forwarding_headers_are_ignored() {
        let trusted = TrustedProxies::parse("10.0.0.0/8").unwrap();
        let forged = headers(&[("x-forwarded-for", "203.0.113.9"), ("x-forwarded-proto", "https")]);
        assert_eq!(resolve(ip("198.51.100.4"), &forged, &trusted), ClientAddr { ip: ip("198.51.100.4"), https: false });
        let nobody = TrustedProxies::default();
        assert_eq!(resolve(ip("10.0.0.2"), &forged, &nobody).ip, ip("10.0.0.2"), "no list: nobody is believed");
    }

    #[test]
    fn a_trusted_proxy_names_the_nearest_untrusted_hop() {
        let trusted = TrustedProxies::parse("10.0.0.0/8, 127.0.0.1").unwrap();
        // The client put a forged entry first; the proxies appended the real ones.
        let chain = headers(&[("x-forwarded-for", "1.2.3.4, 203.0.113.7, 10.0.0.5"), ("x-forwarded-proto", "https")]);
        assert_eq!(resolve(ip("127.0.0.1"), &chain, &trusted), ClientAddr { ip: ip("203.0.113.7"), https: true });
        // Several header lines read as one list.
        let split = headers(&[("x-forwarded-for", "203.0.113.7"), ("x-forwarded-for", "10.0.0.5")]);
        assert_eq!(resolve(ip("::ffff:127.0.0.1"), &split, &trusted).ip, ip("203.0.113.7"));
    }

    #[test]
    fn a_malformed_or_missing_chain_falls_back_to_the_proxy() {
        let trusted = TrustedProxies::parse("127.0.0.1").unwrap();
        for bad in ["not-an-ip", "203.0.113.7, <script>", ""] {
            let h = headers(&[("x-forwarded-for", bad)]);
            assert_eq!(resolve(ip("127.0.0.1"), &h, &trusted).ip, ip("127.0.0.1"), "{bad:?}");
        }
        assert_eq!(
            resolve(ip("127.0.0.1"), &HeaderMap::new(), &trusted),
            ClientAddr { ip: ip("127.0.0.1"), https: false }
        );
    }

    #[test]
    fn the_list_takes_addresses_and_networks_and_refuses_anything_else() {
        assert!(TrustedProxies::parse("127.0.0.1, ::1, 10.0.0.0/8, fd00::/8").is_ok());
        assert!(TrustedProxies::parse("").unwrap().0.is_empty());
        assert!(TrustedProxies::parse("10.0.0.0/33").is_err());
        assert!(TrustedProxies::parse("proxy.internal").is_err());
    }
}

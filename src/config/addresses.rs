//! Addresses in the settings: whether a URL may carry secrets, whether a listening
//! address is loopback only, a trusted proxy's address or range.

/// Whether coe may send secrets or trust answers at `url`: https, or plain http to a
/// loopback address (a trial, a test).
pub(crate) fn https_or_loopback(url: &url::Url) -> bool {
    url.scheme() == "https"
        || (url.scheme() == "http"
            && url
                .host_str()
                .is_some_and(|h| listens_on_loopback(&format!("{h}:0"))))
}

/// Whether `listen` (`HOST:PORT`) names only loopback addresses: `127.x.x.x`, `::1`
/// or `localhost`. `0.0.0.0`, `::`, a host name or anything unreadable counts as
/// reachable from a network.
pub(crate) fn listens_on_loopback(listen: &str) -> bool {
    let host = listen
        .rsplit_once(':')
        .map_or(listen, |(host, _)| host)
        .trim_start_matches('[')
        .trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// An address or a CIDR range.
pub(crate) fn parse_proxy(text: &str) -> Option<ipnet::IpNet> {
    let text = text.trim();
    text.parse::<ipnet::IpNet>().ok().or_else(|| {
        text.parse::<std::net::IpAddr>()
            .ok()
            .map(ipnet::IpNet::from)
    })
}

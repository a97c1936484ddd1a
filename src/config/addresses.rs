//! Addresses in the settings: whether a URL may carry secrets, whether a listening
//! address is loopback only, a trusted proxy's address or range.

/// Whether `url`'s host is this host: a loopback address (IPv4-mapped too), the
/// unspecified address (which reaches this host) or `localhost`. A name that resolves
/// to this host is not seen here.
pub fn points_at_loopback(url: &str) -> bool {
    let Some(host) = url::Url::parse(url)
        .ok()
        .and_then(|u| u.host().map(|h| h.to_owned()))
    else {
        return false;
    };
    match host {
        url::Host::Domain(name) => {
            let name = name.trim_end_matches('.');
            name.eq_ignore_ascii_case("localhost")
                || name.to_ascii_lowercase().ends_with(".localhost")
        }
        url::Host::Ipv4(ip) => ip.is_loopback() || ip.is_unspecified(),
        url::Host::Ipv6(ip) => {
            ip.is_loopback()
                || ip.is_unspecified()
                || ip
                    .to_ipv4_mapped()
                    .is_some_and(|v4| v4.is_loopback() || v4.is_unspecified())
        }
    }
}

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

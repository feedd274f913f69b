//! Fetching a host's pages politely and safely (issue #45, "Fetching"):
//!
//! - the same address rules as tool hosts: a name resolving to a private,
//!   loopback or link-local address is never dialled (the client's
//!   resolver refuses it) and such an address written literally is refused
//!   before any connection, unless `CA_ALLOW_PRIVATE_TOOL_HOSTS`;
//! - robots.txt (RFC 9309) is read once per site per sync and obeyed for
//!   our agent token [`AGENT`], its `Crawl-delay` too (up to 10 s); a
//!   robots.txt that answers 4xx allows everything, one that cannot be read
//!   (5xx, unreachable) allows nothing;
//! - a page fetched before is asked for with `If-None-Match` and
//!   `If-Modified-Since`: a `304` costs no body;
//! - redirects are followed by hand, five at most, only within the site
//!   (the same host, `www.` or not, either scheme);
//! - a page larger than the cap is refused as it streams, whatever its
//!   `Content-Length` said;
//! - at most [`PER_SITE`] requests to one site at a time.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::header::{ACCEPT, ETAG, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED, LOCATION};
use tokio::sync::{Mutex, Semaphore};
use url::Url;

/// Our token in robots.txt (`User-agent: ContextAssistant`).
pub const AGENT: &str = "ContextAssistant";
/// Requests to one site at a time.
pub const PER_SITE: usize = 2;
/// Redirects followed for one page, at most.
const MAX_REDIRECTS: usize = 5;
/// The longest `Crawl-delay` obeyed; a longer one is read as this.
const MAX_CRAWL_DELAY: Duration = Duration::from_secs(10);
/// Bytes of robots.txt read (RFC 9309 asks for at least 500 KiB).
const MAX_ROBOTS_BYTES: u64 = 512 * 1024;

/// What a page was last served with: sent back to ask whether it changed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Validators {
    pub etag: Option<String>,
    pub last_modified: Option<String>,
}

/// A fetched page.
#[derive(Debug)]
pub enum Fetched {
    /// `304`: unchanged since the validators were given.
    NotModified,
    Page {
        /// Where it was found (after redirects).
        url: Url,
        bytes: Vec<u8>,
        content_type: Option<String>,
        validators: Validators,
    },
}

/// Why a page was not fetched; each is shown to the host on the page.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FetchError {
    #[error("refused by the site's robots.txt")]
    Robots,
    #[error("the site answered HTTP {0}")]
    Status(u16),
    #[error("larger than {0} bytes")]
    TooLarge(u64),
    #[error("on a private, loopback or link-local address")]
    Private,
    #[error("redirected to another site ({0})")]
    Offsite(String),
    #[error("redirected more than five times")]
    Redirects,
    #[error("unreachable: {0}")]
    Unreachable(String),
}

impl FetchError {
    /// Its code on the wire (`errors[].code` of a source's pages).
    pub fn code(&self) -> &'static str {
        match self {
            FetchError::Robots => "robots",
            FetchError::Status(_) => "http_status",
            FetchError::TooLarge(_) => "too_large",
            FetchError::Private => "private_address",
            FetchError::Offsite(_) => "redirect_offsite",
            FetchError::Redirects => "too_many_redirects",
            FetchError::Unreachable(_) => "unreachable",
        }
    }

    /// The HTTP status the site answered, if that is the failure.
    pub fn status(&self) -> Option<u16> {
        if let FetchError::Status(code) = self { Some(*code) } else { None }
    }

    /// Whether the page is gone (its content is removed, not kept).
    pub fn gone(&self) -> bool {
        matches!(self, FetchError::Status(404 | 410) | FetchError::Robots)
    }
}

/// What a site's robots.txt allows us.
enum Robots {
    All,
    Nothing,
    Rules(Box<texting_robots::Robot>),
}

/// A site's share of the fetching: its rules, its slots, its pace.
struct Site {
    robots: Robots,
    slots: Semaphore,
    delay: Duration,
    last: Mutex<Option<Instant>>,
}

/// One sync's fetcher: robots.txt is read once per site for the sync.
pub struct Fetcher {
    client: reqwest::Client,
    allow_private: bool,
    max_bytes: u64,
    sites: Mutex<HashMap<String, Arc<Site>>>,
}

impl Fetcher {
    pub fn new(client: reqwest::Client, allow_private: bool, max_bytes: u64) -> Self {
        Self { client, allow_private, max_bytes, sites: Mutex::default() }
    }

    /// Fetches `url` within the rules above; `known` are the validators
    /// of the copy kept, if any.
    pub async fn get(&self, url: &Url, known: Option<&Validators>) -> Result<Fetched, FetchError> {
        let site = self.site(url).await?;
        let _slot = site.slots.acquire().await.expect("never closed");
        self.pace(&site).await;
        let mut at = url.clone();
        for _ in 0..=MAX_REDIRECTS {
            let allowed = match &site.robots {
                Robots::All => true,
                Robots::Nothing => false,
                Robots::Rules(robot) => robot.allowed(at.as_str()),
            };
            if !allowed {
                return Err(FetchError::Robots);
            }
            let mut request = self.request(&at).header(
                ACCEPT,
                "text/html,application/xhtml+xml,text/markdown;q=0.9,text/plain;q=0.9,application/pdf;q=0.8,*/*;q=0.1",
            );
            if let Some(known) = known {
                if let Some(etag) = &known.etag {
                    request = request.header(IF_NONE_MATCH, etag);
                }
                if let Some(modified) = &known.last_modified {
                    request = request.header(IF_MODIFIED_SINCE, modified);
                }
            }
            let response = request.send().await.map_err(unreachable)?;
            let status = response.status();
            if status == reqwest::StatusCode::NOT_MODIFIED && known.is_some() {
                return Ok(Fetched::NotModified);
            }
            if status.is_redirection() {
                let next = response
                    .headers()
                    .get(LOCATION)
                    .and_then(|l| l.to_str().ok())
                    .and_then(|l| at.join(l).ok())
                    .ok_or(FetchError::Status(status.as_u16()))?;
                if !same_site(url, &next) {
                    return Err(FetchError::Offsite(next.host_str().unwrap_or_default().to_owned()));
                }
                self.check_address(&next)?;
                at = next;
                continue;
            }
            if !status.is_success() {
                return Err(FetchError::Status(status.as_u16()));
            }
            let header = |name| {
                response
                    .headers()
                    .get(name)
                    .and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok())
                    .map(str::to_owned)
            };
            let validators = Validators { etag: header(ETAG), last_modified: header(LAST_MODIFIED) };
            let content_type = header(reqwest::header::CONTENT_TYPE);
            let bytes = read_capped(response, self.max_bytes).await?;
            return Ok(Fetched::Page { url: at, bytes, content_type, validators });
        }
        Err(FetchError::Redirects)
    }

    fn request(&self, url: &Url) -> reqwest::RequestBuilder {
        self.client.get(url.clone())
    }

    /// Refuses a literal private address (a name is refused by the
    /// client's resolver), unless private hosts are allowed.
    pub fn check_address(&self, url: &Url) -> Result<(), FetchError> {
        if self.allow_private {
            return Ok(());
        }
        let ip = match url.host() {
            Some(url::Host::Ipv4(ip)) => std::net::IpAddr::V4(ip),
            Some(url::Host::Ipv6(ip)) => std::net::IpAddr::V6(ip),
            Some(url::Host::Domain(d)) if d.eq_ignore_ascii_case("localhost") || d.ends_with(".localhost") => {
                return Err(FetchError::Private);
            }
            _ => return Ok(()),
        };
        if crate::host::is_private(ip) { Err(FetchError::Private) } else { Ok(()) }
    }

    /// The site of `url`: its robots.txt read the first time.
    async fn site(&self, url: &Url) -> Result<Arc<Site>, FetchError> {
        self.check_address(url)?;
        let origin = url.origin().ascii_serialization();
        let mut sites = self.sites.lock().await;
        if let Some(site) = sites.get(&origin) {
            return Ok(site.clone());
        }
        let robots = self.robots(url).await;
        let delay = match &robots {
            Robots::Rules(robot) => robot
                .delay
                .filter(|d| d.is_finite() && *d > 0.0)
                .map_or(Duration::ZERO, |d| Duration::from_secs_f32(d).min(MAX_CRAWL_DELAY)),
            _ => Duration::ZERO,
        };
        let slots = if delay.is_zero() { PER_SITE } else { 1 };
        let site = Arc::new(Site { robots, slots: Semaphore::new(slots), delay, last: Mutex::default() });
        sites.insert(origin, site.clone());
        Ok(site)
    }

    /// Reads the site's robots.txt (following redirects within the site).
    async fn robots(&self, url: &Url) -> Robots {
        let Ok(mut at) = url.join("/robots.txt") else { return Robots::Nothing };
        for _ in 0..=MAX_REDIRECTS {
            let response = match self.request(&at).send().await {
                Ok(response) => response,
                Err(_) => return Robots::Nothing,
            };
            let status = response.status();
            if status.is_redirection() {
                match response.headers().get(LOCATION).and_then(|l| l.to_str().ok()).and_then(|l| at.join(l).ok()) {
                    Some(next) if same_site(url, &next) && self.check_address(&next).is_ok() => {
                        at = next;
                        continue;
                    }
                    _ => return Robots::All,
                }
            }
            if status.is_client_error() {
                return Robots::All;
            }
            if !status.is_success() {
                return Robots::Nothing;
            }
            return match read_capped(response, MAX_ROBOTS_BYTES).await {
                Ok(bytes) => texting_robots::Robot::new(AGENT, &bytes)
                    .map_or(Robots::All, |robot| Robots::Rules(Box::new(robot))),
                Err(FetchError::TooLarge(_)) => Robots::All,
                Err(_) => Robots::Nothing,
            };
        }
        Robots::All
    }

    /// Waits out the site's crawl delay since its last request.
    async fn pace(&self, site: &Site) {
        if site.delay.is_zero() {
            return;
        }
        let mut last = site.last.lock().await;
        if let Some(at) = *last {
            let since = at.elapsed();
            if since < site.delay {
                tokio::time::sleep(site.delay - since).await;
            }
        }
        *last = Some(Instant::now());
    }
}

fn unreachable(error: reqwest::Error) -> FetchError {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        text = format!("{text}: {cause}");
        source = cause.source();
    }
    if text.contains(crate::host::PRIVATE_REFUSED) {
        return FetchError::Private;
    }
    FetchError::Unreachable(if error.is_timeout() {
        "timed out".into()
    } else if error.is_connect() {
        "cannot connect".into()
    } else {
        "the connection failed".into()
    })
}

/// A response's body, refused as soon as it passes `max` bytes.
async fn read_capped(mut response: reqwest::Response, max: u64) -> Result<Vec<u8>, FetchError> {
    if response.content_length().is_some_and(|length| length > max) {
        return Err(FetchError::TooLarge(max));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(unreachable)? {
        if bytes.len() as u64 + chunk.len() as u64 > max {
            return Err(FetchError::TooLarge(max));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// Whether `next` is on the same site as `first`: the same host (with or
/// without `www.`) and port, by http or https.
pub fn same_site(first: &Url, next: &Url) -> bool {
    let bare = |u: &Url| u.host_str().map(|h| h.trim_start_matches("www.").to_ascii_lowercase());
    matches!(next.scheme(), "http" | "https")
        && bare(first).is_some()
        && bare(first) == bare(next)
        && (first.port() == next.port() || first.scheme() != next.scheme())
}

/// The text of a fetched body: by the charset its `Content-Type` names,
/// else its byte-order mark, else a `<meta charset>` near its start,
/// else UTF-8; bytes that do not decode become U+FFFD, never an error.
pub fn decode(bytes: &[u8], content_type: Option<&str>) -> String {
    let label = content_type
        .and_then(|t| {
            t.split(';').find_map(|p| p.trim().strip_prefix("charset=").map(|c| c.trim_matches('"').to_owned()))
        })
        .or_else(|| meta_charset(&bytes[..bytes.len().min(1024)]));
    let encoding = label.and_then(|l| encoding_rs::Encoding::for_label(l.as_bytes())).unwrap_or(encoding_rs::UTF_8);
    let (text, _, _) = encoding.decode(bytes);
    text.into_owned()
}

/// `charset=` in the first bytes of an HTML page (`<meta charset="…">` or
/// its `http-equiv` form).
fn meta_charset(head: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(head).to_ascii_lowercase();
    let at = head.find("charset=")? + "charset=".len();
    let value: String = head[at..]
        .trim_start_matches(['"', '\''])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    (!value.is_empty()).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirect_stays_within_the_site() {
        let u = |s: &str| Url::parse(s).unwrap();
        assert!(same_site(&u("https://help.example.com/a"), &u("https://help.example.com/b")));
        assert!(same_site(&u("http://example.com/a"), &u("https://www.example.com/a")));
        assert!(!same_site(&u("https://example.com/a"), &u("https://evil.example/a")));
        assert!(!same_site(&u("https://example.com/a"), &u("https://help.example.com/a")));
        assert!(!same_site(&u("http://127.0.0.1:8000/a"), &u("http://127.0.0.1:9000/a")));
        assert!(!same_site(&u("https://example.com/a"), &u("file:///etc/passwd")));
    }

    #[test]
    fn text_is_decoded_by_its_declared_charset_and_never_fails() {
        assert_eq!(decode(b"caf\xe9", Some("text/html; charset=ISO-8859-1")), "café");
        assert_eq!(decode(b"<meta charset=\"windows-1252\">caf\xe9", None), "<meta charset=\"windows-1252\">café");
        assert_eq!(decode(b"ok \xff\xfe broken", Some("text/html")), "ok \u{fffd}\u{fffd} broken");
        assert_eq!(decode("déjà".as_bytes(), None), "déjà");
    }
}

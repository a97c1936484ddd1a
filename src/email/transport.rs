//! How emails leave: an SMTP server (real use), `.eml` files in a folder (the zero
//! set-up default) or memory (unit tests). Each failure is sorted into transient
//! (retry later) or permanent (a person must look).

use lettre::transport::file::FileTransport;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::transport::smtp::SmtpTransport;
use lettre::transport::stub::StubTransport;
use lettre::{Message, Transport as _};

use crate::config::secret::mask_url_password;
use crate::config::{Settings, SMTP_TIMEOUT};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// Worth retrying a few times: the server answered 4xx.
    #[error("{0}")]
    Transient(String),
    /// Worth retrying until it works: no conversation could start (connection refused
    /// or timed out, DNS, TLS handshake). Nothing can have been delivered.
    #[error("{0}")]
    Unreachable(String),
    /// Not worth retrying: the server answered 5xx, or the address is invalid.
    #[error("{0}")]
    Permanent(String),
}

pub enum Transport {
    Smtp {
        transport: SmtpTransport,
        url: String,
    },
    File(FileTransport, std::path::PathBuf),
    Memory(StubTransport),
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

/// The URL's TLS mode, with `ca` trusted besides the public roots.
fn tls_trusting(url: &str, ca: &std::path::Path) -> Result<Tls, String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("smtp.url: {e}"))?;
    let host = parsed.host_str().unwrap_or_default().to_owned();
    let pem = std::fs::read(ca).map_err(|e| format!("smtp.ca_file {}: {e}", ca.display()))?;
    let certificate = Certificate::from_pem(&pem)
        .map_err(|e| format!("smtp.ca_file {}: not a PEM certificate: {e}", ca.display()))?;
    let parameters = TlsParameters::builder(host)
        .add_root_certificate(certificate)
        .build()
        .map_err(|e| format!("smtp.ca_file {}: {e}", ca.display()))?;
    let mode = parsed
        .query_pairs()
        .find(|(k, _)| k == "tls")
        .map(|(_, v)| v.into_owned());
    Ok(match (parsed.scheme(), mode.as_deref()) {
        ("smtps", _) => Tls::Wrapper(parameters),
        (_, Some("opportunistic")) => Tls::Opportunistic(parameters),
        _ => Tls::Required(parameters),
    })
}

/// Sorts an SMTP failure. Only a conversation that never started is `Unreachable`
/// (waits without limit); one that broke after it started may have delivered the
/// message already, so it is `Transient` and uses an attempt up, which bounds resends.
fn classify(e: &lettre::transport::smtp::Error) -> SendError {
    let message = e.to_string();
    if e.is_permanent() {
        SendError::Permanent(message)
    } else if e.is_transient() {
        SendError::Transient(message)
    } else if e.is_tls() || message.starts_with("Connection error") {
        // lettre reports connecting, resolving and the TLS handshake as "Connection error".
        SendError::Unreachable(message)
    } else {
        SendError::Transient(message)
    }
}

impl Transport {
    /// The transport the settings name: `smtp.url` when set, else `.eml` files in
    /// `email.file_dir` (created when missing).
    pub fn from_settings(settings: &Settings) -> Result<Transport, String> {
        match &settings.smtp.url {
            Some(url) => {
                let masked = mask_url_password(url);
                let mut builder = SmtpTransport::from_url(url)
                    .map_err(|e| format!("smtp.url {masked}: {e}"))?
                    .timeout(Some(SMTP_TIMEOUT));
                if let Some(ca) = &settings.smtp.ca_file {
                    builder = builder.tls(tls_trusting(url, ca)?);
                }
                let transport = builder.build();
                Ok(Transport::Smtp {
                    transport,
                    url: mask_url_password(url),
                })
            }
            None => {
                let dir = &settings.email.file_dir;
                std::fs::create_dir_all(dir).map_err(|e| {
                    format!("email.file_dir {}: cannot create it: {e}", dir.display())
                })?;
                Ok(Transport::File(FileTransport::new(dir), dir.clone()))
            }
        }
    }

    /// Keeps every message in memory; `sent` lists them.
    pub fn memory() -> Transport {
        Transport::Memory(StubTransport::new_ok())
    }

    /// The messages a memory transport has taken, as raw RFC 5322 text.
    pub fn sent(&self) -> Vec<String> {
        match self {
            Transport::Memory(stub) => stub.messages().into_iter().map(|(_, m)| m).collect(),
            _ => Vec::new(),
        }
    }

    pub fn is_smtp(&self) -> bool {
        matches!(self, Transport::Smtp { .. })
    }

    /// For logs: the SMTP URL (password masked) or the folder.
    pub fn describe(&self) -> String {
        match self {
            Transport::Smtp { url, .. } => url.clone(),
            Transport::File(_, dir) => format!("files in {}", dir.display()),
            Transport::Memory(_) => "memory".into(),
        }
    }

    /// Sends one message; blocks for at most the SMTP timeout.
    pub fn send(&self, message: &Message) -> Result<(), SendError> {
        match self {
            Transport::Smtp { transport, .. } => transport
                .send(message)
                .map(|_| ())
                .map_err(|e| classify(&e)),
            Transport::File(transport, _) => transport
                .send(message)
                .map(|_| ())
                .map_err(|e| SendError::Transient(e.to_string())),
            Transport::Memory(stub) => stub
                .send(message)
                .map_err(|e| SendError::Transient(e.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_that_refuses_connections_is_unreachable() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let settings = Settings {
            smtp: crate::config::SmtpSettings {
                url: Some(format!("smtp://127.0.0.1:{port}")),
                ca_file: None,
            },
            ..Settings::default()
        };
        let transport = Transport::from_settings(&settings).expect("transport");
        let message = Message::builder()
            .from("coe <coe@localhost>".parse().unwrap())
            .to("ana@example.com".parse().unwrap())
            .subject("s")
            .body("b".to_owned())
            .unwrap();
        match transport.send(&message) {
            Err(SendError::Unreachable(e)) => assert!(e.starts_with("Connection error"), "{e}"),
            other => panic!("expected unreachable, got {other:?}"),
        }
    }
}

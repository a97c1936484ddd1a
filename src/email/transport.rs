//! How emails leave: an SMTP server (real use), `.eml` files in a folder (the zero
//! set-up default) or memory (unit tests). Each failure is sorted into transient
//! (retry later) or permanent (a person must look).

use std::time::Duration;

use lettre::transport::file::FileTransport;
use lettre::transport::smtp::client::{Certificate, Tls, TlsParameters};
use lettre::transport::smtp::SmtpTransport;
use lettre::transport::stub::StubTransport;
use lettre::{Message, Transport as _};

use crate::config::{mask_url_password, Settings};

/// How long one SMTP conversation may take before it counts as failed (transiently).
const SMTP_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// Worth retrying a few times: the server answered 4xx.
    #[error("{0}")]
    Transient(String),
    /// Worth retrying until it works: no answer (connection refused, timeout, TLS).
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
            Transport::Smtp { transport, .. } => transport.send(message).map(|_| ()).map_err(|e| {
                if e.is_permanent() {
                    SendError::Permanent(e.to_string())
                } else if e.is_transient() {
                    SendError::Transient(e.to_string())
                } else {
                    SendError::Unreachable(e.to_string())
                }
            }),
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

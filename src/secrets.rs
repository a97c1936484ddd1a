//! Secrets coe keeps in its database (the tokens of the connections admins add in the
//! pages), sealed with a key the database never holds: ChaCha20-Poly1305, a fresh
//! random nonce per seal. A sealed value names the key that sealed it (the first 8
//! hex digits of its SHA-256), so that a rotated key still opens what the one before
//! it sealed (`previous_secret_keys`) and a wrong key is a clear error, not garbage.
//!
//! The key comes from `secret_key` (`COE_SECRET_KEY`: 32 bytes, base64), else from the
//! file `secret_key_file`, else — for a SQLite file — from `coe-secret.key` beside
//! the database, made on first start (readable by its owner alone). PostgreSQL's
//! replicas must share one key: there coe makes none.

use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use chacha20poly1305::aead::{Aead, AeadCore, KeyInit, OsRng};
use chacha20poly1305::{ChaCha20Poly1305, Key, Nonce};
use sha2::{Digest, Sha256};

use crate::config::Settings;

/// What a sealed value starts with: the scheme, then the key's id.
const SCHEME: &str = "v1";
/// A nonce's bytes (96 bits).
const NONCE_BYTES: usize = 12;

/// Why a key could not be had, or a sealed value not opened.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error(
        "{0}: a secret key is 32 bytes written in base64 (make one with `openssl rand -base64 32`)"
    )]
    Malformed(String),
    #[error("the secret key file {path}: {source}")]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The key file coe makes beside a SQLite database could not be made or read.
    #[error("the secret key file {path} beside the database: {source}")]
    NotMade {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "a secret was sealed with key {0}, which is neither secret_key nor one of \
         previous_secret_keys: start coe with the key it was sealed with (or list it in \
         previous_secret_keys)"
    )]
    UnknownKey(String),
    #[error("a sealed secret is damaged or was not sealed by coe")]
    Damaged,
    #[error(
        "no secret key: set secret_key (COE_SECRET_KEY), the same on every replica, to keep \
         secrets in the database"
    )]
    NoKey,
}

/// One key and its id.
#[derive(Clone)]
struct SecretKey {
    id: String,
    cipher: ChaCha20Poly1305,
}

impl SecretKey {
    fn from_base64(text: &str, what: &str) -> Result<SecretKey, KeyError> {
        let bytes = BASE64
            .decode(text.trim())
            .map_err(|_| KeyError::Malformed(what.to_owned()))?;
        if bytes.len() != 32 {
            return Err(KeyError::Malformed(what.to_owned()));
        }
        let id = hex::encode(&Sha256::digest(&bytes)[..4]);
        Ok(SecretKey {
            id,
            cipher: ChaCha20Poly1305::new(Key::from_slice(&bytes)),
        })
    }
}

/// The key that seals, and the keys before it that still open.
#[derive(Clone)]
pub struct Keyring {
    current: SecretKey,
    previous: Vec<SecretKey>,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Keyring {{ key: {}, previous: {} }}",
            self.current.id,
            self.previous.len()
        )
    }
}

impl Keyring {
    /// The keys `settings` name (see the module's word on where the key comes from);
    /// `None` where no key is set and coe makes none (PostgreSQL, a database in
    /// memory).
    pub fn load(settings: &Settings) -> Result<Option<Keyring>, KeyError> {
        let previous = settings
            .previous_secret_keys
            .iter()
            .map(|k| SecretKey::from_base64(k.expose(), "previous_secret_keys"))
            .collect::<Result<Vec<_>, _>>()?;
        let current = if let Some(key) = &settings.secret_key {
            SecretKey::from_base64(key.expose(), "secret_key")?
        } else if let Some(path) = &settings.secret_key_file {
            // The operator's file is read, never made: a typo or a store not mounted yet
            // must not become a new key (on PostgreSQL, one per replica).
            let text = std::fs::read_to_string(path).map_err(|source| KeyError::File {
                path: path.clone(),
                source,
            })?;
            SecretKey::from_base64(&text, "secret_key_file")?
        } else if let Some(path) = beside_the_database(settings) {
            read_or_make(&path)?
        } else {
            return Ok(None);
        };
        Ok(Some(Keyring { current, previous }))
    }

    /// What `coe check-config` says of the keys: those set are keys, and the
    /// operator's key file reads as one; nothing is made.
    pub fn check(settings: &Settings) -> Result<(), KeyError> {
        match (&settings.secret_key, &settings.secret_key_file) {
            (Some(_), _) | (None, Some(_)) => Keyring::load(settings).map(|_| ()),
            (None, None) => settings.previous_secret_keys.iter().try_for_each(|k| {
                SecretKey::from_base64(k.expose(), "previous_secret_keys").map(|_| ())
            }),
        }
    }

    /// The id of the key that seals.
    pub fn key_id(&self) -> &str {
        &self.current.id
    }

    /// `plain`, sealed: `v1:<key id>:<base64 of nonce and ciphertext>`.
    pub fn seal(&self, plain: &str) -> String {
        let nonce = ChaCha20Poly1305::generate_nonce(&mut OsRng);
        let sealed = self
            .current
            .cipher
            .encrypt(&nonce, plain.as_bytes())
            .expect("sealing in memory cannot fail");
        let mut bytes = nonce.to_vec();
        bytes.extend(sealed);
        format!("{SCHEME}:{}:{}", self.current.id, BASE64.encode(bytes))
    }

    /// What `sealed` holds, opened with the key it names.
    pub fn open(&self, sealed: &str) -> Result<String, KeyError> {
        let mut parts = sealed.splitn(3, ':');
        let (Some(SCHEME), Some(id), Some(body)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(KeyError::Damaged);
        };
        let key = std::iter::once(&self.current)
            .chain(&self.previous)
            .find(|k| k.id == id)
            .ok_or_else(|| KeyError::UnknownKey(id.to_owned()))?;
        let bytes = BASE64.decode(body).map_err(|_| KeyError::Damaged)?;
        if bytes.len() < NONCE_BYTES {
            return Err(KeyError::Damaged);
        }
        let (nonce, ciphertext) = bytes.split_at(NONCE_BYTES);
        let plain = key
            .cipher
            .decrypt(Nonce::from_slice(nonce), ciphertext)
            .map_err(|_| KeyError::Damaged)?;
        String::from_utf8(plain).map_err(|_| KeyError::Damaged)
    }

    /// Whether `sealed` was sealed with a key before the current one (saving it again
    /// seals it with the current key).
    pub fn is_stale(&self, sealed: &str) -> bool {
        sealed.split(':').nth(1) != Some(self.current.id.as_str())
    }
}

/// `coe-secret.key` beside a SQLite file (however its URL is written); none for
/// PostgreSQL or a database in memory.
fn beside_the_database(settings: &Settings) -> Option<PathBuf> {
    let crate::config::database::DatabaseUrl::Sqlite(file) = settings.database_url() else {
        return None;
    };
    let name = file.to_string_lossy();
    if name.is_empty() || name.contains(":memory:") {
        return None;
    }
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty());
    Some(dir.unwrap_or(Path::new(".")).join("coe-secret.key"))
}

/// The key in `path`, else a new random one put there whole (owner-only): written to
/// a file of its own, synced, then linked under the name — two processes starting at
/// once, or a crash halfway, never leave a half-written key; the one that loses the
/// race reads the winner's.
fn read_or_make(path: &Path) -> Result<SecretKey, KeyError> {
    let not_made = |source| KeyError::NotMade {
        path: path.to_owned(),
        source,
    };
    let read = |path: &Path| -> Result<SecretKey, KeyError> {
        let text = std::fs::read_to_string(path).map_err(not_made)?;
        warn_if_others_read(path);
        SecretKey::from_base64(&text, &path.display().to_string())
    };
    if path.exists() {
        return read(path);
    }
    let key = BASE64.encode(ChaCha20Poly1305::generate_key(&mut OsRng));
    let dir = path.parent().unwrap_or(Path::new("."));
    let draft = dir.join(format!(".coe-secret.key.{}", std::process::id()));
    write_owner_only(&draft, &format!("{key}\n")).map_err(not_made)?;
    let linked = std::fs::hard_link(&draft, path);
    let _ = std::fs::remove_file(&draft);
    match linked {
        Ok(()) => {
            if let Ok(folder) = std::fs::File::open(dir) {
                let _ = folder.sync_all();
            }
            tracing::info!(file = %path.display(), "made the key that seals the secrets coe keeps; back it up apart from the database");
            SecretKey::from_base64(&key, &path.display().to_string())
        }
        // Another process made it meanwhile: its key is the one.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read(path),
        Err(e) => Err(not_made(e)),
    }
}

#[cfg(unix)]
fn write_owner_only(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

#[cfg(not(unix))]
fn write_owner_only(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::write(path, text)
}

/// A key file others may read is said at start (the key opens every secret).
fn warn_if_others_read(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(meta) = std::fs::metadata(path) {
            if meta.permissions().mode() & 0o077 != 0 {
                tracing::warn!(file = %path.display(), "the secret key file can be read by others than its owner: chmod 600 it");
            }
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::secret::Secret;

    fn key() -> String {
        BASE64.encode([7u8; 32])
    }

    fn with_key(key: &str) -> Settings {
        Settings {
            secret_key: Some(Secret::from(key)),
            ..Settings::default()
        }
    }

    #[test]
    fn a_sealed_secret_opens_with_its_key_and_shows_nothing_of_itself() {
        let ring = Keyring::load(&with_key(&key())).unwrap().unwrap();
        let sealed = ring.seal("xoxb-1234-secret");
        assert!(
            !sealed.contains("xoxb") && sealed.starts_with("v1:"),
            "{sealed}"
        );
        assert_ne!(
            sealed,
            ring.seal("xoxb-1234-secret"),
            "a fresh nonce each time"
        );
        assert_eq!(ring.open(&sealed).unwrap(), "xoxb-1234-secret");
        // A changed byte is refused, not opened to garbage.
        let mut damaged = sealed.clone();
        damaged.pop();
        damaged.push(if sealed.ends_with('A') { 'B' } else { 'A' });
        assert!(matches!(ring.open(&damaged), Err(KeyError::Damaged)));
        assert!(matches!(ring.open("plain text"), Err(KeyError::Damaged)));
    }

    #[test]
    fn a_rotated_key_still_opens_what_the_one_before_sealed() {
        let old = Keyring::load(&with_key(&key())).unwrap().unwrap();
        let sealed = old.seal("lin_api_abc");
        let new_key = BASE64.encode([9u8; 32]);
        // Without the old key: a clear error naming the key it needs.
        let new = Keyring::load(&with_key(&new_key)).unwrap().unwrap();
        match new.open(&sealed) {
            Err(KeyError::UnknownKey(id)) => assert_eq!(id, old.key_id()),
            other => panic!("{other:?}"),
        }
        let mut settings = with_key(&new_key);
        settings.previous_secret_keys = vec![Secret::from(key().as_str())];
        let rotated = Keyring::load(&settings).unwrap().unwrap();
        assert_eq!(rotated.open(&sealed).unwrap(), "lin_api_abc");
        assert!(rotated.is_stale(&sealed));
        assert!(!rotated.is_stale(&rotated.seal("x")));
    }

    #[test]
    fn the_operator_s_key_file_is_read_and_never_made() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("not-mounted-yet.key");
        let settings = Settings {
            secret_key_file: Some(path.clone()),
            ..Settings::default()
        };
        assert!(matches!(
            Keyring::load(&settings),
            Err(KeyError::File { .. })
        ));
        assert!(!path.exists(), "no key made in its place");
        std::fs::write(&path, format!("{}\n", key())).unwrap();
        let ring = Keyring::load(&settings).unwrap().unwrap();
        let from_setting = Keyring::load(&with_key(&key())).unwrap().unwrap();
        assert_eq!(ring.key_id(), from_setting.key_id());
    }

    #[test]
    fn a_malformed_key_is_refused_by_its_setting() {
        let e = Keyring::load(&with_key("too short")).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("secret_key: a secret key is 32 bytes"),
            "{e}"
        );
    }

    #[test]
    fn a_sqlite_file_gets_its_key_file_once_and_postgres_none() {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = Settings::default();
        settings.database.url = format!("sqlite://{}", dir.path().join("coe.db").display());
        let first = Keyring::load(&settings).unwrap().unwrap();
        let path = dir.path().join("coe-secret.key");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let again = Keyring::load(&settings).unwrap().unwrap();
        assert_eq!(
            first.key_id(),
            again.key_id(),
            "the same key on the next start"
        );
        assert_eq!(again.open(&first.seal("s")).unwrap(), "s");
        // A bare path is SQLite too.
        let bare = tempfile::tempdir().unwrap();
        let mut plain = Settings::default();
        plain.database.url = bare.path().join("coe.db").display().to_string();
        assert!(Keyring::load(&plain).unwrap().is_some());
        assert!(bare.path().join("coe-secret.key").exists());
        settings.database.url = "postgres://coe@localhost/coe".into();
        assert!(Keyring::load(&settings).unwrap().is_none());
        settings.database.url = "sqlite://:memory:".into();
        assert!(Keyring::load(&settings).unwrap().is_none());
    }
}

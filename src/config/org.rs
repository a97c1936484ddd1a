//! The organisation as coe knows it (`[org]`): its time zone, and how the notices
//! published for its customers are headed (name, logo) and listed (the feed).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct OrgSettings {
    /// The organisation's time zone (IANA name): due dates end at midnight there.
    pub timezone: String,
    /// The organisation's name as customers know it: the heading of the summaries
    /// published for them. Unset, they are headed by the title alone.
    pub name: Option<String>,
    /// Its logo (PNG, JPEG, WebP or SVG, at most 256 KiB) on those summaries, served
    /// at `/summaries/logo`.
    pub logo_file: Option<PathBuf>,
    /// Lists the notices customers can read now in a public Atom feed
    /// (`/summaries/feed.atom`). Off by default: anyone who has one notice's address
    /// would find the others there.
    pub notice_feed: bool,
}

impl Default for OrgSettings {
    fn default() -> Self {
        OrgSettings {
            timezone: "UTC".into(),
            name: None,
            logo_file: None,
            notice_feed: false,
        }
    }
}

/// Largest logo file (`org.logo_file`).
pub const MAX_LOGO_BYTES: u64 = 256 * 1024;

impl OrgSettings {
    /// The logo's media type by its file's extension, if it is one coe serves.
    pub fn logo_type(&self) -> Option<&'static str> {
        let extension = self.logo_file.as_ref()?.extension()?.to_str()?;
        match extension.to_ascii_lowercase().as_str() {
            "png" => Some("image/png"),
            "jpg" | "jpeg" => Some("image/jpeg"),
            "webp" => Some("image/webp"),
            "svg" => Some("image/svg+xml"),
            _ => None,
        }
    }
}

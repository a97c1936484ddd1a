//! Grafana unified alerting webhook: Alertmanager's shape plus Grafana's extras.

use super::alertmanager::{self, Payload};
use super::Parsed;
use crate::domain::SeverityMap;
use crate::json::{self, JsonError};

pub fn parse(body: &[u8], severities: &SeverityMap) -> Result<Parsed, JsonError> {
    let payload: Payload = json::parse(body)?;
    Ok(Parsed {
        events: alertmanager::events(payload, "grafana", &severities.grafana, severities.default)?,
        ..Parsed::default()
    })
}

//! AWS CloudWatch alarms through an SNS HTTP(S) subscription. SNS posts JSON as
//! `text/plain`; the alarm itself is a JSON document inside the `Message` string.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::common::{meaningful, required_time};
use super::Parsed;
use crate::domain::event::web_links;
use crate::domain::{EventKind, EventStatus, FailureEvent, SeverityMap};
use crate::json::{self, JsonError};

#[derive(Debug, Deserialize)]
struct Envelope {
    #[serde(rename = "Type")]
    kind: String,
    #[serde(rename = "MessageId")]
    message_id: String,
    #[serde(rename = "Message", default)]
    message: Option<String>,
    #[serde(rename = "SubscribeURL", default)]
    subscribe_url: Option<String>,
    #[serde(rename = "TopicArn", default)]
    topic_arn: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Alarm {
    #[serde(rename = "AlarmName")]
    name: String,
    #[serde(rename = "AlarmDescription", default)]
    description: Option<String>,
    #[serde(rename = "AWSAccountId", default)]
    account: Option<String>,
    #[serde(rename = "NewStateValue")]
    new_state: String,
    #[serde(rename = "NewStateReason", default)]
    reason: Option<String>,
    #[serde(rename = "StateChangeTime")]
    state_change_time: String,
    #[serde(rename = "Region", default)]
    region: Option<String>,
    #[serde(rename = "AlarmArn", default)]
    arn: Option<String>,
    #[serde(rename = "OldStateValue", default)]
    old_state: Option<String>,
    #[serde(rename = "Trigger", default)]
    trigger: Value,
}

pub fn parse(body: &[u8], severities: &SeverityMap) -> Result<Parsed, JsonError> {
    let envelope: Envelope = json::parse(body)?;
    match envelope.kind.as_str() {
        "Notification" => {}
        "SubscriptionConfirmation" => {
            let url = envelope.subscribe_url.ok_or_else(|| {
                JsonError::field("SubscribeURL", "is required in a SubscriptionConfirmation")
            })?;
            return Ok(Parsed {
                delivery_id: Some(envelope.message_id),
                confirm_subscription: Some(url),
                ignored: Some("SNS subscription confirmation".into()),
                ..Parsed::default()
            });
        }
        other => {
            return Ok(Parsed {
                delivery_id: Some(envelope.message_id),
                ..Parsed::ignored(format!("SNS message type {other} carries no alarm"))
            })
        }
    }
    let message = envelope
        .message
        .ok_or_else(|| JsonError::field("Message", "is required in a Notification"))?;
    let alarm: Alarm = json::parse(message.as_bytes()).map_err(|e| match e {
        JsonError::Malformed { message, .. } => JsonError::field(
            "Message",
            format!("must hold a CloudWatch alarm as JSON ({message})"),
        ),
        field => field.within("Message"),
    })?;
    let (kind, status) = match alarm.new_state.as_str() {
        "ALARM" => (EventKind::Fired, EventStatus::Firing),
        "OK" => (EventKind::Resolved, EventStatus::Resolved),
        other => {
            return Ok(Parsed {
                delivery_id: Some(envelope.message_id),
                ..Parsed::ignored(format!("CloudWatch state {other} is neither ALARM nor OK"))
            })
        }
    };
    let changed_at = required_time(&alarm.state_change_time, "Message.StateChangeTime")?;
    let severity =
        SeverityMap::lookup(&severities.cloudwatch, &alarm.new_state).unwrap_or(severities.default);
    let key = meaningful(alarm.arn.as_ref())
        .unwrap_or_else(|| format!("{}:{}", alarm.account.as_deref().unwrap_or("-"), alarm.name));
    let text = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
    let mut labels = BTreeMap::new();
    for (name, value) in [
        ("alarm_name", Some(alarm.name.clone())),
        ("account", alarm.account.clone()),
        ("region", alarm.region.clone()),
        ("old_state", alarm.old_state.clone()),
        ("new_state", Some(alarm.new_state.clone())),
        ("metric", text(&alarm.trigger["MetricName"])),
        ("namespace", text(&alarm.trigger["Namespace"])),
        ("topic_arn", envelope.topic_arn.clone()),
    ] {
        if let Some(v) = value.filter(|v| !v.is_empty()) {
            labels.insert(name.to_owned(), v);
        }
    }
    if let Some(dimensions) = alarm.trigger["Dimensions"].as_array() {
        for d in dimensions {
            if let (Some(n), Some(v)) = (text(&d["name"]), text(&d["value"])) {
                labels.insert(format!("dimension.{n}"), v);
            }
        }
    }
    let console = console_link(alarm.arn.as_deref(), &alarm.name);
    Ok(Parsed {
        delivery_id: Some(envelope.message_id),
        events: vec![FailureEvent {
            source: "cloudwatch".into(),
            group_key: format!("cloudwatch:{key}"),
            dedup_key: key,
            occurrence_key: format!("{}@{}", alarm.new_state, alarm.state_change_time.trim()),
            kind,
            status,
            title: alarm.name.clone(),
            service: text(&alarm.trigger["Namespace"]),
            severity,
            started_at: changed_at,
            ended_at: (status == EventStatus::Resolved).then_some(changed_at),
            description: [alarm.description.clone(), alarm.reason.clone()]
                .into_iter()
                .flatten()
                .filter(|s| !s.trim().is_empty())
                .reduce(|a, b| format!("{a}\n\n{b}")),
            labels,
            annotations: BTreeMap::new(),
            links: web_links(console),
        }],
        ..Parsed::default()
    })
}

/// The alarm's page in the AWS console, when its ARN names a real region.
fn console_link(arn: Option<&str>, name: &str) -> Option<String> {
    let region = arn?.split(':').nth(3)?;
    let plausible = !region.is_empty()
        && region
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && region.contains('-');
    plausible.then(|| {
        let encoded: String = form_urlencoded::byte_serialize(name.as_bytes()).collect();
        format!("https://console.aws.amazon.com/cloudwatch/home?region={region}#alarmsV2:alarm/{encoded}")
    })
}

/// Whether `url` is one SNS would send: https on `sns.<region>.amazonaws.com`.
/// Only such a URL is fetched to confirm a subscription.
pub fn is_sns_url(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("https://") else {
        return false;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let Some(region) = host
        .strip_prefix("sns.")
        .and_then(|h| h.strip_suffix(".amazonaws.com"))
    else {
        return false;
    };
    !region.is_empty()
        && region
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sns_hosts_over_https_are_trusted() {
        assert!(is_sns_url(
            "https://sns.us-west-2.amazonaws.com/?Action=ConfirmSubscription&T=1"
        ));
        assert!(!is_sns_url(
            "http://sns.us-west-2.amazonaws.com/?Action=ConfirmSubscription"
        ));
        assert!(!is_sns_url("https://sns.us-west-2.amazonaws.com.evil.com/"));
        assert!(!is_sns_url("https://evil.com/sns.us-west-2.amazonaws.com/"));
        assert!(!is_sns_url("https://user@sns.us-west-2.amazonaws.com/"));
        assert!(!is_sns_url("https://sns..amazonaws.com/"));
    }

    #[test]
    fn console_links_need_a_real_region() {
        assert_eq!(
            console_link(Some("arn:aws:cloudwatch:eu-west-1:1:alarm:High CPU"), "High CPU").as_deref(),
            Some("https://console.aws.amazon.com/cloudwatch/home?region=eu-west-1#alarmsV2:alarm/High+CPU")
        );
        assert_eq!(
            console_link(
                Some("arn:aws:cloudwatch:REGION:ACCOUNT_NUMBER:alarm:EXAMPLE"),
                "x"
            ),
            None
        );
    }
}

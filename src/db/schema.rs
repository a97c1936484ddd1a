// One schema for both backends, in a portable vocabulary: TEXT ids made by the app,
// naive-UTC TIMESTAMP, JSON stored as TEXT. Kept by hand, in step with both
// `migrations/sqlite` and `migrations/postgres`.

diesel::table! {
    api_tokens (id) {
        id -> Text,
        name -> Text,
        role -> Text,
        person_email -> Nullable<Text>,
        token_hash -> Text,
        created_at -> Timestamp,
        last_used_at -> Nullable<Timestamp>,
        revoked_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    incidents (id) {
        id -> Text,
        group_key -> Text,
        group_hash -> Text,
        source -> Text,
        title -> Text,
        service -> Nullable<Text>,
        severity -> Integer,
        state -> Text,
        started_at -> Timestamp,
        detected_at -> Timestamp,
        acknowledged_at -> Nullable<Timestamp>,
        resolved_at -> Nullable<Timestamp>,
        reopened_count -> Integer,
        event_count -> Integer,
        coe_required_at -> Nullable<Timestamp>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    incident_alerts (incident_id, dedup_key) {
        incident_id -> Text,
        dedup_key -> Text,
        status -> Text,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    webhook_deliveries (id) {
        id -> Text,
        source -> Text,
        delivery_key -> Nullable<Text>,
        content_type -> Nullable<Text>,
        body -> Text,
        received_at -> Timestamp,
    }
}

diesel::table! {
    failure_events (id) {
        id -> Text,
        delivery_id -> Text,
        incident_id -> Text,
        source -> Text,
        dedup_key -> Text,
        group_key -> Text,
        occurrence_key -> Text,
        occurrence_hash -> Text,
        kind -> Text,
        status -> Text,
        title -> Text,
        service -> Nullable<Text>,
        severity -> Integer,
        started_at -> Timestamp,
        ended_at -> Nullable<Timestamp>,
        description -> Nullable<Text>,
        labels -> Text,
        annotations -> Text,
        links -> Text,
        received_at -> Timestamp,
    }
}

diesel::joinable!(incident_alerts -> incidents (incident_id));
diesel::joinable!(failure_events -> incidents (incident_id));
diesel::joinable!(failure_events -> webhook_deliveries (delivery_id));

diesel::allow_tables_to_appear_in_same_query!(
    incidents,
    incident_alerts,
    webhook_deliveries,
    failure_events
);

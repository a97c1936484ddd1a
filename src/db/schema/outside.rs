//! The tables of what coe tells and hears outside itself: emails (the outbox, its
//! counts, each person's choices and unsubscribe links), chat notices, and tickets in
//! issue trackers with their jobs, webhook deliveries and health. Re-exported by
//! `db::schema`, where the joins and `allow_tables_to_appear_in_same_query!` name them.

diesel::table! {
    chat_messages (id) {
        id -> Text,
        channel -> Text,
        event -> Text,
        dedup_key -> Text,
        body -> Text,
        state -> Text,
        attempts -> Integer,
        next_attempt_at -> Timestamp,
        lease_until -> Nullable<Timestamp>,
        last_error -> Nullable<Text>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        sent_at -> Nullable<Timestamp>,
        claimed_by -> Nullable<Text>,
    }
}

diesel::table! {
    chat_channels (name) {
        name -> Text,
        last_delivered_at -> Nullable<Timestamp>,
        last_error -> Nullable<Text>,
        last_error_at -> Nullable<Timestamp>,
        broken_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    chat_requests (key) {
        key -> Text,
        platform -> Text,
        received_at -> Timestamp,
    }
}

diesel::table! {
    chat_cursors (platform, account) {
        platform -> Text,
        account -> Text,
        position -> Text,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    chat_links (platform, channel_id) {
        platform -> Text,
        channel_id -> Text,
        coe_id -> Text,
        linked_by -> Text,
        linked_at -> Timestamp,
    }
}

diesel::table! {
    outbox_emails (id) {
        id -> Text,
        kind -> Text,
        dedup_key -> Text,
        recipient -> Text,
        recipient_name -> Nullable<Text>,
        subject -> Text,
        body_text -> Text,
        body_html -> Text,
        state -> Text,
        attempts -> Integer,
        next_attempt_at -> Timestamp,
        lease_until -> Nullable<Timestamp>,
        last_error -> Nullable<Text>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        sent_at -> Nullable<Timestamp>,
        claimed_by -> Nullable<Text>,
        unsubscribe_token -> Nullable<Text>,
        private_link -> Nullable<Text>,
        calendar -> Nullable<Text>,
    }
}

diesel::table! {
    outbox_counts (state) {
        state -> Text,
        n -> BigInt,
    }
}

diesel::table! {
    outbox_count_changes (id) {
        id -> BigInt,
        state -> Text,
        n -> BigInt,
    }
}

diesel::table! {
    notification_settings (email) {
        email -> Text,
        mode -> Text,
        paused_until -> Nullable<Timestamp>,
        updated_at -> Timestamp,
        reach -> Text,
    }
}

diesel::table! {
    unsubscribe_links (token_hash) {
        token_hash -> Text,
        email -> Text,
        created_at -> Timestamp,
    }
}

diesel::table! {
    tickets (action_id) {
        action_id -> Text,
        tracker -> Text,
        place -> Text,
        ticket_key -> Nullable<Text>,
        remote_id -> Nullable<Text>,
        url -> Nullable<Text>,
        status -> Nullable<Text>,
        meaning -> Nullable<Text>,
        asks -> Nullable<Text>,
        asks_since -> Nullable<Timestamp>,
        pushed -> Nullable<Text>,
        pushed_at -> Nullable<Timestamp>,
        assignee_note -> Nullable<Text>,
        synced_at -> Nullable<Timestamp>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    tracker_jobs (id) {
        id -> Text,
        tracker -> Text,
        action_id -> Text,
        what -> Text,
        detail -> Text,
        dedup_key -> Text,
        state -> Text,
        attempts -> Integer,
        next_attempt_at -> Timestamp,
        lease_until -> Nullable<Timestamp>,
        claimed_by -> Nullable<Text>,
        last_error -> Nullable<Text>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        sent_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    tracker_deliveries (tracker, delivery_id) {
        tracker -> Text,
        delivery_id -> Text,
        received_at -> Timestamp,
    }
}

diesel::table! {
    tracker_states (name) {
        name -> Text,
        last_out_at -> Nullable<Timestamp>,
        last_in_at -> Nullable<Timestamp>,
        last_error -> Nullable<Text>,
        last_error_at -> Nullable<Timestamp>,
        unmapped -> Text,
        reconciled_at -> Nullable<Timestamp>,
    }
}

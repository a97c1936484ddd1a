// One schema for both backends, in a portable vocabulary: TEXT ids made by the app,
// naive-UTC TIMESTAMP, JSON stored as TEXT. Kept by hand, in step with both
// `migrations/sqlite` and `migrations/postgres`.

mod outside;
pub use outside::*;

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
        created_by -> Nullable<Text>,
    }
}

diesel::table! {
    incidents (id) {
        id -> Text,
        group_key -> Text,
        group_hash -> Binary,
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
        reported_by -> Nullable<Text>,
        group_id -> Text,
        digest -> Nullable<Text>,
        events_pruned_at -> Nullable<Timestamp>,
        budget_burned -> Nullable<Double>,
        slo -> Nullable<Text>,
    }
}

diesel::table! {
    incident_groups (group_hash) {
        group_hash -> Binary,
        group_id -> Text,
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
        occurrence_hash -> Binary,
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

diesel::table! {
    coes (id) {
        id -> Text,
        incident_id -> Nullable<Text>,
        title -> Text,
        service -> Nullable<Text>,
        severity -> Integer,
        state -> Text,
        owner_email -> Nullable<Text>,
        reviewer_email -> Nullable<Text>,
        template -> Text,
        template_name -> Text,
        template_version -> Integer,
        started_at -> Nullable<Timestamp>,
        detected_at -> Nullable<Timestamp>,
        mitigated_at -> Nullable<Timestamp>,
        resolved_at -> Nullable<Timestamp>,
        links -> Text,
        version -> Integer,
        created_by -> Text,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        submitted_by -> Nullable<Text>,
        reviewer_named_by -> Nullable<Text>,
        merged_into -> Nullable<Text>,
        bar_raiser_email -> Nullable<Text>,
        bar_raiser_assigned_at -> Nullable<Timestamp>,
        approved_by -> Nullable<Text>,
        approved_version -> Nullable<Integer>,
        owner_handed_over_from -> Nullable<Text>,
        owner_handed_over_at -> Nullable<Timestamp>,
        reviewer_handed_over_from -> Nullable<Text>,
        reviewer_handed_over_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    coe_sections (coe_id, key) {
        coe_id -> Text,
        key -> Text,
        body -> Text,
        updated_by -> Text,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    timeline_entries (id) {
        id -> Text,
        coe_id -> Text,
        at -> Timestamp,
        kind -> Text,
        text -> Text,
        source -> Nullable<Text>,
        event_id -> Nullable<Text>,
        created_at -> Timestamp,
        alert_key -> Nullable<Text>,
        alert_name -> Nullable<Text>,
        occurrences -> Integer,
        hosts -> Integer,
        last_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    timeline_hosts (entry_id, host) {
        entry_id -> Text,
        host -> Text,
    }
}

diesel::table! {
    /// The search index's own words (`db::search`), for "did you mean".
    search_words (word) {
        word -> Text,
    }
}

diesel::table! {
    why_chains (id) {
        id -> Text,
        coe_id -> Text,
        position -> Integer,
        steps -> Text,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        factor -> Nullable<Text>,
    }
}

diesel::table! {
    related_items (id) {
        id -> Text,
        coe_id -> Text,
        kind -> Text,
        title -> Nullable<Text>,
        url -> Nullable<Text>,
        related_coe_id -> Nullable<Text>,
        created_at -> Timestamp,
    }
}

diesel::table! {
    coe_recurrences (coe_id, earlier_coe_id) {
        coe_id -> Text,
        earlier_coe_id -> Text,
        matched_on -> Text,
        created_at -> Timestamp,
    }
}

diesel::table! {
    audit_log (id) {
        id -> Text,
        entity -> Text,
        entity_id -> Text,
        coe_id -> Nullable<Text>,
        actor -> Text,
        action -> Text,
        before -> Nullable<Text>,
        after -> Nullable<Text>,
        at -> Timestamp,
        via -> Nullable<Text>,
    }
}

diesel::table! {
    people (email) {
        email -> Text,
        name -> Nullable<Text>,
        team -> Nullable<Text>,
        manager_email -> Nullable<Text>,
        timezone -> Nullable<Text>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        feed_token_hash -> Nullable<Text>,
        is_admin -> Bool,
        bar_raiser -> Bool,
        scim_id -> Nullable<Text>,
        scim_user_name -> Nullable<Text>,
        scim_external_id -> Nullable<Text>,
        scim_doc -> Nullable<Text>,
        scim_manager_ref -> Nullable<Text>,
        active -> Bool,
        left_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    team_changes (id) {
        id -> Text,
        person_email -> Text,
        old_team -> Text,
        new_team -> Nullable<Text>,
        changed_at -> Timestamp,
    }
}

diesel::table! {
    scim_groups (id) {
        id -> Text,
        display_name -> Text,
        external_id -> Nullable<Text>,
        doc -> Text,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    scim_group_members (group_id, member_id) {
        group_id -> Text,
        member_id -> Text,
    }
}

diesel::table! {
    corrective_actions (id) {
        id -> Text,
        coe_id -> Text,
        title -> Text,
        description -> Nullable<Text>,
        owner_email -> Text,
        due_date -> Date,
        priority -> Text,
        kind -> Text,
        success_criteria -> Nullable<Text>,
        external_url -> Nullable<Text>,
        state -> Text,
        resolution_note -> Nullable<Text>,
        evidence_url -> Nullable<Text>,
        wont_do_reason -> Nullable<Text>,
        due_date_change_count -> Integer,
        created_by -> Text,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        closed_at -> Nullable<Timestamp>,
        verified_at -> Nullable<Timestamp>,
        verified_by -> Nullable<Text>,
        handed_over_from -> Nullable<Text>,
        handed_over_at -> Nullable<Timestamp>,
        target_date -> Nullable<Date>,
        past_target_reason -> Nullable<Text>,
        risk_accepted_until -> Nullable<Date>,
    }
}

diesel::table! {
    risk_acceptances (id) {
        id -> Text,
        action_id -> Text,
        asked_by -> Text,
        asked_at -> Timestamp,
        until_date -> Date,
        interim_control -> Text,
        remaining_risk -> Text,
        due_before -> Date,
        state -> Text,
        decided_by -> Nullable<Text>,
        decided_at -> Nullable<Timestamp>,
        decision_note -> Nullable<Text>,
    }
}

diesel::joinable!(risk_acceptances -> corrective_actions (action_id));

diesel::table! {
    drill_alarms (action_id) {
        action_id -> Text,
        labels -> Text,
        set_by -> Text,
        set_at -> Timestamp,
    }
}

diesel::joinable!(drill_alarms -> corrective_actions (action_id));

diesel::table! {
    drill_rechecks (id) {
        id -> Text,
        action_id -> Text,
        labels -> Text,
        opened_by -> Nullable<Text>,
        opened_at -> Timestamp,
        last_day -> Date,
        state -> Text,
        event_id -> Nullable<Text>,
        fired_at -> Nullable<Timestamp>,
        detected_seconds -> Nullable<BigInt>,
        decided_by -> Nullable<Text>,
        decided_at -> Nullable<Timestamp>,
        note -> Nullable<Text>,
    }
}

diesel::joinable!(drill_rechecks -> corrective_actions (action_id));

diesel::table! {
    review_meetings (coe_id) {
        coe_id -> Text,
        uid -> Text,
        starts_at -> Timestamp,
        minutes -> Integer,
        sequence -> Integer,
        state -> Text,
        set_by -> Text,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    due_date_changes (id) {
        id -> Text,
        action_id -> Text,
        from_date -> Date,
        to_date -> Date,
        reason -> Text,
        changed_by -> Text,
        changed_at -> Timestamp,
    }
}

diesel::table! {
    review_comments (id) {
        id -> Text,
        coe_id -> Text,
        author -> Text,
        verdict -> Text,
        body -> Text,
        created_at -> Timestamp,
    }
}

diesel::table! {
    replica_heartbeats (name) {
        name -> Text,
        started_at -> Timestamp,
        seen_at -> Timestamp,
    }
}

diesel::table! {
    connections (kind, name) {
        kind -> Text,
        name -> Text,
        settings -> Text,
        version -> BigInt,
        updated_by -> Text,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    template_rules (version) {
        version -> BigInt,
        rules -> Text,
        saved_by -> Text,
        saved_at -> Timestamp,
    }
}

diesel::table! {
    database_marks (name) {
        name -> Text,
        value -> Text,
    }
}

diesel::table! {
    sweep_settings (name) {
        name -> Text,
        value -> Text,
        updated_at -> Timestamp,
    }
}

diesel::joinable!(corrective_actions -> coes (coe_id));
diesel::joinable!(due_date_changes -> corrective_actions (action_id));

diesel::joinable!(coes -> incidents (incident_id));
diesel::joinable!(coe_sections -> coes (coe_id));
diesel::joinable!(timeline_entries -> coes (coe_id));
diesel::joinable!(why_chains -> coes (coe_id));

diesel::table! {
    sign_in_links (id) {
        id -> Text,
        email -> Text,
        token_hash -> Text,
        next_path -> Nullable<Text>,
        created_at -> Timestamp,
        expires_at -> Timestamp,
        used_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    sign_in_requests (id) {
        id -> Text,
        email -> Text,
        client -> Text,
        at -> Timestamp,
    }
}

diesel::table! {
    sessions (id) {
        id -> Text,
        token_hash -> Text,
        person_email -> Text,
        csrf_token -> Text,
        method -> Text,
        client -> Text,
        created_at -> Timestamp,
        last_seen_at -> Timestamp,
        ended_at -> Nullable<Timestamp>,
        ended_by -> Nullable<Text>,
        id_token -> Nullable<Text>,
        oidc_sub -> Nullable<Text>,
        oidc_sid -> Nullable<Text>,
    }
}

diesel::table! {
    logout_tokens (jti) {
        jti -> Text,
        seen_at -> Timestamp,
    }
}

diesel::table! {
    coe_reads (coe_id, person_email) {
        coe_id -> Text,
        person_email -> Text,
        version -> Integer,
        read_at -> Timestamp,
    }
}

diesel::table! {
    kept_forms (id) {
        id -> Text,
        person -> Text,
        coe_id -> Text,
        status -> Integer,
        body -> Text,
        created_at -> Timestamp,
    }
}

diesel::table! {
    form_keys (key) {
        key -> Text,
        person -> Text,
        landed -> Text,
        fingerprint -> Text,
        created_at -> Timestamp,
    }
}

diesel::table! {
    service_owners (service) {
        service -> Text,
        owner_email -> Nullable<Text>,
        team -> Nullable<Text>,
        reviewer_email -> Nullable<Text>,
        updated_by -> Text,
        updated_at -> Timestamp,
        depends_on -> Text,
        customer_name -> Nullable<Text>,
    }
}

diesel::table! {
    team_owners (team) {
        team -> Text,
        owner_email -> Text,
        updated_by -> Text,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    section_comments (id) {
        id -> Text,
        coe_id -> Text,
        section -> Text,
        author -> Text,
        body -> Text,
        created_at -> Timestamp,
        answer -> Nullable<Text>,
        answered_by -> Nullable<Text>,
        answered_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    coe_incidents (incident_id) {
        incident_id -> Text,
        coe_id -> Text,
        attached_by -> Text,
        attached_at -> Timestamp,
    }
}

diesel::joinable!(coe_incidents -> incidents (incident_id));
diesel::joinable!(coe_incidents -> coes (coe_id));

diesel::table! {
    action_recurrences (action_id, incident_id) {
        action_id -> Text,
        incident_id -> Text,
        coe_id -> Text,
        at -> Timestamp,
        created_at -> Timestamp,
    }
}

diesel::joinable!(action_recurrences -> corrective_actions (action_id));

diesel::table! {
    action_tally (owner_email) {
        owner_email -> Text,
        open -> BigInt,
        overdue -> BigInt,
        oldest_due -> Nullable<Date>,
    }
}

diesel::table! {
    action_tally_day (id) {
        id -> Integer,
        day -> Date,
        history -> BigInt,
        /// No longer written (migration 000039): kept for a replica of an older version.
        closings -> BigInt,
    }
}

diesel::table! {
    coe_templates (name, version) {
        name -> Text,
        version -> Integer,
        body -> Text,
        saved_by -> Text,
        saved_at -> Timestamp,
    }
}

diesel::table! {
    publications (token) {
        token -> Text,
        coe_id -> Text,
        title -> Text,
        body -> Text,
        statuspage_incident -> Nullable<Text>,
        published_by -> Text,
        published_at -> Timestamp,
        updated_by -> Nullable<Text>,
        updated_at -> Nullable<Timestamp>,
        revoked_by -> Nullable<Text>,
        revoked_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    summary_changes (id) {
        id -> Text,
        coe_id -> Text,
        title -> Text,
        body -> Text,
        proposed_by -> Text,
        proposed_at -> Timestamp,
        decision -> Nullable<Text>,
        decided_by -> Nullable<Text>,
        decided_at -> Nullable<Timestamp>,
        note -> Nullable<Text>,
    }
}

diesel::table! {
    figure_snapshots (name) {
        name -> Text,
        counted_at -> Timestamp,
        figures -> Text,
    }
}

diesel::joinable!(tickets -> corrective_actions (action_id));
diesel::joinable!(publications -> coes (coe_id));
diesel::joinable!(summary_changes -> coes (coe_id));
diesel::joinable!(chat_links -> coes (coe_id));

diesel::allow_tables_to_appear_in_same_query!(
    tickets,
    tracker_jobs,
    tracker_deliveries,
    tracker_states,
    action_recurrences,
    action_tally,
    action_tally_day,
    figure_snapshots,
    coe_templates,
    publications,
    summary_changes,
    chat_links,
    chat_requests,
    chat_cursors,
    api_tokens,
    incidents,
    incident_groups,
    incident_alerts,
    webhook_deliveries,
    failure_events,
    coes,
    coe_sections,
    timeline_entries,
    timeline_hosts,
    sign_in_links,
    sign_in_requests,
    sessions,
    coe_reads,
    why_chains,
    related_items,
    coe_recurrences,
    audit_log,
    people,
    corrective_actions,
    risk_acceptances,
    drill_alarms,
    drill_rechecks,
    review_meetings,
    due_date_changes,
    review_comments,
    outbox_emails,
    outbox_counts,
    outbox_count_changes,
    sweep_settings,
    notification_settings,
    unsubscribe_links,
    database_marks,
    connections,
    template_rules,
    replica_heartbeats,
    logout_tokens,
    kept_forms,
    form_keys,
    service_owners,
    team_owners,
    scim_groups,
    scim_group_members,
    team_changes,
    section_comments,
    coe_incidents
);

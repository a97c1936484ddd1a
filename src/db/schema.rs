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

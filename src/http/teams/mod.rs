//! The address a Teams bot (Bot Framework) posts to: `/chat/teams/messages`
//! (docs/integrations.md, Working from Teams). Each activity's token is checked as
//! Microsoft documents before coe acts on it (`chat::teams::verify`); its Teams user is
//! a person in coe's directory by the email Teams gives for the member, else they are
//! told to ask an admin and nothing changes. Commands (`@coe report`, `follow-up`,
//! `link`, `mine`) answer with Adaptive Cards; a card's button is the move, made once
//! for its activity (`messages.rs`); what a person's list says is `words.rs`.

mod messages;
mod words;

pub use messages::messages;

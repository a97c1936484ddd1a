//! People's names as a reader sees them: two names that look alike on a page are one
//! name, whatever their letters (a Cyrillic а for a Latin a, a different case, more
//! spaces).

use unicode_security::confusable_detection::skeleton;

/// What `name` looks like to a reader: its UTS #39 confusable skeleton, without case
/// or extra spaces. Two names with the same key cannot be told apart on a page.
pub fn look_alike_key(name: &str) -> String {
    let folded: String = skeleton(name.trim()).collect::<String>().to_lowercase();
    // Lower-casing can make new confusables (a capital I and a lower-case l).
    skeleton(&folded)
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::look_alike_key;

    #[test]
    fn names_that_look_alike_have_one_key() {
        let dana = look_alike_key("Dana Okafor");
        assert_eq!(look_alike_key("dana  okafor "), dana);
        assert_eq!(look_alike_key("D\u{0430}na Okafor"), dana, "a Cyrillic а");
        assert_eq!(look_alike_key("Dana 0kafor"), dana, "a zero for an O");
        assert_ne!(look_alike_key("Diana Okafor"), dana);
    }
}

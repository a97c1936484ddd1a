//! The commands that let people in from the host: API tokens (`token create | list |
//! revoke`) and a one-time sign-in link (`sign-in-link`).

use super::{open, Failure, TokenCommand};
use crate::config::Settings;
use crate::domain::{EmailAddress, Role, TokenName};
use crate::services::directory::tokens;

/// `coe sign-in-link EMAIL`: the link on stdout, once; notes on stderr.
pub(super) fn sign_in_link(settings: &Settings, email: &str) -> Result<(), Failure> {
    let email = EmailAddress::parse(email).map_err(|e| Failure::settings(format!("EMAIL: {e}")))?;
    // The way in when nothing else works: a broken COE or email template (which a
    // sign-in link does not use) does not stand in its way.
    let runtime = match crate::services::Runtime::load(settings.clone()) {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("warning: {e}; the link is made with coe's built-in templates");
            crate::services::Runtime {
                connections: crate::services::connections::LiveConnections::of_file(settings),
                settings: std::sync::Arc::new(settings.clone()),
                template: std::sync::Arc::new(crate::domain::template::Template::default_template()),
                emails: std::sync::Arc::new(
                    crate::email::EmailTemplates::load(None, &settings.public_url)
                        .map_err(Failure::settings)?,
                ),
            }
        }
    };
    let (mut conn, _) = open(settings)?;
    let link = crate::services::accounts::auth::host_link(&mut conn, &email, runtime.env())
        .map_err(|e| match e {
            crate::services::accounts::auth::HostLinkError::Database(_) => Failure::runtime(e),
            _ => Failure::settings(e),
        })?;
    eprintln!(
        "a one-time sign-in link for {} follows; it works once, for {} minutes, and is shown \
         only now (the audit log records that it was made here):",
        email.as_str(),
        crate::domain::auth::LINK_LIFETIME_MINUTES
    );
    println!("{link}");
    Ok(())
}

pub(super) fn token(settings: &Settings, command: TokenCommand) -> Result<(), Failure> {
    let (mut conn, _) = open(settings)?;
    match command {
        TokenCommand::Create { name, role, email } => {
            let name =
                TokenName::parse(&name).map_err(|e| Failure::settings(format!("--name: {e}")))?;
            let role: Role = role
                .parse()
                .map_err(|e| Failure::settings(format!("--role: {e}")))?;
            let email = email
                .map(|e| EmailAddress::parse(&e))
                .transpose()
                .map_err(|e| Failure::settings(format!("--email: {e}")))?;
            let (info, secret) =
                tokens::create(&mut conn, &name, role, email.as_ref()).map_err(Failure::runtime)?;
            eprintln!(
                "created token `{}` with role {}; its secret follows and cannot be shown again:",
                info.name, info.role
            );
            println!("{}", secret.expose());
        }
        TokenCommand::List { all } => {
            let list = tokens::list(&mut conn, all).map_err(Failure::runtime)?;
            let fmt_time = |t: Option<chrono::NaiveDateTime>| {
                t.map(|t| t.format("%Y-%m-%d %H:%M").to_string())
                    .unwrap_or_else(|| "-".into())
            };
            let rows: Vec<[String; 6]> = list
                .into_iter()
                .map(|t| {
                    [
                        t.name.clone(),
                        t.role.to_string(),
                        t.email.clone().unwrap_or_else(|| "-".into()),
                        fmt_time(Some(t.created_at)),
                        fmt_time(t.last_used_at),
                        if t.revoked_at.is_some() {
                            "revoked".into()
                        } else {
                            "active".into()
                        },
                    ]
                })
                .collect();
            print!(
                "{}",
                columns(
                    [
                        "NAME",
                        "ROLE",
                        "EMAIL",
                        "CREATED (UTC)",
                        "LAST USED",
                        "STATE"
                    ],
                    &rows
                )
            );
        }
        TokenCommand::Revoke { name } => {
            let info = tokens::revoke(&mut conn, &name).map_err(Failure::runtime)?;
            println!("revoked token `{}`", info.name);
        }
    }
    Ok(())
}

/// Rows under a header, each column as wide as its widest cell (the last unpadded).
fn columns<const N: usize>(header: [&str; N], rows: &[[String; N]]) -> String {
    let mut widths = header.map(|h| h.chars().count());
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == N {
                out.push_str(cell);
            } else {
                let pad = widths[i] - cell.chars().count();
                out.push_str(cell);
                out.push_str(&" ".repeat(pad + 2));
            }
        }
        out.push('\n');
        out
    };
    let mut out = line(header.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::columns;

    #[test]
    fn columns_are_as_wide_as_their_widest_cell() {
        let rows = [
            [
                "a-very-long-token-name-for-grafana".to_owned(),
                "ingest".to_owned(),
                "x".to_owned(),
            ],
            ["ci".to_owned(), "admin".to_owned(), "y".to_owned()],
        ];
        let text = columns(["NAME", "ROLE", "STATE"], &rows);
        let lines: Vec<&str> = text.lines().collect();
        let at = |line: &str, word: &str| line.find(word).expect(word);
        assert_eq!(at(lines[0], "ROLE"), at(lines[1], "ingest"));
        assert_eq!(at(lines[0], "ROLE"), at(lines[2], "admin"));
        assert_eq!(at(lines[0], "STATE"), at(lines[2], "y"));
    }
}

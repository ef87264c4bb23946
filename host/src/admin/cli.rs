//! `crucible admin grant|revoke <email>`: the host gives or takes the admin role, on the
//! server's database (a running server sees the change on the next request).

use clap::Subcommand;

use crate::config::StorageArgs;

#[derive(Debug, Subcommand)]
pub(crate) enum AdminCommand {
    /// Make the account with this e-mail an admin (it signs in as usual; `/api/admin/*` opens).
    Grant {
        email: String,
        #[command(flatten)]
        storage: StorageArgs,
    },
    /// Take the admin role away.
    Revoke {
        email: String,
        #[command(flatten)]
        storage: StorageArgs,
    },
}

pub(crate) async fn run(command: AdminCommand) -> anyhow::Result<()> {
    let (email, storage, admin) = match command {
        AdminCommand::Grant { email, storage } => (email, storage, true),
        AdminCommand::Revoke { email, storage } => (email, storage, false),
    };
    let state = crate::startup::offline_state(&storage).await?;
    let account_id = super::service::set_admin(&state.store, &email, admin, state.now()).await?;
    println!(
        "{} {email} ({account_id})",
        if admin {
            "granted admin to"
        } else {
            "revoked admin from"
        }
    );
    Ok(())
}

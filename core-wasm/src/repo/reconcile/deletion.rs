//! `handleDeletion` (`REPO/deletion.go`): list every Repository, close
//! this one in the cache, then drop the finalizer with an Update.

use crate::api::repository::Repository;
use crate::repo::time::Duration;
use crate::repo::FINALIZER;

use super::io::{Answer, Call, Io, Suspend};
use super::Outcome;

/// The requeue after a timed-out list or a failed cache close.
pub(super) const DELETION_RETRY: Duration = Duration::from_mins(1);

fn deadline_exceeded(message: &str) -> bool {
    message.to_lowercase().contains("deadline exceeded")
}

pub(super) fn run(io: &mut Io<'_>, repo: &Repository) -> Result<Outcome, Suspend> {
    let listed = io.call(Call::ListRepositories)?;
    let all: Vec<Repository> = match listed.decode("Repository list") {
        Ok(all) => all,
        Err(e) if deadline_exceeded(&e) => {
            io.log(format!("listing repositories timed out: {e}"));
            return Ok(Outcome::after(DELETION_RETRY));
        }
        Err(e) => return Ok(Outcome::error(e)),
    };
    let closed = io.call(Call::CloseRepository {
        repository: repo.clone(),
        all_repositories: all,
    })?;
    if let Err(e) = closed.into_result() {
        io.log(format!("closing the repository in the cache: {e}"));
        return Ok(Outcome::after(DELETION_RETRY));
    }
    let mut object = repo.clone();
    object.metadata.finalizers.retain(|f| f != FINALIZER);
    match io.call(Call::UpdateRepository { object })? {
        Answer::Ok { .. } => Ok(Outcome::default()),
        a => Ok(Outcome::error(a.into_result().err().unwrap_or_default())),
    }
}

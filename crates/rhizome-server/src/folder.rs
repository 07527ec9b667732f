//! Who may change a data folder as a whole, and the plan of a rebase
//! (`rhizome rebase`: every IRI moved from one base to another).
//!
//! - `DATA/lock`: held (an exclusive `flock`) by a running server and by a
//!   rebase, so a rebase never runs under a server and no server starts
//!   in the middle of one; held shared by the commands and programs that
//!   open the folder's databases themselves (`rhizome load --db`,
//!   `replicate` to or from a local database, `rhizome.open` in Python), so
//!   none of them opens a database a server may open or have closed (a
//!   server opens databases on demand and closes idle ones). The kernel
//!   drops it when its process dies.
//! - `DATA/rebase-plan`: written (synced) before a rebase changes
//!   anything and removed once `DATA/base-iri` names the new base. While
//!   it exists the folder is between two bases (each database whole at
//!   one of them); nothing starts on it until `rhizome rebase` finishes.

use crate::error::ServerError;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

const LOCK_FILE: &str = "lock";
const PLAN_FILE: &str = "rebase-plan";

/// The folder's lock, held until the returned file is dropped.
pub fn lock_folder(data_dir: &Path) -> Result<File, ServerError> {
    take_lock(data_dir, false, "another process (a running server, a rebase, or a command or Python program with its databases open)", "")
}

/// The folder's lock held shared (until the returned file is dropped), by
/// a process that opens the folder's databases itself. Several such
/// processes may hold it together (each database keeps its engine's own
/// lock); a running server or rebase excludes them.
pub fn share_folder(data_dir: &Path) -> Result<File, ServerError> {
    take_lock(data_dir, true, "a running server (or a rebase)", ": go through the server's HTTP API, or stop it first")
}

/// `DATA/lock`, exclusive or shared; `holders`: who may hold it instead,
/// and `advice` for the one refused.
fn take_lock(data_dir: &Path, shared: bool, holders: &str, advice: &str) -> Result<File, ServerError> {
    let path = data_dir.join(LOCK_FILE);
    let io = |source| ServerError::Io { what: format!("opening {}", path.display()), source };
    std::fs::create_dir_all(data_dir).map_err(io)?;
    let file = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(io)?;
    match if shared { file.try_lock_shared() } else { file.try_lock() } {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(ServerError::FolderInUse(format!("{} is in use: {holders} holds {}{advice}", data_dir.display(), path.display()))),
        Err(std::fs::TryLockError::Error(source)) => Err(ServerError::Io { what: format!("locking {}", path.display()), source }),
    }
}

/// A rebase in progress: from which base to which.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RebasePlan {
    pub from: String,
    pub to: String,
}

fn plan_path(data_dir: &Path) -> PathBuf {
    data_dir.join(PLAN_FILE)
}

/// The rebase a killed `rhizome rebase` left unfinished, if any.
pub fn rebase_plan(data_dir: &Path) -> Result<Option<RebasePlan>, ServerError> {
    let path = plan_path(data_dir);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let mut lines = text.lines();
            match (lines.next(), lines.next()) {
                (Some(from), Some(to)) if !from.is_empty() && !to.is_empty() => Ok(Some(RebasePlan { from: from.to_owned(), to: to.to_owned() })),
                // A plan cut short was never acted on (it is synced before
                // anything changes): nothing to finish.
                _ => Ok(None),
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(ServerError::Io { what: format!("reading {}", path.display()), source }),
    }
}

/// Writes the plan and syncs it (and its folder) before any change.
pub fn write_rebase_plan(data_dir: &Path, plan: &RebasePlan) -> Result<(), ServerError> {
    let path = plan_path(data_dir);
    let io = |source| ServerError::Io { what: format!("writing {}", path.display()), source };
    let tmp = path.with_extension("tmp");
    let mut f = File::create(&tmp).map_err(io)?;
    f.write_all(format!("{}\n{}\n", plan.from, plan.to).as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    std::fs::rename(&tmp, &path).map_err(io)?;
    sync_dir(data_dir).map_err(io)
}

/// Records `base` as the folder's base, then removes the plan: a crash
/// between the two leaves a plan whose databases are all done, which the
/// next `rhizome rebase` finishes at once.
pub fn finish_rebase(data_dir: &Path, base: &str) -> Result<(), ServerError> {
    let base_path = data_dir.join("base-iri");
    let io = |source| ServerError::Io { what: format!("writing {}", base_path.display()), source };
    crate::state::write_durably(&base_path, format!("{base}\n").as_bytes(), false).map_err(io)?;
    sync_dir(data_dir).map_err(io)?;
    std::fs::remove_file(plan_path(data_dir)).map_err(io)?;
    sync_dir(data_dir).map_err(io)
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    File::open(dir)?.sync_all()
}

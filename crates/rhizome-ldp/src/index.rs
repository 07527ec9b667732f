//! The LDP index in the database's store: which paths are resources (and
//! of which interaction model), each container's children, and which
//! containers name a resource as their membership resource. Kept by
//! [`crate::LdpProjector`] in every document write's transaction.
//!
//! | keyspace | key | value |
//! |---|---|---|
//! | `RESOURCES` 45 | path | format (1), model byte, children generation (u64 BE), membership resource IRI (UTF-8, may be empty) |
//! | `CHILDREN` 46 | parent path, 0, child's last segment | empty |
//! | `MEMBERSHIP_TARGETS` 47 | membership resource IRI, 0, container path | empty |
//!
//! Paths never hold a 0 byte (IRIs cannot), so a parent's children are the
//! keys under `parent\0`, in name order, one prefix scan.

use crate::{InteractionModel, LdpError, LdpPath};
use rhizome_kv::{Keyspace, KvRead, Transaction};

pub const RESOURCES: Keyspace = Keyspace(45);
pub const CHILDREN: Keyspace = Keyspace(46);
pub const MEMBERSHIP_TARGETS: Keyspace = Keyspace(47);

const ENTRY_FORMAT: u8 = 1;

/// What the index keeps per resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceEntry {
    pub model: InteractionModel,
    /// Bumped whenever a child comes or goes (a container's ETag).
    pub generation: u64,
    /// A direct or indirect container's `ldp:membershipResource`.
    pub membership_resource: Option<String>,
}

impl ResourceEntry {
    fn to_bytes(&self) -> Vec<u8> {
        let m = self.membership_resource.as_deref().unwrap_or("");
        let mut out = Vec::with_capacity(10 + m.len());
        out.push(ENTRY_FORMAT);
        out.push(self.model.to_byte());
        out.extend_from_slice(&self.generation.to_be_bytes());
        out.extend_from_slice(m.as_bytes());
        out
    }

    fn from_bytes(path: &LdpPath, b: &[u8]) -> Result<ResourceEntry, LdpError> {
        let bad = || LdpError::Corrupt(format!("the entry of {:?}", path.as_str()));
        if b.first() != Some(&ENTRY_FORMAT) || b.len() < 10 {
            return Err(bad());
        }
        let model = InteractionModel::from_byte(b[1]).ok_or_else(bad)?;
        let generation = u64::from_be_bytes(b[2..10].try_into().map_err(|_| bad())?);
        let m = std::str::from_utf8(&b[10..]).map_err(|_| bad())?;
        Ok(ResourceEntry { model, generation, membership_resource: (!m.is_empty()).then(|| m.to_owned()) })
    }
}

pub fn get(kv: &dyn KvRead, path: &LdpPath) -> Result<Option<ResourceEntry>, LdpError> {
    match kv.get(RESOURCES, path.as_str().as_bytes())? {
        Some(b) => Ok(Some(ResourceEntry::from_bytes(path, &b)?)),
        None => Ok(None),
    }
}

/// The root container's entry: it always exists, a basic container until
/// written otherwise.
pub fn get_or_root(kv: &dyn KvRead, path: &LdpPath) -> Result<Option<ResourceEntry>, LdpError> {
    match get(kv, path)? {
        None if path.is_root() => Ok(Some(ResourceEntry { model: InteractionModel::BasicContainer, generation: 0, membership_resource: None })),
        other => Ok(other),
    }
}

pub(crate) fn put(kv: &mut Transaction<'_>, path: &LdpPath, entry: &ResourceEntry) {
    kv.put(RESOURCES, path.as_str().as_bytes(), &entry.to_bytes());
}

pub(crate) fn delete(kv: &mut Transaction<'_>, path: &LdpPath) {
    kv.delete(RESOURCES, path.as_str().as_bytes());
}

fn child_key(parent: &LdpPath, name: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(parent.as_str().len() + 1 + name.len());
    k.extend_from_slice(parent.as_str().as_bytes());
    k.push(0);
    k.extend_from_slice(name.as_bytes());
    k
}

fn prefix(s: &str) -> (Vec<u8>, Vec<u8>) {
    let mut lower = s.as_bytes().to_vec();
    lower.push(0);
    let mut upper = s.as_bytes().to_vec();
    upper.push(1);
    (lower, upper)
}

/// Adds or removes `child` under its parent and bumps the parent's
/// generation (creating the root's entry when needed).
pub(crate) fn set_child(kv: &mut Transaction<'_>, child: &LdpPath, present: bool) -> Result<(), LdpError> {
    let Some(parent) = child.parent() else { return Ok(()) };
    let key = child_key(&parent, child.name());
    if present {
        kv.put(CHILDREN, &key, &[]);
    } else {
        kv.delete(CHILDREN, &key);
    }
    if let Some(mut entry) = get_or_root(kv, &parent)? {
        entry.generation += 1;
        put(kv, &parent, &entry);
    }
    Ok(())
}

/// Calls `f` with each child of `parent`, in name order, until it returns
/// `false`: a cursor over the parent's keys, nothing collected.
pub fn for_each_child(kv: &dyn KvRead, parent: &LdpPath, mut f: impl FnMut(LdpPath) -> Result<bool, LdpError>) -> Result<(), LdpError> {
    let (lower, upper) = prefix(parent.as_str());
    let mut cursor = kv.cursor(CHILDREN, &lower, Some(&upper));
    cursor.seek_first();
    while cursor.valid() {
        let name = std::str::from_utf8(&cursor.key()[lower.len()..]).map_err(|_| LdpError::Corrupt(format!("a child key of {:?}", parent.as_str())))?;
        let child = if parent.is_root() { LdpPath::from_raw(name) } else { LdpPath::from_raw(&format!("{}/{name}", parent.as_str())) };
        if !f(child)? {
            break;
        }
        cursor.next();
    }
    cursor.status()?;
    Ok(())
}

pub fn has_children(kv: &dyn KvRead, parent: &LdpPath) -> Result<bool, LdpError> {
    let mut any = false;
    for_each_child(kv, parent, |_| {
        any = true;
        Ok(false)
    })?;
    Ok(any)
}

pub(crate) fn set_membership_target(kv: &mut Transaction<'_>, target: &str, container: &LdpPath, present: bool) {
    let mut key = target.as_bytes().to_vec();
    key.push(0);
    key.extend_from_slice(container.as_str().as_bytes());
    if present {
        kv.put(MEMBERSHIP_TARGETS, &key, &[]);
    } else {
        kv.delete(MEMBERSHIP_TARGETS, &key);
    }
}

/// The containers whose membership resource is `target` (an IRI).
pub fn membership_containers(kv: &dyn KvRead, target: &str) -> Result<Vec<LdpPath>, LdpError> {
    let (lower, upper) = prefix(target);
    let mut cursor = kv.cursor(MEMBERSHIP_TARGETS, &lower, Some(&upper));
    cursor.seek_first();
    let mut out = Vec::new();
    while cursor.valid() {
        let p = std::str::from_utf8(&cursor.key()[lower.len()..]).map_err(|_| LdpError::Corrupt(format!("a membership key of {target}")))?;
        out.push(LdpPath::from_raw(p));
        cursor.next();
    }
    cursor.status()?;
    Ok(out)
}

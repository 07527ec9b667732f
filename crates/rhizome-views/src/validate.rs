//! `validate_doc_update`: every design document's validation function runs
//! on every write of a document that is not a design or `_local` one,
//! replicated writes included, as `fn(newDoc, oldDoc, userCtx, secObj)`
//! (`couch_query_servers:validate_doc_update`). Throwing `{forbidden: m}`
//! refuses the write with 403, `{unauthorized: m}` with 401; anything else
//! thrown is CouchDB's 500 `unknown_error`.

use crate::design::{compilation, DesignDoc, DesignError};
use crate::js::{describe, FnId, JsError, Limits, Sandbox};
use serde_json::Value;

/// Why a validation function refused a write.
#[derive(Clone, Debug, PartialEq)]
pub enum Rejection {
    Forbidden(String),
    Unauthorized(String),
    /// Thrown as something else, or past the sandbox's limits.
    Failed { error: &'static str, reason: String },
}

impl Rejection {
    /// CouchDB's status and error name.
    pub fn status_and_error(&self) -> (u16, &'static str) {
        match self {
            Rejection::Forbidden(_) => (403, "forbidden"),
            Rejection::Unauthorized(_) => (401, "unauthorized"),
            Rejection::Failed { error, .. } => (500, error),
        }
    }

    pub fn reason(&self) -> &str {
        match self {
            Rejection::Forbidden(r) | Rejection::Unauthorized(r) | Rejection::Failed { reason: r, .. } => r,
        }
    }
}

/// The validation functions of a database's design documents, compiled.
pub struct Validators {
    sandbox: Sandbox,
    fns: Vec<FnId>,
}

impl Validators {
    /// `None` when no design document has a validation function.
    pub fn new(ddocs: &[DesignDoc], limits: Limits) -> Result<Option<Validators>, DesignError> {
        let sources: Vec<(&DesignDoc, &str)> = ddocs.iter().filter_map(|d| Some((d, d.validate_doc_update()?))).collect();
        if sources.is_empty() {
            return Ok(None);
        }
        let mut sandbox = Sandbox::new(limits).map_err(|e| DesignError::Compilation(e.to_string()))?;
        let mut fns = Vec::with_capacity(sources.len());
        for (d, src) in sources {
            fns.push(sandbox.compile(src, &d.body).map_err(|e| compilation("validate_doc_update", &d.id, e))?);
        }
        Ok(Some(Validators { sandbox, fns }))
    }

    /// Runs every function on one write; the first refusal.
    pub fn check(&mut self, new_doc: &Value, old_doc: &Value, user_ctx: &Value, sec_obj: &Value) -> Result<(), Rejection> {
        for f in &self.fns {
            match self.sandbox.call(*f, &[new_doc.clone(), old_doc.clone(), user_ctx.clone(), sec_obj.clone()]) {
                Ok(_) => {}
                Err(JsError::Thrown(Value::Object(m))) => {
                    return Err(match (m.get("forbidden"), m.get("unauthorized")) {
                        (Some(r), _) => Rejection::Forbidden(describe(r)),
                        (None, Some(r)) => Rejection::Unauthorized(describe(r)),
                        _ => Rejection::Failed { error: "unknown_error", reason: m.values().next().map(describe).unwrap_or_default() },
                    })
                }
                Err(JsError::Thrown(other)) => return Err(Rejection::Failed { error: "unknown_error", reason: describe(&other) }),
                Err(e) => return Err(Rejection::Failed { error: "os_process_error", reason: e.to_string() }),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ddoc(id: &str, vdu: &str) -> DesignDoc {
        DesignDoc::parse(id, json!({ "validate_doc_update": vdu }).as_object().unwrap()).unwrap().unwrap()
    }

    #[test]
    fn refusals_carry_couchdbs_status() {
        let ddocs = vec![
            ddoc("_design/a", "function (n, o, u, s) { if (!n.type) throw({forbidden: 'type is required'}); }"),
            ddoc("_design/b", "function (n, o, u, s) { if (n.type === 'secret' && u.roles.indexOf('_admin') < 0) throw({unauthorized: 'admins only, ' + u.name}); if (o && o.locked) throw('locked'); }"),
        ];
        let mut v = Validators::new(&ddocs, Limits::default()).unwrap().unwrap();
        let user = json!({"db": "db", "name": "bob", "roles": []});
        let sec = json!({});
        assert_eq!(v.check(&json!({"_id": "x"}), &Value::Null, &user, &sec), Err(Rejection::Forbidden("type is required".into())));
        assert_eq!(v.check(&json!({"_id": "x", "type": "secret"}), &Value::Null, &user, &sec), Err(Rejection::Unauthorized("admins only, bob".into())));
        assert_eq!(v.check(&json!({"_id": "x", "type": "t"}), &json!({"locked": true}), &user, &sec), Err(Rejection::Failed { error: "unknown_error", reason: "locked".into() }));
        assert_eq!(v.check(&json!({"_id": "x", "type": "t"}), &Value::Null, &user, &sec), Ok(()));
        assert!(Validators::new(&[ddoc("_design/c", "function () {}")][..0], Limits::default()).unwrap().is_none());
    }
}

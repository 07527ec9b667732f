//! What `_explain` tells of the planner's choice in CouchDB 3.4+:
//! `index_candidates`, every index but the chosen one with whether it was
//! usable, the first reason it was not chosen and its rank
//! (`mango_cursor:extract_candidate_indexes`), and `selector_hints`, the
//! selector's fields an index could serve (`extract_selector_hints`).

use super::plan::{Access, FindOptions, IndexKey, Plan, Trace};
use super::ranges::{indexable_fields, selector_fields};
use crate::selector::{join_path, Selector};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// What is known of one candidate, merged as CouchDB's
/// `enhance_candidates`: usable only if every stage says so, reasons in the
/// order the stages gave them, ranks summed.
struct Tags {
    access: Access,
    usable: bool,
    reasons: Vec<&'static str>,
    ranking: usize,
}

fn keys(set: &[Access]) -> Vec<IndexKey> {
    set.iter().map(Access::key).collect()
}

/// `a` without `b`.
fn minus(a: &[IndexKey], b: &[IndexKey]) -> Vec<IndexKey> {
    a.iter().filter(|k| !b.contains(k)).cloned().collect()
}

/// `index_candidates` of `_explain`.
pub(super) fn index_candidates(plan: &Plan, opts: &FindOptions) -> Value {
    let t: &Trace = &plan.trace;
    let (all, global, in_scope, usable, filtered, of_type) = (keys(&t.all), keys(&t.global), keys(&t.in_scope), keys(&t.usable), keys(&t.filtered), keys(&t.of_type));
    let partial = minus(&all, &global);
    let out_of_scope = minus(&global, &in_scope);
    let not_usable = minus(&in_scope, &usable);
    let excluded = minus(&usable, &filtered);
    let unfavored = minus(&filtered, &of_type);
    // Each stage that dropped an index ranks one below the previous.
    let unfavored_rank = t.sorted.len().max(1);
    let step = |rank: usize, set: &[IndexKey]| if set.is_empty() { rank } else { rank + 1 };
    let excluded_rank = step(unfavored_rank, &unfavored);
    let not_usable_rank = step(excluded_rank, &excluded);
    let out_of_scope_rank = step(not_usable_rank, &not_usable);
    let partial_rank = step(out_of_scope_rank, &out_of_scope);

    let mut tags: BTreeMap<IndexKey, Tags> = t.all.iter().map(|a| (a.key(), Tags { access: a.clone(), usable: true, reasons: Vec::new(), ranking: 0 })).collect();
    let mut tag = |set: &[IndexKey], usable: bool, reason: Option<&'static str>, ranking: usize| {
        for k in set {
            if let Some(t) = tags.get_mut(k) {
                t.usable &= usable;
                t.reasons.extend(reason);
                t.ranking += ranking;
            }
        }
    };
    tag(&partial, false, Some("is_partial"), partial_rank);
    tag(&out_of_scope, false, Some("scope_mismatch"), out_of_scope_rank);
    tag(&not_usable, false, None, not_usable_rank);
    tag(&excluded, true, Some("excluded_by_user"), excluded_rank);
    tag(&unfavored, true, Some("unfavored_type"), unfavored_rank);
    for (access, reasons) in &t.usability {
        if let Some(t) = tags.get_mut(&access.key()) {
            t.reasons.extend(reasons.iter().copied());
        }
    }
    let winner = plan.access.as_ref();
    let winner_width = winner.map_or(0, |w| w.columns().len());
    for (rank, (access, distance)) in t.sorted.iter().enumerate() {
        let reason = if *distance > 0 {
            "less_overlap"
        } else if access.columns().len() > winner_width {
            "too_many_fields"
        } else {
            "alphabetically_comes_after"
        };
        if let Some(t) = tags.get_mut(&access.key()) {
            t.reasons.push(reason);
            t.ranking += rank;
        }
    }
    if let Some(w) = winner {
        tags.remove(&w.key());
    }
    // CouchDB folds its map of `#idx{}` records into a list, last first.
    let entries = tags.into_values().rev().map(|t| {
        let covering = match &t.access {
            Access::Json(_) => Value::Bool(t.access.covers(opts.fields.as_deref())),
            Access::AllDocs => Value::Null,
        };
        let reasons: Vec<Value> = t.reasons.first().map(|r| json!({ "name": r })).into_iter().collect();
        json!({
            "index": t.access.to_json(),
            "analysis": { "usable": t.usable, "reasons": reasons, "ranking": t.ranking, "covering": covering },
        })
    });
    Value::Array(entries.collect())
}

/// `selector_hints` of `_explain`: for JSON indexes (the only kind served),
/// the fields an index could serve and the others, each sorted.
pub(super) fn selector_hints(selector: &Selector) -> Value {
    let mut indexable: Vec<String> = indexable_fields(selector).iter().map(|f| join_path(f)).collect();
    indexable.sort();
    indexable.dedup();
    let mut unindexable: Vec<String> = selector_fields(selector).iter().map(|f| join_path(f)).filter(|f| !indexable.contains(f)).collect();
    unindexable.sort();
    unindexable.dedup();
    json!([{ "type": "json", "indexable_fields": indexable, "unindexable_fields": unindexable }])
}

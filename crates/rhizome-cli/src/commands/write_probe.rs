//! Small committed writes, one per line of output, for the crash tests:
//! transaction `i` inserts two quads and prints `committed i` only after its
//! commit returned. A test kills the process and checks that every printed
//! commit is in the store with both its quads, and no transaction is there
//! in part.

use anyhow::Result;
use oxrdf::{Literal, NamedNode, Quad};
use rhizome_rdf::Store;
use std::io::Write;
use std::path::Path;

#[derive(clap::Args)]
pub struct Args {
    /// Number of transactions.
    #[arg(long, default_value_t = 1000)]
    count: u64,
    /// First transaction number (to continue after a kill).
    #[arg(long, default_value_t = 0)]
    start: u64,
    /// Flush the memtable every N transactions (0: never), so that the
    /// engine's logs are switched and written over: the crash test then
    /// kills writes that go to a recycled log, old records at its tail.
    #[arg(long, default_value_t = 0)]
    flush_every: u64,
    /// Merge the delta into new segments every N transactions (0: only
    /// as the store decides), printing `merging i` before and `merged i`
    /// after.
    #[arg(long, default_value_t = 0)]
    merge_every: u64,
}

pub fn run(data: &Path, args: Args) -> Result<()> {
    let store = Store::open_or_create(data, None)?;
    let stdout = std::io::stdout();
    for i in args.start..args.start + args.count {
        let subject = NamedNode::new(format!("http://probe.example/tx{i}"))?;
        let mut txn = store.transaction()?;
        for (p, value) in [("a", format!("first half of {i}")), ("b", format!("second half of {i}"))] {
            let quad = Quad::new(subject.clone(), NamedNode::new(format!("http://probe.example/{p}"))?, Literal::new_simple_literal(value), oxrdf::GraphName::DefaultGraph);
            let ids = txn.encode_quad(quad.as_ref())?;
            txn.insert(&ids)?;
        }
        txn.commit()?;
        if args.flush_every > 0 && (i + 1) % args.flush_every == 0 {
            // The flush, and the few counter keys of `META` moved down.
            let meta = rhizome_rdf::index::layout::META;
            store.settle(meta, meta)?;
        }
        {
            let mut out = stdout.lock();
            writeln!(out, "committed {i}")?;
            out.flush()?;
        }
        if args.merge_every > 0 && (i + 1) % args.merge_every == 0 {
            let mut out = stdout.lock();
            writeln!(out, "merging {i}")?;
            out.flush()?;
            store.merge()?;
            writeln!(out, "merged {i}")?;
            out.flush()?;
        }
    }
    Ok(())
}

//! `rhizome graph traverse|path|count-by`: the walks of `rhizome-graph` on
//! a store (or, with `--db NAME`, a database of a server's data folder,
//! the server stopped), answered in the JSON of `POST /{db}/_traverse` and
//! `/{db}/_path`. And `bench-graph` (hidden): seed 003's graph workloads
//! timed in process, for `bench/graph`.

use anyhow::{bail, Context, Result};
use oxrdf::{NamedNode, Term};
use rhizome_graph::{Direction, LinkFilter, Limits, PathOptions, Source, WeightOptions};
use rhizome_rdf::{Store, StoreSnapshot, TermId};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// A database of the server data folder `--data` (the server stopped),
    /// instead of the store at `--data`.
    #[arg(long, global = true, value_name = "NAME")]
    db: Option<String>,
    #[command(subcommand)]
    op: Op,
}

#[derive(clap::Args)]
struct Links {
    /// out, in or any.
    #[arg(long, default_value = "out")]
    direction: String,
    /// Follow only links with this predicate (repeatable; default: every link).
    #[arg(long = "predicate", value_name = "IRI")]
    predicates: Vec<String>,
    /// Nodes a walk may visit.
    #[arg(long, default_value_t = 1_000_000)]
    limit: usize,
}

#[derive(clap::Subcommand)]
enum Op {
    /// Every node within --depth links of START (IRI), each at its smallest depth.
    Traverse {
        start: String,
        #[arg(long, default_value_t = 1)]
        depth: u32,
        #[command(flatten)]
        links: Links,
    },
    /// A shortest path from FROM to TO (IRIs); --all for every one; --weight IRI for the cheapest.
    Path {
        from: String,
        to: String,
        #[arg(long)]
        all: bool,
        #[arg(long, default_value_t = 100)]
        max_paths: usize,
        #[arg(long)]
        max_depth: Option<u32>,
        /// The property whose numeric value is the cost of entering a node.
        #[arg(long, value_name = "IRI")]
        weight: Option<String>,
        #[command(flatten)]
        links: Links,
    },
    /// How many subjects have each value of PREDICATE (IRI).
    CountBy { predicate: String },
}

fn open(data: &Path, db: Option<&str>) -> Result<Store> {
    let path = match db {
        Some(name) => rhizome_server::database_dir(data, name),
        None => data.to_owned(),
    };
    if !rhizome_kv::remote::store_exists(&path)? {
        bail!("no store at {}", path.display());
    }
    Ok(Store::open_read_only(&path)?)
}

fn id(snapshot: &StoreSnapshot, iri: &str) -> Result<Option<TermId>> {
    let n = NamedNode::new(iri).with_context(|| format!("{iri:?} is not an absolute IRI"))?;
    Ok(snapshot.lookup(n.as_ref().into())?)
}

fn name(snapshot: &StoreSnapshot, id: TermId) -> Result<Value> {
    Ok(match snapshot.decode(id)? {
        Some(Term::NamedNode(n)) => Value::String(n.into_string()),
        Some(Term::Literal(l)) if l.datatype().as_str().ends_with("#integer") => l.value().parse::<i64>().map(Value::from).unwrap_or_else(|_| Value::String(l.value().to_owned())),
        Some(Term::Literal(l)) => Value::String(l.value().to_owned()),
        Some(t) => Value::String(t.to_string()),
        None => Value::Null,
    })
}

fn filter(snapshot: &StoreSnapshot, links: &Links) -> Result<LinkFilter> {
    let direction = match links.direction.as_str() {
        "out" => Direction::Out,
        "in" => Direction::In,
        "any" => Direction::Any,
        d => bail!("--direction {d:?}: out, in or any"),
    };
    let predicates = if links.predicates.is_empty() {
        None
    } else {
        let mut ids = Vec::new();
        for p in &links.predicates {
            ids.extend(id(snapshot, p)?);
        }
        Some(ids)
    };
    Ok(LinkFilter::new(direction, predicates))
}

pub fn run(data: &Path, args: Args) -> Result<()> {
    let store = open(data, args.db.as_deref())?;
    let snapshot = store.snapshot()?;
    let source = Source::of(&snapshot);
    let out = match &args.op {
        Op::Traverse { start, depth, links } => {
            let found = match id(&snapshot, start)? {
                Some(s) => rhizome_graph::neighbours(source, s, *depth, &filter(&snapshot, links)?, Limits { max_nodes: links.limit, deadline: None })?,
                None => Default::default(),
            };
            let mut nodes = Vec::new();
            for r in &found.nodes {
                nodes.push(json!({"id": name(&snapshot, r.id)?, "depth": r.depth}));
            }
            json!({"nodes": nodes, "truncated": found.truncated})
        }
        Op::Path { from, to, all, max_paths, max_depth, weight, links } => {
            let f = filter(&snapshot, links)?;
            let limits = Limits { max_nodes: links.limit, deadline: None };
            let (Some(a), Some(b)) = (id(&snapshot, from)?, id(&snapshot, to)?) else {
                println!("{}", json!({"path": null}));
                return Ok(());
            };
            let names = |p: &[TermId]| -> Result<Vec<Value>> { p.iter().map(|n| name(&snapshot, *n)).collect() };
            match weight {
                Some(w) => {
                    let options = WeightOptions { weight: id(&snapshot, w)?.unwrap_or(TermId::DEFAULT_GRAPH), default_weight: 1.0 };
                    match rhizome_graph::cheapest_path(source, a, b, &f, options, limits)? {
                        Some(p) => json!({"path": names(&p.path)?, "cost": p.cost}),
                        None => json!({"path": null, "cost": null}),
                    }
                }
                None => {
                    let found = rhizome_graph::shortest_paths(source, a, b, &f, PathOptions { all: *all, max_paths: *max_paths, max_depth: *max_depth }, limits)?;
                    let paths: Vec<Value> = found.paths.iter().map(|p| names(p).map(Value::Array)).collect::<Result<_>>()?;
                    let first = paths.first().cloned().unwrap_or(Value::Null);
                    if *all {
                        json!({"path": first, "paths": paths, "truncated": found.truncated})
                    } else {
                        json!({"path": first})
                    }
                }
            }
        }
        Op::CountBy { predicate } => {
            let counts = match id(&snapshot, predicate)? {
                Some(p) => rhizome_graph::count_by_object(source, p, Limits::default())?,
                None => Vec::new(),
            };
            let rows: Vec<Value> = counts.iter().map(|(v, n)| Ok(json!({"value": name(&snapshot, *v)?, "count": n}))).collect::<Result<_>>()?;
            json!({ "counts": rows })
        }
    };
    println!("{out}");
    Ok(())
}

/// `bench-graph`: seed 003's aggregation, neighbours and shortest paths
/// in process, on a database loaded by `bench/graph`.
#[derive(clap::Args)]
pub struct BenchArgs {
    /// The database (of the server data folder `--data`).
    #[arg(long)]
    db: String,
    /// Profile ids, one a line (the neighbours workload).
    #[arg(long)]
    starts: PathBuf,
    /// Pairs of profile ids, TAB-separated (the shortest-path workload).
    #[arg(long)]
    pairs: PathBuf,
    /// IRI prefix of a profile id.
    #[arg(long)]
    person: String,
    #[arg(long)]
    knows: String,
    #[arg(long)]
    age: String,
    #[arg(long, default_value = "out")]
    direction: String,
    /// Single reads and single writes of documents, each this many, from
    /// 25 threads (0: none).
    #[arg(long, default_value_t = 0)]
    ops: usize,
    /// Profiles to read at random: ids `--person` 0 to N-1.
    #[arg(long, default_value_t = 0)]
    profiles: usize,
    /// The JSON-LD profile each write puts as a new profile: its `_id` and
    /// `@id` are a new IRI under `--person`, so that it is stored as the
    /// loaded profiles are (the document's graph holds its own subject).
    #[arg(long)]
    write_doc: Option<PathBuf>,
}

/// Threads of the in-process reads and writes: the seed's 25 clients.
const CLIENTS: usize = 25;

pub fn bench(data: &Path, args: BenchArgs) -> Result<()> {
    let dir = rhizome_server::database_dir(data, &args.db);
    if !rhizome_kv::remote::store_exists(&dir)? {
        bail!("no store at {}", dir.display());
    }
    // As the server opens it (writable, the JSON-LD projection of its
    // documents): the walks read its store.
    let base = rhizome_server::base_iri(data)?;
    let db = rhizome_docs::Database::open(&dir, rhizome_server::projector_for(&base, &args.db, rhizome_server::context_store(data)?))?;
    let store = db.store();
    let snapshot = store.snapshot()?;
    let source = Source::of(&snapshot);
    let links = Links { direction: args.direction.clone(), predicates: vec![args.knows.clone()], limit: usize::MAX };
    let f = filter(&snapshot, &links)?;
    let node = |i: &str| -> Result<TermId> { id(&snapshot, &format!("{}{}", args.person, i.trim()))?.with_context(|| format!("no profile {i}")) };
    let mut report = serde_json::Map::new();
    // Aggregation: count by AGE from the value counts, by a scan of the
    // predicate's quads (what it costs without them), and by SPARQL GROUP BY.
    let age = id(&snapshot, &args.age)?.context("no AGE predicate")?;
    let t = Instant::now();
    let counts = rhizome_graph::count_by_object(source, age, Limits::default())?;
    report.insert("count_by_s".into(), json!(t.elapsed().as_secs_f64()));
    let t = Instant::now();
    let scanned = rhizome_graph::scan_count_by_object(source, age, Limits::default())?;
    report.insert("count_by_scan_s".into(), json!(t.elapsed().as_secs_f64()));
    if scanned != counts {
        bail!("count by AGE: the value counts ({} groups) differ from a scan ({} groups)", counts.len(), scanned.len());
    }
    report.insert("age_groups".into(), json!(counts.len()));
    let query = format!("SELECT ?age (COUNT(*) AS ?n) WHERE {{ ?p <{}> ?age }} GROUP BY ?age", args.age);
    let stats = rhizome_sparql::Statistics::from_store(&store.planner_stats()?);
    let t = Instant::now();
    let prepared = rhizome_sparql::PreparedQuery::new(&snapshot, stats, &rhizome_sparql::parse_query(&query, None)?)?;
    let rhizome_sparql::QueryResults::Solutions { solutions, .. } = prepared.execute()? else { bail!("not a SELECT") };
    let groups = solutions.count();
    report.insert("count_by_sparql_s".into(), json!(t.elapsed().as_secs_f64()));
    report.insert("sparql_groups".into(), json!(groups));
    // Neighbours and neighbours of neighbours.
    let starts = std::fs::read_to_string(&args.starts)?;
    // A warm-up pass first (the seed warms every database up).
    for measured in [false, true] {
        let t = Instant::now();
        let mut reached = 0;
        for s in starts.lines().filter(|l| !l.trim().is_empty()) {
            reached += rhizome_graph::neighbours(source, node(s)?, 2, &f, Limits::default())?.nodes.len();
        }
        if measured {
            report.insert("two_hop_s".into(), json!(t.elapsed().as_secs_f64()));
            report.insert("two_hop_nodes".into(), json!(reached));
        }
    }
    let pairs = std::fs::read_to_string(&args.pairs)?;
    for measured in [false, true] {
        let t = Instant::now();
        let mut lengths = Vec::new();
        for line in pairs.lines().filter(|l| !l.trim().is_empty()) {
            let (a, b) = line.split_once('\t').context("a pair is two ids separated by a TAB")?;
            let found = rhizome_graph::shortest_paths(source, node(a)?, node(b)?, &f, PathOptions::default(), Limits::default())?;
            lengths.push(found.paths.first().map(|p| p.len() as i64 - 1).unwrap_or(-1));
        }
        if measured {
            report.insert("paths_s".into(), json!(t.elapsed().as_secs_f64()));
            report.insert("path_lengths".into(), json!(lengths));
        }
    }
    drop(snapshot);
    if args.ops > 0 {
        documents_in_process(&db, &args, &mut report)?;
    }
    println!("{}", Value::Object(report));
    Ok(())
}

/// Seed 003's single reads and single writes in process, from [`CLIENTS`]
/// threads: a read is a document's JSON bytes (`GET /{db}/{id}` without HTTP),
/// a write a new document made durable through the server's group commit
/// (`PUT /{db}/{id}` without HTTP).
fn documents_in_process(db: &rhizome_docs::Database, args: &BenchArgs, report: &mut serde_json::Map<String, Value>) -> Result<()> {
    let per_thread = args.ops.div_ceil(CLIENTS);
    let run = |work: &(dyn Fn(usize, usize) -> Result<()> + Sync)| -> Result<f64> {
        let t = Instant::now();
        std::thread::scope(|scope| {
            let threads: Vec<_> = (0..CLIENTS).map(|k| scope.spawn(move || (0..per_thread).try_for_each(|i| work(k, i)))).collect();
            threads.into_iter().try_for_each(|t| t.join().map_err(|_| anyhow::anyhow!("a client thread panicked"))?)
        })?;
        Ok((per_thread * CLIENTS) as f64 / t.elapsed().as_secs_f64())
    };
    if args.profiles > 0 {
        // A different random profile per read (splitmix64 of the read's number).
        let profile = |k: usize, i: usize| -> String {
            let mut x = ((k * per_thread + i) as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
            x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            format!("{}{}", args.person, (x ^ (x >> 31)) % args.profiles as u64)
        };
        let read = |k: usize, i: usize| -> Result<()> {
            let id = profile(k, i);
            // The bytes `GET /{db}/{id}` answers.
            let doc = db.get_doc_json(&id).with_context(|| format!("reading {id}"))?;
            std::hint::black_box(doc);
            Ok(())
        };
        run(&read)?; // a warm-up pass, as over HTTP
        report.insert("reads_per_s".into(), json!(run(&read)?));
        // The same reads' storage part alone (snapshot, document record,
        // graph id, quads; no term named, no JSON): the most the engine's
        // layout allows reads on this machine, whatever the rest costs.
        let storage_only = |k: usize, i: usize| -> Result<()> {
            let id = profile(k, i);
            std::hint::black_box(db.read_storage_only(&id).with_context(|| format!("reading {id}"))?);
            Ok(())
        };
        report.insert("reads_storage_only_per_s".into(), json!(run(&storage_only)?));
    }
    if let Some(path) = &args.write_doc {
        let body: serde_json::Map<String, Value> = serde_json::from_slice(&std::fs::read(path)?).with_context(|| format!("{}: not a JSON object", path.display()))?;
        let group = rhizome_server::GroupCommit::default();
        let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_secs();
        let write = |k: usize, i: usize| -> Result<()> {
            let mut doc = body.clone();
            let iri = format!("{}wi{stamp}-{k}-{i}", args.person);
            doc.insert("@id".into(), Value::String(iri.clone()));
            doc.insert("_id".into(), Value::String(iri));
            let out = group.write(db, vec![doc], true, rhizome_docs::Writer::Admin).map_err(|e| anyhow::anyhow!("write: {e:?}"))?;
            if let Some((id, Err(e))) = out.into_iter().next() {
                bail!("write of {id}: {e}");
            }
            Ok(())
        };
        report.insert("writes_per_s".into(), json!(run(&write)?));
    }
    Ok(())
}

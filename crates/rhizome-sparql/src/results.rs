//! Writing results: SPARQL result formats through sparesults, a text table
//! for terminals, and RDF (N-Triples, N-Quads, Turtle) for graph results.

use crate::error::{Result, SparqlError};
use crate::query::QueryResults;
use oxrdf::{Term, Variable};
use oxrdfio::{RdfFormat, RdfSerializer};
use sparesults::{QueryResultsFormat, QueryResultsSerializer};
use std::io::Write;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResultFormat {
    Json,
    Xml,
    Csv,
    Tsv,
    /// Aligned columns for a terminal.
    Table,
    NTriples,
    NQuads,
    Turtle,
}

impl ResultFormat {
    pub fn from_name(name: &str) -> Option<ResultFormat> {
        Some(match name.to_ascii_lowercase().as_str() {
            "json" | "srj" => ResultFormat::Json,
            "xml" | "srx" => ResultFormat::Xml,
            "csv" => ResultFormat::Csv,
            "tsv" => ResultFormat::Tsv,
            "table" => ResultFormat::Table,
            "nt" | "ntriples" | "n-triples" => ResultFormat::NTriples,
            "nq" | "nquads" | "n-quads" => ResultFormat::NQuads,
            "ttl" | "turtle" => ResultFormat::Turtle,
            _ => return None,
        })
    }

    fn sparesults(self) -> Option<QueryResultsFormat> {
        Some(match self {
            ResultFormat::Json => QueryResultsFormat::Json,
            ResultFormat::Xml => QueryResultsFormat::Xml,
            ResultFormat::Csv => QueryResultsFormat::Csv,
            ResultFormat::Tsv => QueryResultsFormat::Tsv,
            _ => return None,
        })
    }

    fn rdf(self) -> Option<RdfFormat> {
        Some(match self {
            ResultFormat::NTriples => RdfFormat::NTriples,
            ResultFormat::NQuads => RdfFormat::NQuads,
            ResultFormat::Turtle => RdfFormat::Turtle,
            _ => return None,
        })
    }
}

/// Writes results; returns the number of solutions or triples written.
pub fn write_results(results: QueryResults<'_>, format: ResultFormat, mut out: impl Write) -> Result<u64> {
    match results {
        QueryResults::Boolean(b) => {
            match format.sparesults() {
                Some(f) => {
                    QueryResultsSerializer::from_format(f).serialize_boolean_to_writer(&mut out, b)?;
                }
                None => writeln!(out, "{b}")?,
            }
            Ok(1)
        }
        QueryResults::Solutions { variables, solutions } => {
            if format == ResultFormat::Table {
                return write_table(&variables, solutions, out);
            }
            let f = format
                .sparesults()
                .ok_or_else(|| SparqlError::Unsupported(format!("{format:?} for SELECT results (use json, xml, csv, tsv or table)")))?;
            let mut w = QueryResultsSerializer::from_format(f).serialize_solutions_to_writer(&mut out, variables.clone())?;
            let mut n = 0;
            for s in solutions {
                let s = s?;
                w.serialize(variables.iter().zip(&s).filter_map(|(v, t)| t.as_ref().map(|t| (v.as_ref(), t.as_ref()))))?;
                n += 1;
            }
            w.finish()?;
            Ok(n)
        }
        QueryResults::Graph(triples) => {
            let f = format
                .rdf()
                .ok_or_else(|| SparqlError::Unsupported(format!("{format:?} for CONSTRUCT and DESCRIBE results (use nquads, turtle or ntriples)")))?;
            let mut w = RdfSerializer::from_format(f).for_writer(&mut out);
            let mut n = 0;
            for t in triples {
                w.serialize_triple(&t?)?;
                n += 1;
            }
            w.finish()?;
            Ok(n)
        }
    }
}

fn write_table(variables: &[Variable], solutions: Box<dyn Iterator<Item = Result<Vec<Option<Term>>>> + '_>, mut out: impl Write) -> Result<u64> {
    // Columns are sized on the first rows; later wider cells just overflow.
    const SAMPLE: usize = 1000;
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut widths: Vec<usize> = variables.iter().map(|v| v.as_str().len() + 1).collect();
    let mut rest = solutions;
    for s in rest.by_ref().take(SAMPLE) {
        let cells: Vec<String> = s?.iter().map(|t| t.as_ref().map_or(String::new(), ToString::to_string)).collect();
        for (w, c) in widths.iter_mut().zip(&cells) {
            *w = (*w).max(c.chars().count());
        }
        rows.push(cells);
    }
    let line = |cells: &[String], out: &mut dyn Write| -> std::io::Result<()> {
        let padded: Vec<String> = cells.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        writeln!(out, "| {} |", padded.join(" | "))
    };
    let header: Vec<String> = variables.iter().map(|v| format!("?{}", v.as_str())).collect();
    line(&header, &mut out)?;
    writeln!(out, "|{}|", widths.iter().map(|w| "-".repeat(w + 2)).collect::<Vec<_>>().join("|"))?;
    let mut n = 0;
    for r in &rows {
        line(r, &mut out)?;
        n += 1;
    }
    for s in rest {
        let cells: Vec<String> = s?.iter().map(|t| t.as_ref().map_or(String::new(), ToString::to_string)).collect();
        line(&cells, &mut out)?;
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxrdf::{Literal, NamedNode, Triple};

    fn solutions() -> QueryResults<'static> {
        let rows: Vec<Result<Vec<Option<Term>>>> = vec![Ok(vec![Some(NamedNode::new_unchecked("http://ex/a").into()), None]), Ok(vec![None, Some(Literal::from(7).into())])];
        QueryResults::Solutions { variables: vec![Variable::new_unchecked("s"), Variable::new_unchecked("n")], solutions: Box::new(rows.into_iter()) }
    }

    #[test]
    fn solutions_are_written_as_sparql_json_with_unbound_values_left_out() {
        let mut out = Vec::new();
        assert_eq!(write_results(solutions(), ResultFormat::Json, &mut out).unwrap(), 2);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains(r#""vars":["s","n"]"#), "{text}");
        assert!(text.contains(r#"{"s":{"type":"uri","value":"http://ex/a"}}"#), "{text}");
    }

    #[test]
    fn a_table_has_a_header_and_one_line_per_solution() {
        let mut out = Vec::new();
        write_results(solutions(), ResultFormat::Table, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.lines().count(), 4, "{text}");
        assert!(text.lines().next().unwrap().contains("?s"), "{text}");
    }

    #[test]
    fn graph_results_refuse_a_solutions_format() {
        let t = Triple::new(NamedNode::new_unchecked("http://ex/a"), NamedNode::new_unchecked("http://ex/p"), Literal::from(1));
        let graph = QueryResults::Graph(Box::new(std::iter::once(Ok(t))));
        assert!(matches!(write_results(graph, ResultFormat::Json, Vec::new()), Err(SparqlError::Unsupported(_))));
    }
}

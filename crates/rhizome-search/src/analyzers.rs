//! The analyzers CouchDB's Nouveau names (`standard`, `keyword`, `simple`,
//! `whitespace` and the language analyzers), as tantivy text analyzers.
//!
//! `standard` splits on what is not a letter or digit and lowercases, as
//! Lucene's StandardAnalyzer does for alphabetic scripts (it keeps no stop
//! words since Lucene 7); a language analyzer adds that language's stop
//! words and Snowball stemmer, as Lucene's `EnglishAnalyzer` and its kin do.
//! Languages tantivy has no stemmer for are refused by name rather than
//! analyzed as something else.

use crate::{Result, SearchError};
use tantivy::tokenizer::{Language, LowerCaser, RawTokenizer, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer, TokenizerManager, WhitespaceTokenizer};

/// Tokens past this many bytes are dropped (Lucene's limit is 255 chars).
const MAX_TOKEN_BYTES: usize = 255;

fn language(name: &str) -> Option<Language> {
    Some(match name {
        "arabic" => Language::Arabic,
        "danish" => Language::Danish,
        "dutch" => Language::Dutch,
        "english" => Language::English,
        "finnish" => Language::Finnish,
        "french" => Language::French,
        "german" => Language::German,
        "greek" => Language::Greek,
        "hungarian" => Language::Hungarian,
        "italian" => Language::Italian,
        "norwegian" => Language::Norwegian,
        "portuguese" => Language::Portuguese,
        "romanian" => Language::Romanian,
        "russian" => Language::Russian,
        "spanish" => Language::Spanish,
        "swedish" => Language::Swedish,
        "turkish" => Language::Turkish,
        _ => return None,
    })
}

/// The analyzer called `name`, or `None` when there is none by that name.
pub fn analyzer(name: &str) -> Option<TextAnalyzer> {
    Some(match name {
        "standard" | "simple" => TextAnalyzer::builder(SimpleTokenizer::default()).filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES)).filter(LowerCaser).build(),
        "keyword" => TextAnalyzer::builder(RawTokenizer::default()).build(),
        "whitespace" => TextAnalyzer::builder(WhitespaceTokenizer::default()).filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES)).build(),
        other => {
            let lang = language(other)?;
            let base = TextAnalyzer::builder(SimpleTokenizer::default()).filter(RemoveLongFilter::limit(MAX_TOKEN_BYTES)).filter(LowerCaser);
            match StopWordFilter::new(lang) {
                Some(stop) => base.filter(stop).filter(Stemmer::new(lang)).build(),
                None => base.filter(Stemmer::new(lang)).build(),
            }
        }
    })
}

/// Refuses an analyzer name Rhizome does not have (400, as CouchDB).
pub fn check(name: &str) -> Result<()> {
    match analyzer(name) {
        Some(_) => Ok(()),
        None => Err(SearchError::BadRequest(format!("{name} is not a valid analyzer"))),
    }
}

/// The tokenizer name an analyzer is registered under in an index.
pub fn tokenizer_name(analyzer: &str) -> String {
    format!("nouveau_{analyzer}")
}

/// Registers `analyzers` (already checked) with an index's tokenizers.
pub fn register(manager: &TokenizerManager, analyzers: &[&str]) {
    for a in analyzers {
        if let Some(an) = analyzer(a) {
            manager.register(&tokenizer_name(a), an);
        }
    }
}

/// The tokens of `text` (for tests and `_nouveau_analyze`).
pub fn tokens(analyzer_name: &str, text: &str) -> Result<Vec<String>> {
    let mut an = analyzer(analyzer_name).ok_or_else(|| SearchError::BadRequest(format!("{analyzer_name} is not a valid analyzer")))?;
    let mut out = Vec::new();
    let mut stream = an.token_stream(text);
    stream.process(&mut |t| out.push(t.text.clone()));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn analyzers_split_and_normalize_as_lucenes() {
        assert_eq!(tokens("standard", "The Quick-Brown fox").unwrap(), ["the", "quick", "brown", "fox"]);
        assert_eq!(tokens("keyword", "The Quick").unwrap(), ["The Quick"]);
        assert_eq!(tokens("whitespace", "The Quick-Brown").unwrap(), ["The", "Quick-Brown"]);
        assert_eq!(tokens("english", "the running foxes").unwrap(), ["run", "fox"]);
        assert!(tokens("klingon", "x").is_err());
    }
}

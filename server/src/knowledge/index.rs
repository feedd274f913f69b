//! Full-text ranking (Okapi BM25) over one workspace's chunks, held in
//! memory and built from the database, which stays the truth: an index is
//! labelled with the workspace's `knowledge_revision` and rebuilt when the
//! revision moved (a sync changed chunks), when it is missing (a restart,
//! another replica), and never written anywhere. Two replicas holding the
//! same chunks build the same index and rank alike: documents are taken
//! in chunk-id order and ties go to the smaller id.
//!
//! Written here rather than with tantivy: tantivy keeps its index in files
//! with one writer per directory, which every replica would have to rebuild
//! from the database anyway; a workspace's chunks are capped (tens of
//! thousands), so an in-memory inverted index answers in well under a
//! millisecond per thousand chunks, costs one module instead of a large
//! dependency tree on a 2-core build, and sits behind [`Retriever`] so a
//! search engine (OpenSearch, Qdrant) replaces it past one database
//! (docs/knowledge.md).

use std::collections::HashMap;

use futures::future::BoxFuture;

use super::analyze;

/// BM25's term-frequency saturation and length normalization (the usual values).
const K1: f32 = 1.2;
const B: f32 = 0.75;
/// A heading's words count this many times over a body word's.
const HEADING_WEIGHT: u32 = 2;

/// A chunk ranked for a query: its id and score (higher is better).
#[derive(Clone, Debug, PartialEq)]
pub struct Ranked {
    pub chunk_id: String,
    pub score: f32,
}

/// What ranks a workspace's chunks for a query. The embedded full-text
/// index is one; a vector index or an external search engine is another.
pub trait Retriever: Send + Sync {
    /// At most `limit` chunks of `workspace_id` for `query`, best first.
    fn search<'a>(
        &'a self,
        workspace_id: &'a str,
        query: &'a str,
        limit: usize,
    ) -> BoxFuture<'a, anyhow::Result<Vec<Ranked>>>;
}

/// A chunk as the index reads it.
pub struct ChunkText<'a> {
    pub id: &'a str,
    pub title: &'a str,
    pub section: &'a str,
    pub text: &'a str,
    pub language: &'a str,
    /// Its unit vector, when there is an embeddings model.
    pub vector: Option<Vec<f32>>,
}

/// The inverted index of one workspace's chunks at one revision.
pub struct Index {
    pub revision: i64,
    ids: Vec<String>,
    lengths: Vec<u32>,
    average_length: f32,
    /// Each term's postings: (document, term frequency), documents ascending.
    postings: HashMap<String, Vec<(u32, u32)>>,
    /// The languages its chunks are in: a query is read in each.
    languages: Vec<&'static str>,
    /// When it was last searched (a count of searches across indexes).
    used: std::sync::atomic::AtomicU64,
    /// Each document's unit vector, where it has one.
    vectors: Vec<Option<Vec<f32>>>,
}

/// Orders the indexes' last uses.
static USES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Index {
    /// Indexes `chunks` (in chunk-id order, for the same ranking on every replica).
    pub fn build<'a>(revision: i64, chunks: impl IntoIterator<Item = ChunkText<'a>>) -> Self {
        let mut ids = Vec::new();
        let mut lengths = Vec::new();
        let mut postings: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
        let mut languages: Vec<&'static str> = Vec::new();
        let mut vectors = Vec::new();
        for chunk in chunks {
            let doc = u32::try_from(ids.len()).expect("fewer than 4 billion chunks");
            let lang = analyze::language(Some(chunk.language));
            if !languages.contains(&lang) {
                languages.push(lang);
            }
            let mut counts: HashMap<String, u32> = HashMap::new();
            let heading = format!("{} {}", chunk.title, chunk.section);
            for term in analyze::terms(&heading, lang) {
                *counts.entry(term).or_default() += HEADING_WEIGHT;
            }
            for term in analyze::terms(chunk.text, lang) {
                *counts.entry(term).or_default() += 1;
            }
            lengths.push(counts.values().sum());
            for (term, tf) in counts {
                postings.entry(term).or_default().push((doc, tf));
            }
            ids.push(chunk.id.to_owned());
            vectors.push(chunk.vector);
        }
        let average_length = if lengths.is_empty() {
            1.0
        } else {
            lengths.iter().map(|l| *l as f32).sum::<f32>() / lengths.len() as f32
        };
        languages.sort_unstable();
        let used = std::sync::atomic::AtomicU64::new(USES.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        Self { revision, ids, lengths, average_length: average_length.max(1.0), postings, languages, used, vectors }
    }

    /// Whether any chunk has a vector.
    pub fn has_vectors(&self) -> bool {
        self.vectors.iter().any(Option::is_some)
    }

    /// The `limit` chunks nearest `query` (a unit vector) by cosine, best
    /// first (ties: the smaller id); chunks of another width are left out.
    pub fn nearest(&self, query: &[f32], limit: usize) -> Vec<Ranked> {
        let mut scored: Vec<(usize, f32)> = self
            .vectors
            .iter()
            .enumerate()
            .filter_map(|(doc, v)| {
                let v = v.as_ref().filter(|v| v.len() == query.len())?;
                Some((doc, v.iter().zip(query).map(|(a, b)| a * b).sum::<f32>()))
            })
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| self.ids[a.0].cmp(&self.ids[b.0])));
        scored.into_iter().take(limit).map(|(doc, score)| Ranked { chunk_id: self.ids[doc].clone(), score }).collect()
    }

    /// Marks it searched now.
    pub fn touch(&self) {
        let now = USES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.used.store(now, std::sync::atomic::Ordering::Relaxed);
    }

    /// When it was last searched, in the order of uses.
    pub fn used(&self) -> u64 {
        self.used.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many chunks it holds.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The query's terms in every language of the index (a visitor may ask
    /// in another language than the pages' own; a stem of one language
    /// that matches nothing in another costs nothing).
    pub fn query_terms(&self, query: &str) -> Vec<String> {
        let mut terms: Vec<String> = Vec::new();
        let languages: &[&str] = if self.languages.is_empty() { &["en"] } else { &self.languages };
        for lang in languages {
            for term in analyze::terms(query, lang) {
                if !terms.contains(&term) {
                    terms.push(term);
                }
            }
        }
        terms
    }

    /// The best `limit` chunks for `query` by BM25, best first (ties: the smaller id).
    pub fn search(&self, query: &str, limit: usize) -> Vec<Ranked> {
        let n = self.ids.len() as f32;
        let mut scores = vec![0f32; self.ids.len()];
        let mut touched: Vec<u32> = Vec::new();
        for term in self.query_terms(query) {
            let Some(postings) = self.postings.get(&term) else { continue };
            let df = postings.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(doc, tf) in postings {
                let tf = tf as f32;
                let length = self.lengths[doc as usize] as f32;
                let norm = K1 * (1.0 - B + B * length / self.average_length);
                let score = &mut scores[doc as usize];
                if *score == 0.0 {
                    touched.push(doc);
                }
                *score += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        touched.sort_unstable_by(|a, b| {
            scores[*b as usize]
                .total_cmp(&scores[*a as usize])
                .then_with(|| self.ids[*a as usize].cmp(&self.ids[*b as usize]))
        });
        touched
            .into_iter()
            .take(limit)
            .map(|doc| Ranked { chunk_id: self.ids[doc as usize].clone(), score: scores[doc as usize] })
            .collect()
    }
}

/// Reciprocal rank fusion (Cormack et al. 2009): each list gives a chunk
/// 1 / (k + rank); no score of one ranking is compared with another's.
pub fn fuse(rankings: &[Vec<Ranked>], limit: usize) -> Vec<Ranked> {
    const K: f32 = 60.0;
    let mut fused: HashMap<&str, f32> = HashMap::new();
    for ranking in rankings {
        for (rank, ranked) in ranking.iter().enumerate() {
            *fused.entry(&ranked.chunk_id).or_default() += 1.0 / (K + rank as f32 + 1.0);
        }
    }
    let mut out: Vec<Ranked> = fused.into_iter().map(|(id, score)| Ranked { chunk_id: id.to_owned(), score }).collect();
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.chunk_id.cmp(&b.chunk_id)));
    out.truncate(limit);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk<'a>(id: &'a str, section: &'a str, text: &'a str) -> ChunkText<'a> {
        ChunkText { id, title: "Help", section, text, language: "en", vector: None }
    }

    fn index() -> Index {
        Index::build(
            1,
            [
                chunk("c1", "Opening hours", "We are open from noon to ten every day but Monday."),
                chunk(
                    "c2",
                    "Delivery area",
                    "We deliver within five kilometres of the restaurant, to Brookside and Old Town.",
                ),
                chunk("c3", "Refunds", "A refund is paid back to your card within five days."),
                chunk("c4", "Allergens", "Every dish lists its allergens; ask us about nuts and gluten."),
            ],
        )
    }

    #[test]
    fn the_passage_about_the_question_ranks_first() {
        let index = index();
        assert_eq!(index.search("Do you deliver to Brookside?", 3)[0].chunk_id, "c2");
        assert_eq!(index.search("when are you open on mondays", 3)[0].chunk_id, "c1");
        assert_eq!(index.search("how do I get my money refunded", 3)[0].chunk_id, "c3");
        assert_eq!(index.search("gluten", 3)[0].chunk_id, "c4");
    }

    #[test]
    fn nothing_matching_finds_nothing() {
        assert!(index().search("parking spaces", 5).is_empty());
        assert!(index().search("", 5).is_empty());
        assert!(Index::build(0, []).search("delivery", 5).is_empty());
    }

    #[test]
    fn ties_go_to_the_smaller_id_so_replicas_agree() {
        let index = Index::build(1, [chunk("b", "", "same words here"), chunk("a", "", "same words here")]);
        let ranked = index.search("same words", 2);
        assert_eq!(ranked.iter().map(|r| r.chunk_id.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    fn the_nearest_vectors_rank_by_cosine() {
        let with = |id: &'static str, v: Vec<f32>| ChunkText { vector: Some(v), ..chunk(id, "", "x") };
        let index =
            Index::build(1, [with("a", vec![1.0, 0.0]), with("b", vec![0.6, 0.8]), with("c", vec![0.0, 1.0, 0.0])]);
        let ranked = index.nearest(&[0.0, 1.0], 5);
        assert_eq!(
            ranked.iter().map(|r| r.chunk_id.as_str()).collect::<Vec<_>>(),
            ["b", "a"],
            "a vector of another width is left out"
        );
        assert!(index.has_vectors() && !Index::build(0, [chunk("x", "", "y")]).has_vectors());
    }

    #[test]
    fn fusion_rewards_what_both_rankings_find() {
        let r = |ids: &[&str]| ids.iter().map(|id| Ranked { chunk_id: (*id).into(), score: 1.0 }).collect();
        let fused = fuse(&[r(&["a", "b", "c"]), r(&["b", "d", "e"])], 3);
        assert_eq!(fused[0].chunk_id, "b");
        assert_eq!(fused.len(), 3);
    }
}
